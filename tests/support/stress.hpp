// Sizing for stress tests: how many items to push, and how much slower a sanitizer build runs.
//
// CONVEYOR_STRESS_ITEMS overrides the item count of every stress test (for a quick local run, or a
// long soak). Without it, optimised builds push 10 million items per shape. Sanitizer and
// unoptimised builds push fewer, because they run 5-20 times slower and CI must finish in time;
// their job is to catch races and memory errors, which a million items exercise as well.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

namespace conveyor::testing {

#if defined(__SANITIZE_THREAD__) || defined(CONVEYOR_TSAN)
inline constexpr int sanitizer_slowdown_factor = 10;
#elif defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
inline constexpr int sanitizer_slowdown_factor = 4;
#else
inline constexpr int sanitizer_slowdown_factor = 1;
#endif

inline int sanitizer_slowdown() {
  return sanitizer_slowdown_factor;
}

inline constexpr std::uint64_t full_stress_items = 10'000'000;

// Items to push through one stress shape.
inline std::uint64_t stress_items() {
  if (const char* text = std::getenv("CONVEYOR_STRESS_ITEMS"); text != nullptr && *text != '\0') {
    return std::stoull(text);
  }
  return full_stress_items / static_cast<std::uint64_t>(sanitizer_slowdown_factor);
}

}  // namespace conveyor::testing
