// The waiting paths of conveyor::sync::Semaphore: adaptive spinning, then the futex.
// Included at the end of semaphore.hpp; not a public header.
#pragma once

#include <thread>

#include "conveyor/sync/detail/cpu_relax.hpp"

namespace conveyor::sync {

inline bool Semaphore::spin_then_try() noexcept {
  // The estimate follows the number of rounds that recent waits needed. A wait that succeeds after
  // k rounds pulls it towards k, so that a busy hand-off spins about twice what it needs. A wait
  // that fails pulls it towards the limit: once one side of a hand-off sleeps, the other must spin
  // for longer than a wake-up takes, or every later hand-off costs two sleeps.
  const std::int32_t estimate = spin_estimate_.load(std::memory_order_relaxed);
  const std::int32_t limit = std::min(max_spins, 2 * estimate + min_spins);
  for (std::int32_t spins = 0; spins < limit; ++spins) {
    // Now and then give the core away: when threads outnumber cores, the thread that will release
    // may be waiting for this very core, and spinning would only delay it.
    if (spins % yield_every == yield_every - 1) {
      std::this_thread::yield();
    } else {
      detail::cpu_relax();
    }
    if (count_.load(std::memory_order_relaxed) > 0 && try_acquire()) {
      spin_estimate_.store(estimate + (spins - estimate) / 8, std::memory_order_relaxed);
      return true;
    }
  }
  spin_estimate_.store(estimate + (limit - estimate) / 4, std::memory_order_relaxed);
  return false;
}

inline void Semaphore::acquire_slow() {
  if (spin_then_try()) return;
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
}

inline bool Semaphore::try_acquire_until_slow(std::chrono::steady_clock::time_point deadline) {
  if (spin_then_try()) return true;
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
  return acquired;
}

}  // namespace conveyor::sync
