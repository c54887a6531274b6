// OutLanes: the part of a worker's OutPort (out_port.hpp) that does not depend on the item type:
// the consumers' doorbells and the wake-ups owed them, the round-robin finger, waiting for room in
// a lane or in the ordering window, and ending the stream. Compiled once, in framework/src.
//
// Contract: OutPort's. Used by its worker only; `pushed(lane)` after every push into `lane`. A port
// of a fused stage (fused_step.hpp) has no lanes, and counts into its own stage's counters, which
// may not be its worker's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "conveyor/framework/detail/window_gate.hpp"
#include "conveyor/framework/detail/worker_context.hpp"
#include "conveyor/sync/deferred_wakes.hpp"
#include "conveyor/sync/detail/ring_indices.hpp"
#include "conveyor/sync/doorbell.hpp"

namespace conveyor::detail {

class OutLanes {
 public:
  OutLanes(const OutLanes&) = delete;
  OutLanes& operator=(const OutLanes&) = delete;

  [[nodiscard]] bool stop_requested() const noexcept { return worker_.stop_requested(); }
  [[nodiscard]] WorkerContext& worker() noexcept { return worker_; }
  // The counters of the stage this port emits for.
  [[nodiscard]] WorkerCounters& counters() noexcept { return counters_; }

  // --- For the dispatch policies (dispatch_policy.hpp) ---

  [[nodiscard]] std::size_t lane_count() const noexcept { return rings_.size(); }

  // Wakes the lane's consumer, or defers the wake (sync/deferred_wakes.hpp).
  [[gnu::always_inline]] void pushed(std::size_t lane) {
    wakes_[lane].after_push(*consumers_[lane]);
  }

  // Round-robin: the lane to try first, and a push into `lane` that moves the finger past it.
  [[nodiscard]] std::size_t finger() const noexcept { return finger_; }
  [[gnu::always_inline]] void pushed_past_finger(std::size_t lane) {
    finger_ = lane + 1 == rings_.size() ? 0 : lane + 1;
    pushed(lane);
  }

  // A tee: the turn of the parcel at hand, which picks the lane within each branch.
  [[nodiscard]] std::size_t take_turn() noexcept { return turn_++; }

  // Waits until one of the lanes [first, first + count) has a free slot; false on cancellation.
  bool wait_for_room(std::size_t first, std::size_t count) {
    return worker_.wait(
        WaitReason::space,
        [this, first, count] {
          for (std::size_t lane = first; lane < first + count; ++lane) {
            if (rings_[lane]->free_slots() > 0) return true;
          }
          return false;
        },
        [] {}, counters_.blocked_push_ticks);
  }
  // Pushes with `push` into the first lane of [first, first + count) with a free slot, trying
  // them from `start` on, waiting while every one is full, and wakes that lane's consumer; false
  // on cancellation. (`Push`: a LanePush, or anything called as push(lane, copy).)
  template <class Push>
  bool push_waiting(std::size_t first, std::size_t count, std::size_t start, bool copy,
                    Push&& push) {
    for (;;) {
      std::size_t lane = start;
      for (std::size_t step = 0; step < count; ++step) {
        if (push(lane, copy)) {
          pushed(lane);
          return true;
        }
        if (++lane == first + count) lane = first;
      }
      if (!wait_for_room(first, count)) return false;
    }
  }
  // The same into `lane` alone.
  template <class Push>
  bool push_waiting(std::size_t lane, bool copy, Push&& push) {
    return push_waiting(lane, 1, lane, copy, push);
  }

  // Dispatch::least_loaded: the lane with a free slot that holds the fewest parcels (lane_count()
  // if every lane is full), and the wait for one.
  [[nodiscard]] std::size_t least_loaded() const;
  bool wait_for_least_loaded();

 protected:
  OutLanes(WorkerContext& worker, WorkerCounters& counters,
           std::vector<sync::detail::RingIndices*> rings, std::vector<Doorbell*> consumers,
           WindowGate* gate);
  // A port without lanes: it hands items to a fused step.
  OutLanes(WorkerContext& worker, WorkerCounters& counters) noexcept;
  ~OutLanes();

  // Sequencers: the next number once the ordering window has room for it (flushing what the port
  // collected with `flush` before it sleeps); nullopt if cancelled first.
  [[nodiscard]] bool window_open(std::uint64_t seq) {
    if (gate_ == nullptr || seq < released_ + gate_->window()) return true;
    released_ = gate_->released();
    return seq < released_ + gate_->window();
  }
  template <class Flush>
  bool wait_for_window(std::uint64_t seq, Flush&& flush) {
    // The in-order stage may be waiting for what the batches hold.
    if (!flush()) return false;
    gate_->request_wake_at(seq);
    return worker_.wait(
        WaitReason::window,
        [this, seq] {
          released_ = gate_->released();
          return seq < released_ + gate_->window();
        },
        [] {}, counters_.blocked_push_ticks);
  }
  [[nodiscard]] WindowGate* gate() const noexcept { return gate_; }
  [[nodiscard]] std::uint64_t released() const noexcept { return released_; }

  // End of stream: the done sentinel on every lane, and every consumer rung.
  void close_lanes();

 private:
  // Before the worker sleeps (sync::Waiter's rechecks): what pushed() may have missed.
  void recheck() const;

  WorkerContext& worker_;
  WorkerCounters& counters_;
  const std::vector<sync::detail::RingIndices*> rings_;
  const std::vector<Doorbell*> consumers_;
  WindowGate* const gate_;
  std::vector<sync::WakeDeferral> wakes_;
  std::size_t finger_ = 0;
  std::size_t turn_ = 0;
  std::uint64_t released_ = 0;
};

}  // namespace conveyor::detail
