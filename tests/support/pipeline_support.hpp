// Helpers shared by the pipeline tests: counting sources, sinks and stages of one type each for
// the tests' common code, and a tally that proves that every item arrived exactly once.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

namespace conveyor::testing {

// A generator source of 0, 1, ..., count - 1.
inline auto count_to(std::uint64_t count) {
  return [next = std::uint64_t{0}, count]() mutable -> std::optional<std::uint64_t> {
    if (next >= count) return std::nullopt;
    return next++;
  };
}

// A sink's and a stage's code for tests in which they only have to be there. Each is one type, so
// that a test file compiles the pipeline's typed code for it once, not once per test's lambda.
inline constexpr auto discard = [](std::uint64_t) {};
inline constexpr auto unchanged = [](std::uint64_t x) { return x; };

// A sink's code that adds each item to a tally (Tally, SharedTally below), or appends it to a
// container; likewise one type per target type.
template <class Target>
auto add_to(Target& target) {
  return [&target](std::uint64_t x) { target.add(x); };
}
template <class Container>
auto append_to(Container& container) {
  return [&container](std::uint64_t x) { container.push_back(x); };
}

// A hash that makes a sum of hashes an order-independent fingerprint of a multiset.
inline std::uint64_t fingerprint(std::uint64_t value) noexcept {
  value += 0x9e3779b97f4a7c15ULL;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

// Count and fingerprint of what arrived; equal to expected_tally(n) only if each of 0..n-1
// arrived exactly once (up to a 2^-64 chance).
struct Tally {
  std::uint64_t count = 0;
  std::uint64_t hash = 0;

  void add(std::uint64_t value) noexcept {
    ++count;
    hash += fingerprint(value);
  }
  friend bool operator==(const Tally&, const Tally&) = default;
};

inline Tally expected_tally(std::uint64_t count, std::uint64_t offset = 0) {
  Tally tally;
  for (std::uint64_t i = 0; i < count; ++i)
    tally.add(i + offset);
  return tally;
}

// The same, for several workers adding at once.
class SharedTally {
 public:
  void add(std::uint64_t value) noexcept {
    count_.fetch_add(1, std::memory_order_relaxed);
    hash_.fetch_add(fingerprint(value), std::memory_order_relaxed);
  }
  // Relaxed: read after the pipeline's run() returned, which orders the workers' additions.
  [[nodiscard]] Tally get() const noexcept {
    return Tally{count_.load(std::memory_order_relaxed), hash_.load(std::memory_order_relaxed)};
  }

 private:
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> hash_{0};
};

}  // namespace conveyor::testing
