// CooperativeSemaphore: a counting semaphore whose waiters, inside a oneTBB task, suspend the task
// instead of blocking the worker thread.
//
// Contract:
// - Any thread or task may call any member, concurrently. Not copyable, not movable: queued
//   waiters point at it. It must outlive every call on it, and nobody may wait on it when it is
//   destroyed (checked in debug builds).
// - The count may go below zero: -count is then the number of callers that wait (or are about
//   to) and have not yet been promised a token. `available()` reports max(count, 0) as a snapshot.
// - `acquire` takes one token, waiting as long as it takes. `try_acquire` never waits.
//   `try_acquire_for` waits at most about `timeout` (steady clock) and returns whether it took a
//   token; a waiter that times out leaves the queue and gives back its place in the count.
// - `release(n)` adds n tokens and hands them to at most n waiters, the first waiter first (FIFO).
//   An arrival never overtakes a waiter: a token released while somebody waits is promised to the
//   waiters at once, so `try_acquire` cannot take it.
// - Negative `initial`, negative `n`, or a release that would take the count past `max_count` is a
//   contract violation: it is reported on stderr and the process aborts.
//
// How a caller waits:
// - Inside a running oneTBB task (this thread has an arena slot and
//   `tbb::task::current_context()` is not null), the task is suspended with `tbb::task::suspend`
//   and the worker runs other tasks meanwhile; the release (or the timeout) resumes it, possibly
//   on another thread of the arena. So a task may wait on progress of tasks queued behind it, even
//   in an arena with fewer threads than waiting tasks.
// - Everywhere else the calling thread blocks on a futex word in its own waiter node (no busy
//   wait). That covers plain threads and the outermost level of an external thread: the body of
//   `task_arena::execute`, or code around `task_group::wait`, outside any task. oneTBB 2021.8 can
//   suspend there too, but only through its "recall" of the external thread's original stack,
//   which resumes the waiter on that one thread anyway; blocking keeps the external thread out of
//   that machinery and costs nothing that suspension would have saved. Do not hold a blocking
//   CooperativeSemaphore in the outermost body of `task_arena::execute` of a one-slot arena while
//   waiting for tasks of that arena: there is nobody to run them.
// - Suspension needs oneTBB's resumable tasks (Linux with glibc); without them every wait blocks.
//
// Timeouts: a blocked thread sleeps on its futex with a deadline. A suspended task has nobody to
// resume it on time, so a process-wide timer thread (started by the first timed wait of a task,
// joined at exit) resumes timed-out tasks. Whether a waiter got a token or timed out is decided by
// one compare-exchange on its node's state (waiting -> granted or waiting -> cancelled).
//
// Progress: FIFO among waiters. The uncontended paths (`try_acquire`, `acquire` or `release` with
// nobody waiting) are one atomic read-modify-write each. The waiting paths take a short mutex
// that guards the queue; nobody suspends or sleeps while holding it.
//
// Changes from the ConcRT cooperative semaphore this is modelled on:
// - A release that finds the queue empty (its waiter has decremented the count but not yet queued
//   itself) does not spin until the waiter shows up: it leaves a pending grant under the queue's
//   mutex, and the waiter takes it instead of queueing. No busy wait, whoever is descheduled.
// - `release(n)` with n > 1, `try_acquire`, and `try_acquire_for` with a real timeout, also for a
//   suspended task; the seed's queue of raw contexts cannot remove a waiter that gives up.
// - A blocking fallback for callers that are not in a task, instead of undefined behaviour.
// - The queue is intrusive (nodes live on the waiters' stacks): no allocation per wait.
//
// Memory ordering:
// - Tokens: `release` adds to `count_` with a release fetch_add. A caller that takes a token from
//   the count (the fetch_sub in `acquire`, the compare-exchange in `try_acquire`) does so with
//   acquire order and synchronises with every release before it (read-modify-writes continue the
//   release sequence).
// - Hand-off to a waiter: the releaser resolves the waiter's node state to `granted` with a release
//   compare-exchange (under the mutex); the waiter reads its state with an acquire load after it
//   wakes or is resumed. That pairing, not oneTBB's own (uninstrumented) synchronisation, is what
//   makes the releaser's earlier writes visible to the resumed task, and what TSan sees.
// - Pending grants, the queue and the timer's table are guarded by mutexes.
// - A timed-out waiter reads `count_` with acquire order under the mutex to decide whether a
//   release has already promised it a token; see resolve_timeout in the .cpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>

