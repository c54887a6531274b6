// Semaphore: a counting semaphore on a 32-bit futex word.
//
// Contract:
// - Any thread may call any member, concurrently. Not copyable, not movable: waiters sleep on the
//   address of the count.
// - The count stays within [0, `max_count`]. A negative initial count, `release(n)` with n < 0, or
//   a release that would take the count past `max_count` is a contract violation: it is reported
//   on stderr and the process aborts.
// - `acquire` takes one token, waiting as long as it takes. `try_acquire` never waits.
//   `try_acquire_for` waits at most about `timeout` (steady clock); true if it took a token.
// - `release(n)` adds n tokens and wakes at most n sleeping waiters (fewer if fewer sleep).
// - `available()` is a snapshot for diagnostics; it may be stale before the caller reads it.
// - Unfair: a woken waiter competes with new arrivals, and may lose and sleep again.
//
// Memory ordering:
// - A successful acquire (compare-exchange on `count_`, acquire) synchronises with the `release`
//   (fetch_add on `count_`, release or stronger) that added its token: whatever the releaser wrote
//   before `release` is visible after `acquire`.
// - No lost wake-up, by a store-load (Dekker) pairing of four seq_cst operations: a sleeper
//   increments `waiters_`, then reads `count_`; a releaser adds to `count_`, then reads `waiters_`.
//   One of the two reads sees the other's write. The kernel re-checks `count_ == 0` atomically.
// - The spin estimate (detail/adaptive_spin.hpp) is a heuristic and is relaxed.
// Design notes: docs/design/sync-primitives.md#semaphore.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

#include "conveyor/sync/detail/adaptive_spin.hpp"
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/deadline.hpp"
#include "conveyor/sync/detail/futex.hpp"
#include "conveyor/sync/detail/token_count.hpp"

namespace conveyor::sync {

class Semaphore {
 public:
  static constexpr std::int32_t max_count = std::numeric_limits<std::int32_t>::max();

  explicit Semaphore(std::int32_t initial = 0) : count_(initial) {
    CONVEYOR_CONTRACT(initial >= 0, "Semaphore: the initial count must not be negative");
  }

  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;
  Semaphore(Semaphore&&) = delete;
  Semaphore& operator=(Semaphore&&) = delete;

  void acquire() {
    if (try_acquire()) return;
    acquire_slow();
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
    CONVEYOR_CONTRACT(n >= 0, "Semaphore::release: n must not be negative");
    if (n == 0) return;
    // seq_cst: release for the tokens, and the store half of the Dekker pairing with waiters_.
    const std::int32_t before = count_.fetch_add(n, std::memory_order_seq_cst);
    CONVEYOR_CONTRACT(before <= max_count - n, "Semaphore::release would overflow the count");
    // seq_cst: the load half of the Dekker pairing; see "Memory ordering".
    const std::int32_t sleepers = waiters_.load(std::memory_order_seq_cst);
    if (sleepers > 0) detail::futex_wake(count_, std::min(n, sleepers));
  }

  [[nodiscard]] std::int32_t available() const noexcept {
    return count_.load(std::memory_order_relaxed);
  }

 private:
  // Spins for a while; true if it took a token meanwhile.
  bool spin_then_try() noexcept;
  void acquire_slow();
  bool try_acquire_until_slow(std::chrono::steady_clock::time_point deadline);

  // One cache line: release() touches count_ and reads waiters_ on every call.
  alignas(64) detail::FutexWord count_;
  std::atomic<std::int32_t> waiters_{0};
  detail::AdaptiveSpin spin_;
};

}  // namespace conveyor::sync

#include "conveyor/sync/detail/semaphore_slow.hpp"
