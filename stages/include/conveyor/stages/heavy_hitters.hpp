// HeavyHitters: counts per key in bounded memory (Space-Saving, Metwally et al. 2005), or exactly.
//
//   HeavyHitters paths(10'000);             // at most 10 000 keys held
//   paths.add("/index.html");  ...  for (const auto& e : paths.top(10)) use(e.key, e.count);
//
// Bounded: while fewer than `capacity` distinct keys were added, every count is exact. After that a
// new key takes the place of the smallest count and inherits it as its error, so for every key
// held, count - error <= true count <= count, and error <= total() / capacity. A key not held
// occurred at most floor() times. Two summaries merge (Agarwal et al. 2012) with the same bounds
// over the union of their streams. Unbounded (capacity 0): an exact count of every key.
//
// Keys are copied into an arena owned by the summary, so destroying it frees a few blocks, not a
// string per key. Not thread-safe: one per worker, merged at the end. A moved-from summary may
// only be assigned to or destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace conveyor::stages {

static_assert(sizeof(std::size_t) == 8, "hash_key must give 64-bit hashes");

// The hash that HeavyHitters and HyperLogLog share, so that a key is hashed once.
[[nodiscard]] inline std::uint64_t hash_key(std::string_view key) noexcept {
  return std::hash<std::string_view>{}(key);
}

class HeavyHitters {
 public:
  static constexpr std::size_t unbounded = 0;

  struct Entry {
    std::string_view key;  // valid while the summary lives and is not changed
    std::uint64_t count = 0;
    std::uint64_t error = 0;  // count - error <= the true count <= count
  };

  explicit HeavyHitters(std::size_t capacity = unbounded);
  HeavyHitters(HeavyHitters&&) noexcept;
  HeavyHitters& operator=(HeavyHitters&&) noexcept;
  HeavyHitters(const HeavyHitters& other);
  HeavyHitters& operator=(const HeavyHitters& other);
  ~HeavyHitters();

  // `hash` must be hash_key(key). Adding a count of 0 does nothing.
  void add(std::string_view key, std::uint64_t hash, std::uint64_t count = 1);
  void add(std::string_view key) { add(key, hash_key(key)); }
  // Adds every count of `other`, which must have the same capacity (else invalid_argument); the
  // bounds hold over both streams together.
  void merge(const HeavyHitters& other);

  // The `n` largest counts, largest first (ties by key).
  [[nodiscard]] std::vector<Entry> top(std::size_t n) const;
  // The count of `key` (0 if not held).
  [[nodiscard]] Entry find(std::string_view key) const;

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::size_t size() const noexcept;  // keys held
  [[nodiscard]] std::uint64_t total() const noexcept { return total_; }
  // True while no key was ever dropped: every count is exact and size() is the number of keys.
  [[nodiscard]] bool lossless() const noexcept { return floor() == 0; }
  // How often a key that is not held may have occurred; 0 while lossless.
  [[nodiscard]] std::uint64_t floor() const noexcept;
  // The largest error of any key held: no count is more than this too high.
  [[nodiscard]] std::uint64_t max_error() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::size_t capacity_;
  std::uint64_t total_ = 0;
};

}  // namespace conveyor::stages
