// AdaptiveSpin: the spin before a sleep, sized by what recent waits needed.
//
// A hand-off between two running threads completes in well under a microsecond, while a futex
// sleep and wake-up costs microseconds, and tens of them on a virtual machine. So a waiter first
// spins. How long is learnt: a wait that succeeded after k rounds pulls the estimate towards k, so
// a busy hand-off spins about twice what it needs; a wait that failed pulls it towards the limit,
// because once one side of a hand-off sleeps, the other must spin for longer than a wake-up takes,
// or every later hand-off costs two sleeps (a "sleep cascade", 30 times slower here). Every
// `yield_every` rounds the core is given away: when threads outnumber cores, the thread being
// waited for may be queued behind the spinner. A waiter that then slept for long (longer than
// `long_sleep`: the other side had nothing for it, it was not a hand-off in flight) reports it
// with `slept_long()`, and the estimate starts again from nothing: a thread that waits
// milliseconds for its next piece of work would otherwise burn the whole budget, and a few dozen
// yields, before every sleep, on cores the busy threads need.
//
// Contract: any number of threads may share one AdaptiveSpin; the estimate is a relaxed heuristic
// and carries no synchronisation. `ready` must only read hints; the caller re-checks with the
// memory order it needs.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "conveyor/sync/detail/cpu_relax.hpp"

namespace conveyor::sync::detail {

class AdaptiveSpin {
 public:
  static constexpr std::int32_t min_rounds = 64;
  static constexpr std::int32_t max_rounds = 4096;
  static constexpr std::int32_t yield_every = 128;
  // Well above a wake-up's latency, even on a busy virtual machine: a hand-off is never this slow.
  static constexpr std::chrono::microseconds long_sleep{500};

  // Spins until `ready()` returns true (then true) or the learnt budget is spent (then false).
  template <class Ready>
  bool spin(Ready&& ready) noexcept {
    const std::int32_t estimate = estimate_.load(std::memory_order_relaxed);
    const std::int32_t limit = std::min(max_rounds, 2 * estimate + min_rounds);
    for (std::int32_t round = 0; round < limit; ++round) {
      if (round % yield_every == yield_every - 1) {
        std::this_thread::yield();
      } else {
        cpu_relax();
      }
      if (ready()) {
        estimate_.store(estimate + (round - estimate) / 8, std::memory_order_relaxed);
        return true;
      }
    }
    estimate_.store(estimate + (limit - estimate) / 4, std::memory_order_relaxed);
    return false;
  }

  // After a failed spin, the waiter slept longer than long_sleep.
  void slept_long() noexcept { estimate_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<std::int32_t> estimate_{0};
};

}  // namespace conveyor::sync::detail
