// Sizing for stress tests: how many items to push, and how much slower a sanitizer build runs.
//
// CONVEYOR_STRESS_ITEMS overrides the item count of every stress test (for a quick local run, or a
// long soak: CONVEYOR_STRESS_ITEMS=100000000). Without it, optimised builds push two million items
// per shape (ten million into the memory-bound test), and sanitizer and unoptimised builds a
// million, because they run 5-20 times slower and CI must finish in time; their job is to catch
// races and memory errors, which a million items exercise as well.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

namespace conveyor::testing {

#if defined(__SANITIZE_THREAD__) || defined(CONVEYOR_TSAN)
inline constexpr bool thread_sanitizer = true;
inline constexpr int sanitizer_slowdown_factor = 10;
#elif defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
inline constexpr bool thread_sanitizer = false;
inline constexpr int sanitizer_slowdown_factor = 4;
#else
inline constexpr bool thread_sanitizer = false;
inline constexpr int sanitizer_slowdown_factor = 1;
#endif

inline int sanitizer_slowdown() {
  return sanitizer_slowdown_factor;
}

// Items per stress shape: two million in optimised builds, a million under sanitizers.
inline constexpr std::uint64_t default_stress_items =
    sanitizer_slowdown_factor == 1 ? 2'000'000 : 1'000'000;
// The memory-bound test's source: ten million items in optimised builds, as the framework's
// contract is stated for, and a million under sanitizers.
inline constexpr std::uint64_t default_memory_bound_items =
    sanitizer_slowdown_factor == 1 ? 10'000'000 : 1'000'000;

// CONVEYOR_STRESS_ITEMS, when it is set.
inline std::uint64_t stress_items_override() {
  if (const char* text = std::getenv("CONVEYOR_STRESS_ITEMS"); text != nullptr && *text != '\0') {
    return std::stoull(text);
  }
  return 0;
}

// Items to push through one stress shape.
inline std::uint64_t stress_items() {
  const std::uint64_t given = stress_items_override();
  return given != 0 ? given : default_stress_items;
}

// Items for the memory-bound test.
inline std::uint64_t memory_bound_items() {
  const std::uint64_t given = stress_items_override();
  return given != 0 ? given : default_memory_bound_items;
}

}  // namespace conveyor::testing
