// Unit tests for sync::SpscRing: the single-producer, single-consumer ring (a mailbox at
// capacity 1, allocated or with its slot inline), its end mark, building and taking elements in
// their slots, bulk pushes and pops, and the lifetimes of what it holds.
#include "conveyor/sync/spsc_ring.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "tracked.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::RingLayout;
using conveyor::sync::SpscRing;
using conveyor::testing::Tracked;
using conveyor::testing::TrackedLeakCheck;
using conveyor::testing::Watchdog;

using SpscRingTest = TrackedLeakCheck;

// A producer thread pushes make(0), ..., make(count - 1) into `lane`, retrying a full ring after a
// yield, and closes it; this thread pops until the ring is finished and checks that number(item)
// comes in order, each once.
template <class Ring, class Make, class Number>
void hand_over_in_order(Ring& lane, int count, Make make, Number number) {
  std::thread producer([&] {
    for (int i = 0; i < count; ++i) {
      auto value = make(i);
      while (!lane.try_push(value))
        std::this_thread::yield();
    }
    lane.close();
  });
  int expected = 0;
  while (!lane.finished()) {
    if (auto value = lane.try_pop()) {
      ASSERT_EQ(number(*value), expected);
      ++expected;
    } else {
      std::this_thread::yield();
    }
  }
  producer.join();
  EXPECT_EQ(expected, count);
}