#include "conveyor/sync/detail/adaptive_spin.hpp"
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/cooperative_waiter.hpp"
#include "conveyor/sync/detail/token_count.hpp"

namespace conveyor::sync {

namespace detail {
class CooperativeTimer;
}

class CooperativeSemaphore {
 public:
  static constexpr std::int32_t max_count = std::numeric_limits<std::int32_t>::max();

  explicit CooperativeSemaphore(std::int32_t initial = 0) : count_(initial) {
    CONVEYOR_CONTRACT(initial >= 0, "CooperativeSemaphore: the initial count must not be negative");
  }

  ~CooperativeSemaphore();

  CooperativeSemaphore(const CooperativeSemaphore&) = delete;
  CooperativeSemaphore& operator=(const CooperativeSemaphore&) = delete;
  CooperativeSemaphore(CooperativeSemaphore&&) = delete;
  CooperativeSemaphore& operator=(CooperativeSemaphore&&) = delete;

  void acquire() {
    // Acquire: pairs with the release fetch_add in release() when a token is taken here.
    if (count_.fetch_sub(1, std::memory_order_acquire) > 0) return;
    wait_for_grant();
  }

  [[nodiscard]] bool try_acquire() noexcept {
    // Acquire (inside): pairs with the release order of release().
    return detail::try_take_token(count_);
  }

  template <class Rep, class Period>
  [[nodiscard]] bool try_acquire_for(const std::chrono::duration<Rep, Period>& timeout) {
    if (try_acquire()) return true;
    if (timeout <= timeout.zero()) return false;
    return try_acquire_until_slow(detail::deadline_after(timeout));
  }

  void release(std::int32_t n = 1) {
    CONVEYOR_CONTRACT(n >= 0, "CooperativeSemaphore::release: n must not be negative");
    if (n == 0) return;
    // Release: pairs with the acquire operations that take these tokens from the count.
    const std::int32_t before = count_.fetch_add(n, std::memory_order_release);
    CONVEYOR_CONTRACT(before <= max_count - n,
                      "CooperativeSemaphore::release would overflow the count");
    if (before < 0) hand_to_waiters(std::min(n, -before));
  }

  [[nodiscard]] std::int32_t available() const noexcept {
    return std::max(count_.load(std::memory_order_relaxed), 0);
  }

  // Holds one token for its lifetime.
  class scoped_lock {
   public:
    explicit scoped_lock(CooperativeSemaphore& semaphore) : semaphore_(semaphore) {
      semaphore_.acquire();
    }
    ~scoped_lock() { semaphore_.release(); }

    scoped_lock(const scoped_lock&) = delete;
    scoped_lock& operator=(const scoped_lock&) = delete;

   private:
    CooperativeSemaphore& semaphore_;
  };

 private:
  friend class detail::CooperativeTimer;
  using Waiter = detail::CooperativeWaiter;

  // The caller has taken its place in the count (which was not positive); wait for its token.
  void wait_for_grant();
  bool try_acquire_until_slow(std::chrono::steady_clock::time_point deadline);
  // The caller holds a place in the count; queue up (or take a pending grant) and wait.
  bool wait_in_queue(std::chrono::steady_clock::time_point deadline);
  // `grants` waiters were promised a token by a release; deliver them, first waiter first.
  void hand_to_waiters(std::int32_t grants);

  // Under mutex_: takes a pending grant if there is one, else queues `waiter`. True if granted.
  bool take_pending_grant_or_queue(Waiter& waiter);
  // Under mutex_: the waiter's deadline has passed and it holds no grant yet. Decides, once,
  // whether it leaves empty-handed or takes a token a release has already promised; unqueues it.
  void resolve_timeout(Waiter& waiter);
  // Called by the timer thread when a suspended task's deadline passes.
  void expire(Waiter& waiter);

  void block_thread(Waiter& waiter);
  void suspend_task(Waiter& waiter);

  // release() and acquire() touch only this on their uncontended paths.
  alignas(64) std::atomic<std::int32_t> count_;

  // The waiting paths.
  alignas(64) std::mutex mutex_;
  detail::WaiterQueue queue_;  // guarded by mutex_
  // Guarded by mutex_. Positive: grants delivered while the queue was empty, for waiters that
  // have decremented the count but not yet queued. Negative: grants that timed-out waiters took
  // before the release that promised them got here to deliver them.
  std::int32_t grant_balance_ = 0;
  // How long a blocked thread spins on its node before it sleeps.
  detail::AdaptiveSpin thread_spin_;
};

}  // namespace conveyor::sync
