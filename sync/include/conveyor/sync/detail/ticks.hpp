// A cheap clock for per-worker busy and blocked time.
//
// On x86-64 with an invariant TSC (constant rate on every core, also while idle) a tick is one
// `rdtsc`, about a third of the cost of `clock_gettime` on a virtual machine, which matters when
// every parcel is timed. Elsewhere a tick is a steady_clock nanosecond. The TSC's rate is measured
// once against steady_clock, over two milliseconds, the first time anybody converts (a pipeline
// does so as it starts); its error is then in the order of 1e-5.
#pragma once

#include <chrono>
#include <cstdint>

namespace conveyor::sync::detail {

// Whether the CPU has an invariant TSC.
bool detect_invariant_tsc() noexcept;

// Decided while the program starts, so that a tick costs no guard check.
inline const bool tsc_ticks = detect_invariant_tsc();

inline std::uint64_t steady_ticks() noexcept {
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch() /
                                    std::chrono::nanoseconds(1));
}

inline std::uint64_t ticks() noexcept {
#if defined(__x86_64__)
  if (tsc_ticks) [[likely]]
    return __builtin_ia32_rdtsc();
#endif
  return steady_ticks();
}

// Seconds per tick; the first call measures the rate.
double seconds_per_tick() noexcept;

inline double ticks_to_seconds(std::uint64_t count) noexcept {
  return static_cast<double>(count) * seconds_per_tick();
}

inline std::uint64_t seconds_to_ticks(double seconds) noexcept {
  return static_cast<std::uint64_t>(seconds / seconds_per_tick());
}

template <class Rep, class Period>
std::uint64_t to_ticks(std::chrono::duration<Rep, Period> duration) noexcept {
  return seconds_to_ticks(std::chrono::duration<double>(duration).count());
}

}  // namespace conveyor::sync::detail
