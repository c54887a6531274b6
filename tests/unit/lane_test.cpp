// Unit tests for the framework's Lane: the single-producer, single-consumer ring between two
// workers (a mailbox at capacity 1), its end mark, building and taking elements in their slots,
// and the lifetimes of what it holds.
#include "conveyor/framework/detail/lane.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "tracked.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::detail::Lane;
using conveyor::testing::Tracked;
using conveyor::testing::TrackedLeakCheck;
using conveyor::testing::Watchdog;

using LaneTest = TrackedLeakCheck;

TEST_F(LaneTest, AMailboxHoldsOneElement) {
  Lane<int> lane(1);
  int first = 1;
  int second = 2;
  EXPECT_EQ(lane.free_slots(), 1U);
  ASSERT_TRUE(lane.try_push(first));
  EXPECT_EQ(lane.free_slots(), 0U);
  EXPECT_FALSE(lane.try_push(second));
  EXPECT_EQ(lane.size_approx(), 1U);
  EXPECT_EQ(lane.try_pop(), 1);
  EXPECT_EQ(lane.try_pop(), std::nullopt);
  ASSERT_TRUE(lane.try_push(second));
  EXPECT_EQ(lane.try_pop(), 2);
}

TEST_F(LaneTest, KeepsOrderAcrossTheWrap) {
  Lane<int> lane(3);
  int next_in = 0;
  int next_out = 0;
  for (int round = 0; round < 10; ++round) {
    while (lane.free_slots() > 0) {
      int value = next_in++;
      ASSERT_TRUE(lane.try_push(value));
    }
    EXPECT_EQ(lane.size_approx(), 3U);
    for (int i = 0; i < 2; ++i)
      EXPECT_EQ(lane.try_pop(), next_out++);
  }
  while (auto value = lane.try_pop())
    EXPECT_EQ(*value, next_out++);
  EXPECT_EQ(next_in, next_out);
}

TEST_F(LaneTest, FinishedOnlyWhenClosedAndDrained) {
  Lane<int> lane(4);
  int value = 5;
  ASSERT_TRUE(lane.try_push(value));
  EXPECT_FALSE(lane.finished());
  lane.close();
  EXPECT_FALSE(lane.finished());  // one element still in it
  EXPECT_TRUE(lane.has_element());
  EXPECT_EQ(lane.try_pop(), 5);
  EXPECT_TRUE(lane.finished());
  EXPECT_FALSE(lane.has_element());
}

TEST_F(LaneTest, FailedPushLeavesTheValueAlone) {
  Lane<std::unique_ptr<int>> lane(1);
  auto first = std::make_unique<int>(1);
  auto second = std::make_unique<int>(2);
  ASSERT_TRUE(lane.try_push(first));
  EXPECT_EQ(first, nullptr);
  EXPECT_FALSE(lane.try_push(second));
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(**lane.try_pop(), 1);
}

TEST_F(LaneTest, TryEmplaceUsesItsArgumentsOnlyWhenItPushes) {
  Lane<std::pair<int, Tracked>> lane(1);
  Tracked first(1);
  Tracked second(2);
  ASSERT_TRUE(lane.try_emplace(10, std::move(first)));
  EXPECT_EQ(first.value(), Tracked::moved_from);
  EXPECT_FALSE(lane.try_emplace(20, std::move(second)));  // full
  EXPECT_EQ(second.value(), 2);
  EXPECT_EQ(Tracked::alive(), 3);
  std::optional<std::pair<int, Tracked>> out;
  ASSERT_TRUE(lane.try_pop_into(out));
  EXPECT_EQ(out->first, 10);
  EXPECT_EQ(out->second.value(), 1);
  EXPECT_EQ(Tracked::alive(), 3);  // the slot's element is destroyed, its value lives in `out`
}

TEST_F(LaneTest, TryPopIntoLeavesAnEmptyOptionalOnAnEmptyLane) {
  Lane<Tracked> lane(2);
  std::optional<Tracked> out;
  EXPECT_FALSE(lane.try_pop_into(out));
  EXPECT_FALSE(out.has_value());
  Tracked value(7);
  ASSERT_TRUE(lane.try_push(value));
  ASSERT_TRUE(lane.try_pop_into(out));
  EXPECT_EQ(out->value(), 7);
  EXPECT_EQ(Tracked::alive(), 2);  // `value`, moved from, and `out`
}

TEST_F(LaneTest, FreeAfterPopCountsTheConsumersProgress) {
  Lane<int> lane(4);
  for (int i = 0; i < 4; ++i) {
    int value = i;
    ASSERT_TRUE(lane.try_push(value));
  }
  EXPECT_EQ(lane.free_after_pop(), 0U);
  (void)lane.try_pop();
  (void)lane.try_pop();
  EXPECT_EQ(lane.free_after_pop(), 2U);
  EXPECT_EQ(lane.capacity(), 4U);
}

TEST_F(LaneTest, DestructorDestroysWhatIsLeft) {
  {
    Lane<Tracked> lane(8);
    for (int i = 0; i < 5; ++i) {
      Tracked value(i);
      ASSERT_TRUE(lane.try_push(value));
    }
    (void)lane.try_pop();
    EXPECT_EQ(Tracked::alive(), 4);
  }
  EXPECT_EQ(Tracked::alive(), 0);
}

TEST_F(LaneTest, HandsEveryElementOverBetweenTwoThreads) {
  Watchdog watchdog;
  constexpr int count = 200'000;
  Lane<int> lane(16);
  std::thread producer([&] {
    for (int i = 0; i < count; ++i) {
      int value = i;
      while (!lane.try_push(value))
        std::this_thread::yield();
    }
    lane.close();
  });
  int expected = 0;
  while (!lane.finished()) {
    if (auto value = lane.try_pop()) {
      ASSERT_EQ(*value, expected);
      ++expected;
    } else {
      std::this_thread::yield();
    }
  }
  producer.join();
  EXPECT_EQ(expected, count);
}

using LaneDeathTest = LaneTest;

TEST_F(LaneDeathTest, ZeroCapacityIsAContractViolation) {
  EXPECT_DEATH(Lane<int> lane(0), "capacity must be at least 1");
}

}  // namespace
