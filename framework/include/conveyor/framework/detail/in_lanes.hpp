// InLanes: the part of a worker's InPort (in_port.hpp) that does not depend on the item type: which
// lanes are still open, which lane it reads and for how long, waking a producer after a pop, and
// sleeping until a lane has something. Compiled once, in framework/src.
//
// Contract: InPort's. Used by its worker only; `popped(lane)` after every pop from `lane`.
#pragma once

#include <cstddef>
#include <vector>

#include "conveyor/framework/detail/function_ref.hpp"
#include "conveyor/framework/detail/worker_context.hpp"
#include "conveyor/sync/detail/ring_indices.hpp"
#include "conveyor/sync/doorbell.hpp"

namespace conveyor::detail {

class InLanes {
 public:
  static constexpr std::size_t burst = 32;

  InLanes(const InLanes&) = delete;
  InLanes& operator=(const InLanes&) = delete;

  // True once every lane is closed and drained.
  [[nodiscard]] bool ended();
  // Whether a pop would find a parcel or an end of a lane (for a wait on more than the lanes).
  [[nodiscard]] bool has_input() { return anything_ready(); }

 protected:
  InLanes(WorkerContext& worker, std::vector<sync::detail::RingIndices*> rings,
          std::vector<Doorbell*> producers);
  ~InLanes();

  // Waits until some open lane has a parcel or has ended; false on cancellation.
  bool wait_for_items(FunctionRef<void()> before_sleep) {
    return worker_.wait(
        WaitReason::items, [this] { return anything_ready(); }, before_sleep,
        worker_.counters().blocked_pop_ticks);
  }

  // The lane to read first: the current one, or the next once it had its burst.
  [[gnu::always_inline]] std::size_t first_lane() noexcept {
    if (taken_in_burst_ >= burst) {
      taken_in_burst_ = 0;
      current_ = current_ + 1 == rings_.size() ? 0 : current_ + 1;
    }
    return current_;
  }

  // A parcel was popped from `lane`: counts it in the burst, and wakes the lane's producer if it
  // waits for room and the lane is at least half free.
  [[gnu::always_inline]] void popped(std::size_t lane) {
    if (lane != current_) {
      current_ = lane;
      taken_in_burst_ = 0;
    }
    ++taken_in_burst_;
    last_lane_ = lane;
    producers_[lane]->ring_after_hand_over(WaitReason::space, [&] { return half_free(lane); });
  }

  [[nodiscard]] std::size_t lane_count() const noexcept { return rings_.size(); }
  [[nodiscard]] bool finished(std::size_t lane) const noexcept { return finished_[lane]; }
  [[nodiscard]] std::size_t last_lane() const noexcept { return last_lane_; }
  [[nodiscard]] WorkerContext& worker() noexcept { return worker_; }

 private:
  bool anything_ready() {
    for (std::size_t lane = 0; lane < rings_.size(); ++lane) {
      if (finished_[lane]) continue;
      if (rings_[lane]->has_element() || rings_[lane]->finished()) return true;
    }
    return false;
  }
  // Before the worker sleeps (sync::Waiter's rechecks): what popped() may have missed.
  void recheck() const;
  [[nodiscard]] bool half_free(std::size_t lane) const {
    return rings_[lane]->free_after_pop() >= thresholds_[lane];
  }

  WorkerContext& worker_;
  const std::vector<sync::detail::RingIndices*> rings_;
  const std::vector<Doorbell*> producers_;
  std::vector<std::size_t> thresholds_;
  std::vector<bool> finished_;
  std::size_t open_lanes_;
  std::size_t current_ = 0;
  std::size_t taken_in_burst_ = 0;
  std::size_t last_lane_ = 0;
};

}  // namespace conveyor::detail
