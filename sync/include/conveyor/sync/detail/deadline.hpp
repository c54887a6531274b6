// deadline_after: the steady-clock deadline a timeout from now, for the timed waits of the
// semaphores, the queue and the locks.
//
// Contract: rounded up, so that a wait never ends early; a timeout the clock cannot hold from now
// (duration::max() for "no limit", or anything past about 292 years) saturates at
// steady_clock::time_point::max(), which every wait takes as no deadline, instead of overflowing
// into the past and giving up at once.
#pragma once

#include <chrono>

namespace conveyor::sync::detail {

template <class Rep, class Period>
[[nodiscard]] std::chrono::steady_clock::time_point deadline_after(
    const std::chrono::duration<Rep, Period>& timeout) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point now = Clock::now();
  // Compared in long double seconds: neither side can overflow there.
  const std::chrono::duration<long double> room = Clock::time_point::max() - now;
  if (std::chrono::duration<long double>(timeout) >= room) return Clock::time_point::max();
  return now + std::chrono::ceil<Clock::duration>(timeout);
}

}  // namespace conveyor::sync::detail
