// The tick rate behind detail/ticks.hpp.
#include "conveyor/sync/detail/ticks.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace conveyor::sync::detail {

bool detect_invariant_tsc() noexcept {
#if defined(__x86_64__)
  unsigned eax = 0;
  unsigned ebx = 0;
  unsigned ecx = 0;
  unsigned edx = 0;
  // CPUID 0x80000007, EDX bit 8: the TSC runs at a constant rate in every P-, C- and T-state.
  if (__get_cpuid(0x80000007U, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (edx & (1U << 8)) != 0;
#else
  return false;
#endif
}

double seconds_per_tick() noexcept {
  static const double rate = [] {
    if (!tsc_ticks) return 1e-9;
    const std::uint64_t start_nanoseconds = steady_ticks();
    const std::uint64_t start_ticks = ticks();
    std::uint64_t now_nanoseconds = start_nanoseconds;
    while (now_nanoseconds - start_nanoseconds < 2'000'000)
      now_nanoseconds = steady_ticks();
    const std::uint64_t elapsed_ticks = ticks() - start_ticks;
    if (elapsed_ticks == 0) return 1e-9;
    return static_cast<double>(now_nanoseconds - start_nanoseconds) * 1e-9 /
           static_cast<double>(elapsed_ticks);
  }();
  return rate;
}

}  // namespace conveyor::sync::detail
