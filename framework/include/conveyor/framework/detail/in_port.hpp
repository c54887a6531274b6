// InPort<T>: the consuming side of one worker: one lane from each producer worker of the stage
// before it, and the worker's own doorbell to sleep on while every lane is empty.
//
// The port takes parcels from one lane at a time, a burst at most, and then moves on, so that a
// busy producer cannot starve the others. After each pop it rings the lane's producer if that
// producer sleeps for room and the lane is at least half free (hysteresis: a producer woken for a
// single slot would fill it and sleep again, one wake-up per item).
//
// End of stream (fan-in): each producer closes its lane after its last item, which is the done
// sentinel; the port reports the end once every lane is closed and drained.
//
// Contract: used by its worker only. What does not depend on T is InLanes (in_lanes.hpp).
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/function_ref.hpp"
#include "conveyor/framework/detail/in_lanes.hpp"
#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/framework/detail/worker_context.hpp"
#include "conveyor/sync/doorbell.hpp"
#include "conveyor/sync/spsc_ring.hpp"

namespace conveyor::detail {

template <class T>
class InPort : public InLanes {
 public:
  using item_type = T;

  struct Lanes {
    std::vector<sync::SpscRing<Parcel<T>>*> lanes;   // one per producer worker
    std::vector<sync::SpscRing<Batch<T>>*> returns;  // emptied batches going back, same order
    std::vector<Doorbell*> producers;                // their doorbells, same order
  };

  InPort(WorkerContext& worker, Lanes lanes)
      : InLanes(worker, {lanes.lanes.begin(), lanes.lanes.end()}, std::move(lanes.producers)),
        lanes_(std::move(lanes.lanes)),
        returns_(std::move(lanes.returns)) {}

  // The next parcel without waiting, or nullopt if every open lane is empty.
  std::optional<Parcel<T>> try_pop() {
    // One object returned on every path, so that the parcel moves only once, from its slot.
    std::optional<Parcel<T>> parcel;
    const std::size_t count = lane_count();
    const std::size_t first = first_lane();
    for (std::size_t step = 0; step < count; ++step) {
      std::size_t lane = first + step;
      if (lane >= count) lane -= count;
      if (finished(lane)) continue;
      if (lanes_[lane]->try_pop_into(parcel)) {
        popped(lane);
        return parcel;
      }
    }
    return parcel;
  }

  // The next parcel, waiting while every open lane is empty; nullopt at the end of the stream or
  // on cancellation. `before_sleep` runs before the worker sleeps (to flush its own batches).
  std::optional<Parcel<T>> pop(FunctionRef<void()> before_sleep) {
    for (;;) {
      if (auto parcel = try_pop()) return parcel;
      if (ended() || worker().cancelled()) return std::nullopt;
      if (!wait_for_items(before_sleep)) return std::nullopt;
    }
  }

  // The lane of the last parcel popped.
  using InLanes::last_lane;

  // Hands an emptied batch back for reuse, to the producer of the last parcel popped, or of lane
  // `lane`; if that producer's ring is full, to the next producer with room (any producer can
  // fill any batch). If every ring is full, the storage just goes.
  void recycle(Batch<T>&& batch) { recycle(std::move(batch), last_lane()); }
  void recycle(Batch<T>&& batch, std::size_t lane) {
    batch.clear();
    const std::size_t count = returns_.size();
    for (std::size_t step = 0; step < count; ++step) {
      std::size_t at = lane + step;
      if (at >= count) at -= count;
      if (returns_[at]->try_push(batch)) return;
    }
  }

 private:
  const std::vector<sync::SpscRing<Parcel<T>>*> lanes_;
  const std::vector<sync::SpscRing<Batch<T>>*> returns_;
};

}  // namespace conveyor::detail
