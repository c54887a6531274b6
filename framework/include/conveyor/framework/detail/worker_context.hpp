// WorkerContext: what every wait of one worker shares: its Waiter (and so its doorbell), the
// wake-ups it owes, the pipeline's control, and its counters.
//
// Contract: owned by one worker and used only by it (its InPort, OutPort and loop). What registers
// a recheck (`add_recheck`) stays alive, or removes it, while the worker may still wait.
#pragma once

#include <cstddef>
#include <cstdint>

#include "conveyor/framework/detail/control.hpp"
#include "conveyor/framework/detail/worker_counters.hpp"
#include "conveyor/sync/deferred_wakes.hpp"
#include "conveyor/sync/detail/ticks.hpp"
#include "conveyor/sync/doorbell.hpp"
#include "conveyor/sync/waiter.hpp"

namespace conveyor::detail {

using sync::DeferredWakes;
using sync::Doorbell;
using sync::WaitReason;

class WorkerContext {
 public:
  WorkerContext(Doorbell& bell, Control& control, WorkerCounters& counters, std::size_t index,
                DeferredWakes* owed = nullptr) noexcept
      : waiter_(bell), control_(control), counters_(counters), index_(index), owed_(owed) {}

  WorkerContext(const WorkerContext&) = delete;
  WorkerContext& operator=(const WorkerContext&) = delete;

  // Waits until `ready()` holds; false if the pipeline was cancelled first. Calls `before_sleep()`
  // (which may push parcels and so wait itself), delivers the wake-ups this worker owes, then
  // waits on its doorbell (sync::Waiter, with the bounded park). The time from the end of
  // `before_sleep()` to the return is added to `blocked` (a wait inside it counts for itself).
  template <class Ready, class BeforeSleep>
  bool wait(WaitReason reason, Ready&& ready, BeforeSleep&& before_sleep, RelaxedCounter& blocked) {
    before_sleep();
    const std::uint64_t started = sync::detail::ticks();
    // Consumers left asleep by this worker's pushes must not wait for it to wake again.
    if (owed_ != nullptr) owed_->deliver();
    const bool result = waiter_.wait(
        reason, ready, [this] { return control_.cancelled(); },
        parcel_ticks_ < DeferredWakes::dear_parcel_ticks());
    const std::uint64_t now = sync::detail::ticks();
    blocked.add(now - started);
    blocked_ticks_ += now - started;
    return result;
  }

  // Rechecks of this worker's hand-overs (sync::Waiter): its InPort, its OutPort, a window gate.
  void add_recheck(sync::Waiter::Recheck recheck) noexcept { waiter_.add_recheck(recheck); }
  void remove_recheck(const void* self) noexcept { waiter_.remove_recheck(self); }

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
  // are cheap lets its producers defer its wake-ups (sync/deferred_wakes.hpp); one whose parcels
  // are dear is woken at once, since it would idle while a wake-up waited.
  void note_parcel(std::uint64_t busy) noexcept {
    // A moving average over about eight timings (a parcel, or a group of cheap ones).
    parcel_ticks_ = parcel_ticks_ - parcel_ticks_ / 8 + busy / 8;
  }

 private:
  sync::Waiter waiter_;
  Control& control_;
  WorkerCounters& counters_;
  const std::size_t index_;
  DeferredWakes* const owed_;
  std::uint64_t blocked_ticks_ = 0;
  std::uint64_t parcel_ticks_ = 0;
};

}  // namespace conveyor::detail
