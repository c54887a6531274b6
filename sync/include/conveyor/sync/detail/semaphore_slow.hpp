// The waiting paths of conveyor::sync::Semaphore: an adaptive spin, then the futex.
// Included at the end of semaphore.hpp; not a public header.
#pragma once

namespace conveyor::sync {

inline bool Semaphore::spin_then_try() noexcept {
  return spin_.spin([this] { return count_.load(std::memory_order_relaxed) > 0 && try_acquire(); });
}

inline void Semaphore::acquire_slow() {
  if (spin_then_try()) return;
  const auto asleep = std::chrono::steady_clock::now();
  // seq_cst: the store half of the Dekker pairing with release(); see "Memory ordering".
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  for (;;) {
    std::int32_t count = count_.load(std::memory_order_seq_cst);
    if (count == 0) {
      detail::futex_wait(count_, 0);
      continue;
    }
    if (count_.compare_exchange_weak(count, count - 1, std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
      break;
    }
  }
  waiters_.fetch_sub(1, std::memory_order_relaxed);
  if (std::chrono::steady_clock::now() - asleep > detail::AdaptiveSpin::long_sleep) {
    spin_.slept_long();
  }
}

inline bool Semaphore::try_acquire_until_slow(std::chrono::steady_clock::time_point deadline) {
  if (spin_then_try()) return true;
  const auto asleep = std::chrono::steady_clock::now();
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  bool acquired = false;
  for (;;) {
    std::int32_t count = count_.load(std::memory_order_seq_cst);
    if (count > 0) {
      if (count_.compare_exchange_weak(count, count - 1, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        acquired = true;
        break;
      }
      continue;
    }
    // Only give up after the count was seen to be zero, so that a waiter that was woken for a
    // token never leaves with the token unclaimed and another sleeper not woken.
    if (!detail::futex_wait_until(count_, 0, deadline) &&
        std::chrono::steady_clock::now() >= deadline) {
      if (try_acquire()) acquired = true;
      break;
    }
  }
  waiters_.fetch_sub(1, std::memory_order_relaxed);
  // Timed out or not, a long sleep was no hand-off in flight (adaptive_spin.hpp).
  if (std::chrono::steady_clock::now() - asleep > detail::AdaptiveSpin::long_sleep) {
    spin_.slept_long();
  }
  return acquired;
}

}  // namespace conveyor::sync
