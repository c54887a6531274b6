// Shared<T>: a resource used by several groups of threads, never two groups at once, with counts
// of aces and waits.
#include "conveyor/framework/shared.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "settle_time.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Shared;
using conveyor::testing::settle_time;
using conveyor::testing::Watchdog;

TEST(SharedTest, AccessReturnsWhatTheActionReturns) {
  Shared<int> shared("number", {"writers", "readers"}, 41);
  shared.access(0, [](int& value) { ++value; });
  EXPECT_EQ(shared.access(1, [](int& value) { return value; }), 42);
  EXPECT_EQ(shared.name(), "number");
  EXPECT_EQ(shared.groups(), 2U);
}

TEST(SharedTest, GroupsAreFoundByName) {
  Shared<int> shared("number", {"update", "snapshot"});
  EXPECT_EQ(shared.group("update"), 0U);
  EXPECT_EQ(shared.group("snapshot"), 1U);
  EXPECT_THROW((void)shared.group("other"), std::out_of_range);
  EXPECT_THROW(Shared<int>("none", {}), std::invalid_argument);
}

TEST(SharedTest, AnUncontendedAccessIsAnAce) {
  Shared<int> shared("number", {"a", "b"});
  for (int i = 0; i < 5; ++i)
    shared.access(0, [](int&) {});
  const auto stats = shared.stats();
  EXPECT_EQ(stats.name, "number");
  ASSERT_EQ(stats.groups.size(), 2U);
  EXPECT_EQ(stats.groups[0].name, "a");
  EXPECT_EQ(stats.groups[0].entries, 5U);
  EXPECT_EQ(stats.groups[0].aces, 5U);
  EXPECT_EQ(stats.groups[0].waits, 0U);
  EXPECT_EQ(stats.groups[1].entries, 0U);
}

TEST(SharedTest, AnotherGroupWaitsAndTheWaitIsTimed) {
  Watchdog watchdog;
  Shared<int> shared("number", {"a", "b"});
  std::atomic<bool> inside{false};
  std::atomic<bool> release{false};
  std::thread holder([&] {
    shared.access(0, [&](int&) {
      inside.store(true);
      while (!release.load())
        std::this_thread::yield();
    });
  });
  while (!inside.load())
    std::this_thread::yield();
  std::thread waiter([&] { shared.access(1, [](int& value) { value = 1; }); });
  std::this_thread::sleep_for(settle_time());
  release.store(true);
  holder.join();
  waiter.join();
  const auto stats = shared.stats();
  EXPECT_EQ(stats.groups[1].waits, 1U);
  EXPECT_EQ(stats.groups[1].wait.count, 1U);
  EXPECT_GT(stats.groups[1].wait.sum_seconds, 0.0);
}

TEST(SharedTest, TwoGroupsAreNeverInsideTogether) {
  Watchdog watchdog;
  struct Occupancy {
    std::atomic<int> inside[2]{};
  };
  Shared<Occupancy> shared("occupancy", {"left", "right"});
  std::atomic<int> violations{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, group = static_cast<std::size_t>(t % 2)] {
      for (int i = 0; i < 2000; ++i) {
        shared.access(group, [&](Occupancy& o) {
          o.inside[group].fetch_add(1);
          if (o.inside[1 - group].load() != 0) violations.fetch_add(1);
          o.inside[group].fetch_sub(1);
        });
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(violations.load(), 0);
  const auto stats = shared.stats();
  EXPECT_EQ(stats.groups[0].entries + stats.groups[1].entries, 8000U);
  EXPECT_EQ(stats.groups[0].aces + stats.groups[0].waits, stats.groups[0].entries);
}

}  // namespace
