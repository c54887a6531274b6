// Tracked: an element type that counts its live instances, so that a test can prove that every
// element it put into a container was destroyed exactly once (nothing leaked, nothing destroyed
// twice).
//
// It is as demanding as an element can be: no default constructor, no copy, no assignment, only a
// noexcept move. A container that needs more does not compile with it. A moved-from instance reads
// `moved_from`, so a test can also see whether a value was taken or left alone.
//
// The count is process-wide. TrackedLeakCheck is a fixture that starts every test at zero and fails
// the test if anything is still alive at its end.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace conveyor::testing {

class Tracked {
 public:
  static constexpr std::int64_t moved_from = -1;

  explicit Tracked(std::int64_t value) : value_(value) {
    alive_.fetch_add(1, std::memory_order_relaxed);
  }
  Tracked(Tracked&& other) noexcept : value_(other.value_) {
    other.value_ = moved_from;
    alive_.fetch_add(1, std::memory_order_relaxed);
  }
  Tracked(const Tracked&) = delete;
  Tracked& operator=(const Tracked&) = delete;
  Tracked& operator=(Tracked&&) = delete;
  ~Tracked() { alive_.fetch_sub(1, std::memory_order_relaxed); }

  std::int64_t value() const { return value_; }

  // Relaxed: read after the threads that touched the elements were joined, which orders it.
  static std::int64_t alive() { return alive_.load(std::memory_order_relaxed); }
  static void reset_alive() { alive_.store(0, std::memory_order_relaxed); }

 private:
  static inline std::atomic<std::int64_t> alive_{0};
  std::int64_t value_;
};

static_assert(!std::is_default_constructible_v<Tracked>);
static_assert(!std::is_copy_constructible_v<Tracked>);
static_assert(std::is_nothrow_move_constructible_v<Tracked>);

class TrackedLeakCheck : public ::testing::Test {
 protected:
  void SetUp() override { Tracked::reset_alive(); }
  void TearDown() override { EXPECT_EQ(Tracked::alive(), 0) << "an element leaked"; }
};

}  // namespace conveyor::testing
