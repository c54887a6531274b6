// CooperativeSemaphore: a counting semaphore whose waiters, inside a oneTBB task, suspend the task
// instead of blocking the worker thread.
//
// Contract:
// - Any thread or task may call any member, concurrently. Not copyable, not movable. It must
//   outlive every call on it; nobody may wait on it when it is destroyed (checked in debug builds).
// - `acquire` takes one token, waiting as long as it takes. `try_acquire` never waits.
//   `try_acquire_for` waits at most about `timeout` (steady clock, suspended tasks too); true if
//   it took a token. A caller that times out leaves the queue and gives back its place.
// - `release(n)` hands n tokens to at most n waiters, first waiter first. A token released while
//   somebody waits is promised to the waiters at once: `try_acquire` never overtakes a waiter.
// - `available()` is max(count, 0), a snapshot. A negative `initial` or `n`, or a release past
//   `max_count`, is a contract violation: it is reported on stderr and the process aborts.
// - How a caller waits: in a running oneTBB task (arena slot, `tbb::task::current_context()` not
//   null) the task suspends, its thread runs other tasks, and it may resume on another thread; so
//   it may wait for tasks queued behind it. Elsewhere (plain threads, the outermost body of
//   `task_arena::execute`) the thread blocks on a futex; there, in a one-slot arena, a wait for
//   that arena's tasks never ends. Without oneTBB's resumable tasks every wait blocks.
//
// Memory ordering: taking a token (acquire fetch_sub in `acquire`, acquire compare-exchange in
// `try_acquire`, a timed-out waiter's acquire load under the mutex) pairs with every earlier
// release fetch_add on `count_`. A grant's release compare-exchange of a waiter's node state pairs
// with the waiter's acquire load once it wakes or resumes. Mutexes guard queue, grants and timer.
// Design notes: docs/design/sync-primitives.md#cooperativesemaphore.
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
#include "conveyor/sync/detail/deadline.hpp"
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