TEST_F(SpscRingTest, AMailboxHoldsOneElement) {
  SpscRing<int> lane(1);
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

// The ring of one with its slot beside its indices (Mailbox's) behaves as the allocated one.
TEST_F(SpscRingTest, AnInlineSlotHoldsOneElement) {
  SpscRing<Tracked, RingLayout::inline_slot> lane(1);
  Tracked first(1);
  Tracked second(2);
  EXPECT_EQ(lane.capacity(), 1U);
  ASSERT_TRUE(lane.try_push(first));
  EXPECT_FALSE(lane.try_push(second));
  EXPECT_EQ(lane.size_approx(), 1U);
  EXPECT_EQ(lane.try_pop()->value(), 1);
  EXPECT_EQ(lane.try_pop(), std::nullopt);
  ASSERT_TRUE(lane.try_emplace(3));
  lane.close();
  EXPECT_FALSE(lane.finished());
  EXPECT_EQ(lane.discard(), 1U);
  EXPECT_TRUE(lane.finished());
  EXPECT_EQ(lane.owner_word().load(), 0U);  // the owner's, untouched by the ring
}

// The layouts themselves: the allocated ring's lines are those it always had, and the inline
// ring's owner word shares the tail's line (the second of the object) with a small slot.
TEST_F(SpscRingTest, TheLayoutsPutTheFieldsWhereTheySay) {
  static_assert(sizeof(conveyor::sync::detail::RingIndices) == 5 * 64);
  static_assert(alignof(conveyor::sync::detail::RingIndices) == 64);
  static_assert(sizeof(SpscRing<std::uint64_t>) == sizeof(conveyor::sync::detail::RingIndices));
  SpscRing<std::uint64_t, RingLayout::inline_slot> lane(1);
  const auto start = reinterpret_cast<std::uintptr_t>(&lane);
  const auto word = reinterpret_cast<std::uintptr_t>(&lane.owner_word());
  EXPECT_EQ((word - start) / 64, 1U);
  std::uint64_t value = 42;
  ASSERT_TRUE(lane.try_push(value));
  EXPECT_EQ(lane.try_pop(), 42U);
}

TEST_F(SpscRingTest, AnInlineSlotDestroysWhatIsLeft) {
  {
    SpscRing<Tracked, RingLayout::inline_slot> lane(1);
    Tracked value(7);
    ASSERT_TRUE(lane.try_push(value));
    EXPECT_EQ(Tracked::alive(), 2);  // the moved-from value and the one in the slot
  }
  EXPECT_EQ(Tracked::alive(), 0);
}

TEST_F(SpscRingTest, AnInlineSlotHandsEveryElementOverBetweenTwoThreads) {
  Watchdog watchdog;
  constexpr int count = 100'000;
  SpscRing<std::unique_ptr<int>, RingLayout::inline_slot> lane(1);
  hand_over_in_order(
      lane, count, [](int i) { return std::make_unique<int>(i); },
      [](const std::unique_ptr<int>& value) { return *value; });
}

TEST_F(SpscRingTest, KeepsOrderAcrossTheWrap) {
  SpscRing<int> lane(3);
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

TEST_F(SpscRingTest, FinishedOnlyWhenClosedAndDrained) {
  SpscRing<int> lane(4);
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

TEST_F(SpscRingTest, FailedPushLeavesTheValueAlone) {
  SpscRing<std::unique_ptr<int>> lane(1);
  auto first = std::make_unique<int>(1);
  auto second = std::make_unique<int>(2);
  ASSERT_TRUE(lane.try_push(first));
  EXPECT_EQ(first, nullptr);
  EXPECT_FALSE(lane.try_push(second));
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(**lane.try_pop(), 1);
}

TEST_F(SpscRingTest, TryEmplaceUsesItsArgumentsOnlyWhenItPushes) {
  SpscRing<std::pair<int, Tracked>> lane(1);
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

TEST_F(SpscRingTest, TryPopIntoLeavesAnEmptyOptionalOnAnEmptyLane) {
  SpscRing<Tracked> lane(2);
  std::optional<Tracked> out;
  EXPECT_FALSE(lane.try_pop_into(out));
  EXPECT_FALSE(out.has_value());
  Tracked value(7);
  ASSERT_TRUE(lane.try_push(value));
  ASSERT_TRUE(lane.try_pop_into(out));
  EXPECT_EQ(out->value(), 7);
  EXPECT_EQ(Tracked::alive(), 2);  // `value`, moved from, and `out`
}

TEST_F(SpscRingTest, FreeAfterPopCountsTheConsumersProgress) {
  SpscRing<int> lane(4);
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

TEST_F(SpscRingTest, DestructorDestroysWhatIsLeft) {
  {
    SpscRing<Tracked> lane(8);
    for (int i = 0; i < 5; ++i) {
      Tracked value(i);
      ASSERT_TRUE(lane.try_push(value));
    }
    (void)lane.try_pop();
    EXPECT_EQ(Tracked::alive(), 4);
  }
  EXPECT_EQ(Tracked::alive(), 0);
}

TEST_F(SpscRingTest, HandsEveryElementOverBetweenTwoThreads) {
  Watchdog watchdog;
  constexpr int count = 200'000;
  SpscRing<int> lane(16);
  hand_over_in_order(
      lane, count, [](int i) { return i; }, [](int value) { return value; });
}

// Pushes until the ring is full; how many went in.
template <class T>
int fill(SpscRing<T>& ring) {
  int pushed = 0;
  for (;;) {
    T value(pushed);
    if (!ring.try_push(value)) return pushed;
    ++pushed;
  }
}

TEST_F(SpscRingTest, BulkPushTakesWhatFitsAndAdvancesTheIterator) {
  SpscRing<int> ring(4);
  std::vector<int> values{1, 2, 3, 4, 5, 6};
  auto first = values.begin();
  EXPECT_EQ(ring.try_push_bulk(first, values.end()), 4U);
  EXPECT_EQ(first - values.begin(), 4);
  EXPECT_EQ(ring.try_push_bulk(first, values.end()), 0U);  // full
  EXPECT_EQ(ring.try_pop(), 1);
  EXPECT_EQ(ring.try_push_bulk(first, values.end()), 1U);
  EXPECT_EQ(first - values.begin(), 5);
}

TEST_F(SpscRingTest, BulkPopTakesUpToMaxInOrder) {
  SpscRing<Tracked> ring(8);
  for (int i = 0; i < 6; ++i) {
    Tracked value(i);
    ASSERT_TRUE(ring.try_push(value));
  }
  std::vector<Tracked> out;
  auto inserter = std::back_inserter(out);
  EXPECT_EQ(ring.try_pop_bulk(inserter, 4), 4U);
  EXPECT_EQ(ring.try_pop_bulk(inserter, 4), 2U);
  EXPECT_EQ(ring.try_pop_bulk(inserter, 4), 0U);
  ASSERT_EQ(out.size(), 6U);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(out[static_cast<std::size_t>(i)].value(), i);
  EXPECT_EQ(fill(ring), 8);  // every slot went back to the producer
}

TEST_F(SpscRingTest, DiscardDestroysWhatWasPublishedAndFreesTheSlots) {
  SpscRing<Tracked> ring(4);
  for (int i = 0; i < 3; ++i) {
    Tracked value(i);
    ASSERT_TRUE(ring.try_push(value));
  }
  EXPECT_EQ(ring.discard(), 3U);
  EXPECT_EQ(Tracked::alive(), 0);
  EXPECT_EQ(ring.discard(), 0U);
  EXPECT_EQ(fill(ring), 4);  // every slot went back to the producer
  EXPECT_EQ(ring.discard(), 4U);
}

TEST_F(SpscRingTest, ClosedIsSeenFromAnyThreadAtOnce) {
  SpscRing<int> ring(2);
  int value = 1;
  ASSERT_TRUE(ring.try_push(value));
  EXPECT_FALSE(ring.closed());
  ring.close();
  EXPECT_TRUE(ring.closed());
  EXPECT_FALSE(ring.finished());  // closed, not drained
  EXPECT_TRUE(ring.has_element());
}

using SpscRingDeathTest = SpscRingTest;

TEST_F(SpscRingDeathTest, ZeroCapacityIsAContractViolation) {
  EXPECT_DEATH(SpscRing<int> lane(0), "capacity must be at least 1");
}

TEST_F(SpscRingDeathTest, AnInlineSlotOfMoreThanOneIsAContractViolation) {
  EXPECT_DEATH((SpscRing<int, RingLayout::inline_slot>(2)), "an inline slot is a ring of one");
}

}  // namespace
