// WorkerContext: what every wait of one worker shares: its doorbell, its spin estimates, the
// pipeline's control, and its counters.
//
// Contract: owned by one worker and used only by it (its InPort, OutPort and loop).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "conveyor/framework/detail/control.hpp"
#include "conveyor/framework/detail/doorbell.hpp"
#include "conveyor/framework/detail/ticks.hpp"
#include "conveyor/framework/detail/worker_counters.hpp"
#include "conveyor/sync/detail/adaptive_spin.hpp"

namespace conveyor::detail {

class WorkerContext {
 public:
  WorkerContext(Doorbell& bell, Control& control, WorkerCounters& counters,
                std::size_t index) noexcept
      : bell_(bell), control_(control), counters_(counters), index_(index) {}

  WorkerContext(const WorkerContext&) = delete;
  WorkerContext& operator=(const WorkerContext&) = delete;

  // Waits until `ready()` holds; false if the pipeline was cancelled first. Spins for a learnt
  // while (on a thread of its own; a oneTBB task does not spin), then calls `before_sleep()` (which
  // may push parcels and so wait itself) and sleeps on the doorbell until a matching ring,
  // re-checking after every wake-up. The time from the first failed check to the return is added to
  // `blocked`.
  template <class Ready, class BeforeSleep>
  bool wait(WaitReason reason, Ready&& ready, BeforeSleep&& before_sleep, RelaxedCounter& blocked) {
    const std::uint64_t started = ticks();
    const bool result = wait_untimed(reason, ready, before_sleep);
    const std::uint64_t now = ticks();
    blocked.add(now - started);
    blocked_ticks_ += now - started;
    return result;
  }

  [[nodiscard]] bool cancelled() const noexcept { return control_.cancelled(); }
  [[nodiscard]] bool stop_requested() const noexcept { return control_.stop_requested(); }
  [[nodiscard]] Control& control() noexcept { return control_; }
  [[nodiscard]] WorkerCounters& counters() noexcept { return counters_; }
  [[nodiscard]] std::size_t index() const noexcept { return index_; }
  // Ticks this worker has spent in wait(), for telling busy time from blocked time.
  [[nodiscard]] std::uint64_t blocked_ticks() const noexcept { return blocked_ticks_; }

 private:
  template <class Ready, class BeforeSleep>
  bool wait_untimed(WaitReason reason, Ready& ready, BeforeSleep& before_sleep) {
    // A task that waits suspends at once: the worker it waits for may need this very thread.
    if (!bell_.cooperative()) {
      auto& spin = spins_[static_cast<std::size_t>(reason)];
      if (spin.spin([&] { return ready() || control_.cancelled(); })) return !control_.cancelled();
    }
    before_sleep();
    for (;;) {
      if (ready()) return true;
      if (control_.cancelled()) return false;
      bell_.prepare(reason);
      if (ready() || control_.cancelled()) {
        bell_.cancel();
        continue;
      }
      bell_.park();
    }
  }

  Doorbell& bell_;
  Control& control_;
  WorkerCounters& counters_;
  const std::size_t index_;
  std::array<sync::detail::AdaptiveSpin, 4> spins_{};
  std::uint64_t blocked_ticks_ = 0;
};

}  // namespace conveyor::detail
