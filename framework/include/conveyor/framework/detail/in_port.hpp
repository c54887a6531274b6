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
// Contract: used by its worker only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/framework/detail/worker_context.hpp"
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/doorbell.hpp"
#include "conveyor/sync/spsc_ring.hpp"

namespace conveyor::detail {

template <class T>
class InPort {
 public:
  struct Lanes {
    std::vector<sync::SpscRing<Parcel<T>>*> lanes;   // one per producer worker
    std::vector<sync::SpscRing<Batch<T>>*> returns;  // emptied batches going back, same order
    std::vector<Doorbell*> producers;                // their doorbells, same order
  };

  static constexpr std::size_t burst = 32;

  InPort(WorkerContext& worker, Lanes lanes)
      : worker_(worker),
        lanes_(std::move(lanes.lanes)),
        returns_(std::move(lanes.returns)),
        producers_(std::move(lanes.producers)),
        finished_(lanes_.size(), false),
        open_lanes_(lanes_.size()) {
    CONVEYOR_CONTRACT(!lanes_.empty() && lanes_.size() == producers_.size(),
                      "InPort: one lane and one doorbell per producer worker");
    thresholds_.reserve(lanes_.size());
    for (const auto* lane : lanes_) {
      thresholds_.push_back(std::max<std::size_t>(1, lane->capacity() / 2));
    }
    worker_.add_recheck(
        {this, [](const void* self) { static_cast<const InPort*>(self)->recheck(); }});
  }

  ~InPort() { worker_.remove_recheck(this); }

  InPort(const InPort&) = delete;
  InPort& operator=(const InPort&) = delete;

  // The next parcel without waiting, or nullopt if every open lane is empty.
  std::optional<Parcel<T>> try_pop() {
    // One object returned on every path, so that the parcel moves only once, from its slot.
    std::optional<Parcel<T>> parcel;
    const std::size_t count = lanes_.size();
    if (taken_in_burst_ >= burst) {
      taken_in_burst_ = 0;
      current_ = current_ + 1 == count ? 0 : current_ + 1;
    }
    for (std::size_t step = 0; step < count; ++step) {
      std::size_t lane = current_ + step;
      if (lane >= count) lane -= count;
      if (finished_[lane]) continue;
      if (lanes_[lane]->try_pop_into(parcel)) {
        if (lane != current_) {
          current_ = lane;
          taken_in_burst_ = 0;
        }
        ++taken_in_burst_;
        last_lane_ = lane;
        popped(lane);
        return parcel;
      }
    }
    return parcel;
  }

  // The next parcel, waiting while every open lane is empty; nullopt at the end of the stream or
  // on cancellation. `before_sleep` runs before the worker sleeps (to flush its own batches).
  template <class BeforeSleep>
  std::optional<Parcel<T>> pop(BeforeSleep&& before_sleep) {
    for (;;) {
      if (auto parcel = try_pop()) return parcel;
      if (ended() || worker_.cancelled()) return std::nullopt;
      if (!worker_.wait(
              WaitReason::items, [&] { return anything_ready(); }, before_sleep,
              worker_.counters().blocked_pop_ticks)) {
        return std::nullopt;
      }
    }
  }

  // Hands an emptied batch back to the producer of the last parcel popped, for reuse.
  void recycle(Batch<T>&& batch) {
    batch.clear();
    (void)returns_[last_lane_]->try_push(batch);  // if the ring is full, the storage just goes
  }

  // True once every lane is closed and drained.
  [[nodiscard]] bool ended() {
    for (std::size_t lane = 0; lane < lanes_.size(); ++lane) {
      if (!finished_[lane] && lanes_[lane]->finished()) {
        finished_[lane] = true;
        --open_lanes_;
      }
    }
    return open_lanes_ == 0;
  }

 private:
  bool anything_ready() {
    for (std::size_t lane = 0; lane < lanes_.size(); ++lane) {
      if (finished_[lane]) continue;
      if (lanes_[lane]->has_element() || lanes_[lane]->finished()) return true;
    }
    return false;
  }

  // Wakes the lane's producer if it waits for room and the lane is at least half free.
  void popped(std::size_t lane) {
    producers_[lane]->ring_after_hand_over(WaitReason::space, [&] { return half_free(lane); });
  }

  // Before the worker sleeps (sync::Waiter's rechecks): what popped() may have missed.
  void recheck() const {
    for (std::size_t lane = 0; lane < lanes_.size(); ++lane)
      producers_[lane]->ring_on_recheck(WaitReason::space, [&] { return half_free(lane); });
  }

  [[nodiscard]] bool half_free(std::size_t lane) const {
    return lanes_[lane]->free_after_pop() >= thresholds_[lane];
  }

  WorkerContext& worker_;
  const std::vector<sync::SpscRing<Parcel<T>>*> lanes_;
  const std::vector<sync::SpscRing<Batch<T>>*> returns_;
  const std::vector<Doorbell*> producers_;
  std::vector<std::size_t> thresholds_;
  std::vector<bool> finished_;
  std::size_t open_lanes_;
  std::size_t current_ = 0;
  std::size_t taken_in_burst_ = 0;
  std::size_t last_lane_ = 0;
};

}  // namespace conveyor::detail
