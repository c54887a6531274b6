// Unit tests for conveyor::sync::CriticalRegion, and the paper's CCR group lock built on it for
// any number of groups.
#include "conveyor/sync/critical_region.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "stress.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::CriticalRegion;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

TEST(CriticalRegion, StartsWithTheInitialState) {
  CriticalRegion<int> region(42);
  EXPECT_EQ(region.enter([](int& value) { return value; }), 42);
  CriticalRegion<std::string> empty;
  EXPECT_TRUE(empty.enter([](std::string& text) { return text.empty(); }));
}

TEST(CriticalRegion, EnterRunsTheActionAndReturnsItsResult) {
  CriticalRegion<int> region;
  region.enter([](int& value) { value = 7; });
  EXPECT_EQ(region.enter([](int& value) { return value * 2; }), 14);
}

TEST(CriticalRegion, ReturnsReferencesAsReferences) {
  CriticalRegion<int> region(3);
  int& inside = region.enter([](int& value) -> int& { return value; });
  static_assert(
      std::is_same_v<decltype(region.enter([](int& value) -> int& { return value; })), int&>);
  EXPECT_EQ(inside, 3);
}

TEST(CriticalRegion, EnterWhenRunsAtOnceIfThePredicateHolds) {
  CriticalRegion<int> region(5);
  const int seen = region.enter_when([](const int& value) { return value == 5; },
                                     [](int& value) { return value++; });
  EXPECT_EQ(seen, 5);
  EXPECT_EQ(region.enter([](int& value) { return value; }), 6);
}

TEST(CriticalRegion, EnterWhenWaitsUntilAnotherThreadMakesThePredicateTrue) {
  Watchdog watchdog;
  CriticalRegion<int> region(0);
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    region.enter_when([](const int& value) { return value >= 3; }, [](int& value) { value = 100; });
    done.store(true, std::memory_order_release);
  });
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(2ms);
    EXPECT_FALSE(done.load(std::memory_order_acquire));
    region.enter([](int& value) { ++value; });  // each exit re-evaluates the predicate
  }
  waiter.join();
  EXPECT_EQ(region.enter([](int& value) { return value; }), 100);
}

TEST(CriticalRegion, AWaiterDoesNotHoldTheRegion) {
  Watchdog watchdog;
  CriticalRegion<bool> region(false);
  std::thread waiter([&] {
    region.enter_when([](const bool& open) { return open; }, [](bool& open) { open = false; });
  });
  std::this_thread::sleep_for(5ms);
  // If the waiter held the region, this would deadlock (the paper's first attempt).
  region.enter([](bool& open) { open = true; });
  waiter.join();
  EXPECT_FALSE(region.enter([](bool& open) { return open; }));
}

TEST(CriticalRegion, AThrowingActionLeavesTheRegion) {
  Watchdog watchdog;
  CriticalRegion<int> region(0);
  EXPECT_THROW(region.enter([](int&) -> int { throw std::runtime_error("action"); }),
               std::runtime_error);
  EXPECT_THROW(region.enter_when([](const int&) -> bool { throw std::runtime_error("predicate"); },
                                 [](int&) {}),
               std::runtime_error);
  EXPECT_EQ(region.enter([](int& value) { return ++value; }), 1);
}

TEST(CriticalRegion, ActionsAreExclusive) {
  Watchdog watchdog;
  CriticalRegion<std::uint64_t> region(0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20'000; ++i)
        region.enter([](std::uint64_t& value) { ++value; });
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(region.enter([](std::uint64_t& value) { return value; }), 80'000u);
}

// The paper's CCR group lock, generalised to n groups: enter when no other group is inside.
class RegionGroupLock {
 public:
  explicit RegionGroupLock(std::size_t groups) : region_(std::vector<int>(groups, 0)) {}

  void claim(std::size_t group) {
    region_.enter_when(
        [group](const std::vector<int>& holders) {
          for (std::size_t other = 0; other < holders.size(); ++other) {
            if (other != group && holders[other] != 0) return false;
          }
          return true;
        },
        [group](std::vector<int>& holders) { ++holders[group]; });
  }

  void release(std::size_t group) {
    region_.enter([group](std::vector<int>& holders) { --holders[group]; });
  }

 private:
  CriticalRegion<std::vector<int>> region_;
};

TEST(CriticalRegion, GroupLockBuiltOnItExcludesGroups) {
  Watchdog watchdog;
  constexpr std::size_t groups = 4;
  constexpr int threads_per_group = 2;
  const int loops =
      static_cast<int>(std::min<std::uint64_t>(2'000, conveyor::testing::stress_items() / 1'000));
  RegionGroupLock lock(groups);
  std::vector<std::atomic<int>> inside(groups);
  std::atomic<int> goofups{0};
  std::atomic<int> entries{0};
  std::vector<std::thread> threads;
  for (std::size_t group = 0; group < groups; ++group) {
    for (int t = 0; t < threads_per_group; ++t) {
      threads.emplace_back([&, group] {
        for (int i = 0; i < loops; ++i) {
          lock.claim(group);
          inside[group].fetch_add(1, std::memory_order_relaxed);
          for (std::size_t other = 0; other < groups; ++other) {
            if (other != group && inside[other].load(std::memory_order_relaxed) != 0) {
              goofups.fetch_add(1, std::memory_order_relaxed);
            }
          }
          if (i % 64 == 0) std::this_thread::yield();
          entries.fetch_add(1, std::memory_order_relaxed);
          inside[group].fetch_sub(1, std::memory_order_relaxed);
          lock.release(group);
        }
      });
    }
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(goofups.load(), 0);
  EXPECT_EQ(entries.load(), static_cast<int>(groups) * threads_per_group * loops);
}

}  // namespace
