// spin_until: the short wait a queue side does before it announces that it will sleep.
//
// A hand-off through a queue usually completes within a few hundred nanoseconds, far less than a
// futex sleep and wake-up, so a side that finds the ring full or empty first spins on the CPU. On
// an oversubscribed machine the other side may not be running at all; a few yields then give it
// the core instead of burning the time slice.
#pragma once

#include <thread>

#include "conveyor/sync/detail/cpu_relax.hpp"

namespace conveyor::sync::detail {

inline constexpr int queue_spins_before_yield = 128;
inline constexpr int queue_yields_before_sleep = 4;

// Polls `ready` (which must only read relaxed hints) until it returns true or the budget is spent.
template <class Ready>
bool spin_until(Ready&& ready) {
  for (int spin = 0; spin < queue_spins_before_yield; ++spin) {
    cpu_relax();
    if (ready()) return true;
  }
  for (int round = 0; round < queue_yields_before_sleep; ++round) {
    std::this_thread::yield();
    if (ready()) return true;
  }
  return false;
}

}  // namespace conveyor::sync::detail
