// WorkerContext: what every wait of one worker shares: its doorbell, the wake-ups it owes, the
// pipeline's control, and its counters.
//
// Contract: owned by one worker and used only by it (its InPort, OutPort and loop). What registers
// a recheck (`add_recheck`) stays alive, or removes it, while the worker may still wait.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "conveyor/framework/detail/control.hpp"
#include "conveyor/framework/detail/deferred_wakes.hpp"
#include "conveyor/framework/detail/doorbell.hpp"
#include "conveyor/framework/detail/ticks.hpp"
#include "conveyor/framework/detail/worker_counters.hpp"
#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::detail {

class WorkerContext {
 public:
  WorkerContext(Doorbell& bell, Control& control, WorkerCounters& counters, std::size_t index,
                DeferredWakes* owed = nullptr) noexcept
      : bell_(bell), control_(control), counters_(counters), index_(index), owed_(owed) {}

  WorkerContext(const WorkerContext&) = delete;
  WorkerContext& operator=(const WorkerContext&) = delete;

  // Waits until `ready()` holds; false if the pipeline was cancelled first. Calls `before_sleep()`
  // (which may push parcels and so wait itself), delivers the wake-ups this worker owes
  // (deferred_wakes.hpp), then announces the wait on its doorbell, runs the rechecks of the rings
  // this worker may have missed, and parks until a matching ring, re-checking after every
  // wake-up. Parking spins a learnt while before it sleeps (doorbell.hpp). The time from the first
  // failed check to the return is added to `blocked`.
  template <class Ready, class BeforeSleep>
  bool wait(WaitReason reason, Ready&& ready, BeforeSleep&& before_sleep, RelaxedCounter& blocked) {
    const std::uint64_t started = ticks();
    const bool result = wait_untimed(reason, ready, before_sleep);
    const std::uint64_t now = ticks();
    blocked.add(now - started);
    blocked_ticks_ += now - started;
    return result;
  }

  // A recheck: `run(self)` rings, after a full fence and with Doorbell::announced, every doorbell
  // whose owner waits for a change this worker made but checked only behind the Doorbell's
  // hand-over fence.
  struct Recheck {
    const void* self = nullptr;
    void (*run)(const void* self) = nullptr;
  };
  static constexpr std::size_t max_rechecks = 3;  // its InPort, its OutPort, a window gate

  void add_recheck(Recheck recheck) noexcept {
    CONVEYOR_CONTRACT(rechecks_count_ < max_rechecks, "WorkerContext: too many rechecks");
    rechecks_[rechecks_count_++] = recheck;
  }
  void remove_recheck(const void* self) noexcept {
    for (std::size_t i = rechecks_count_; i-- > 0;) {
      if (rechecks_[i].self == self) rechecks_[i] = rechecks_[--rechecks_count_];
    }
  }

  [[nodiscard]] bool cancelled() const noexcept { return control_.cancelled(); }
  [[nodiscard]] bool stop_requested() const noexcept { return control_.stop_requested(); }
  [[nodiscard]] Control& control() noexcept { return control_; }
  [[nodiscard]] WorkerCounters& counters() noexcept { return counters_; }
  [[nodiscard]] std::size_t index() const noexcept { return index_; }
  // What this worker owes the consumers it pushes to; null for a sink.
  [[nodiscard]] DeferredWakes* owed() noexcept { return owed_; }
  // Ticks this worker has spent in wait(), for telling busy time from blocked time.
  [[nodiscard]] std::uint64_t blocked_ticks() const noexcept { return blocked_ticks_; }

  // A consumer finished a parcel that kept it busy for `busy` ticks. A consumer whose parcels
  // are cheap lets its producers defer its wake-ups (deferred_wakes.hpp); one whose parcels are
  // dear is woken at once, since it would idle while a wake-up waited.
  void note_parcel(std::uint64_t busy) noexcept {
    // A moving average over about eight timings (a parcel, or a group of cheap ones).
    parcel_ticks_ = parcel_ticks_ - parcel_ticks_ / 8 + busy / 8;
  }

 private:
  template <class Ready, class BeforeSleep>
  bool wait_untimed(WaitReason reason, Ready& ready, BeforeSleep& before_sleep) {
    before_sleep();
    // Consumers left asleep by this worker's pushes must not wait for it to wake again.
    if (owed_ != nullptr) owed_->deliver();
    // The condition holds (or the pipeline was cancelled): withdraw the announcement.
    auto settled = [&] {
      if (!ready() && !control_.cancelled()) return false;
      bell_.cancel();
      return true;
    };
    bool rechecked = false;
    for (;;) {
      if (ready()) return true;
      if (control_.cancelled()) return false;
      // The announcement's full fence also orders this worker's earlier changes before the
      // rechecks' loads.
      bell_.prepare(reason, parcel_ticks_ < DeferredWakes::dear_parcel_ticks());
      if (!rechecked) {
        for (std::size_t i = 0; i < rechecks_count_; ++i)
          rechecks_[i].run(rechecks_[i].self);
        rechecked = true;
      }
      if (settled()) continue;
      // Bounded first: a ring may have missed the announcement (doorbell.hpp).
      if (bell_.park_bounded() || settled()) continue;
      Doorbell::reveal_missed_changes();
      if (settled()) continue;
      bell_.park();
    }
  }

  Doorbell& bell_;
  Control& control_;
  WorkerCounters& counters_;
  const std::size_t index_;
  DeferredWakes* const owed_;
  std::uint64_t blocked_ticks_ = 0;
  std::uint64_t parcel_ticks_ = 0;
  std::array<Recheck, max_rechecks> rechecks_{};
  std::size_t rechecks_count_ = 0;
};

}  // namespace conveyor::detail
