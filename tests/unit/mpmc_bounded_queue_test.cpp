// Unit tests for conveyor::sync::MpmcBoundedQueue: every member and state change, element
// lifetimes, many blocked callers woken at once, and the contract.
#include "conveyor/sync/mpmc_bounded_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iterator>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "watchdog.hpp"

namespace {

using conveyor::sync::MpmcBoundedQueue;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

// Counts live instances so that a test can prove every element was destroyed exactly once. It has
// no default constructor and no assignment.
struct Counted {
  static inline std::atomic<int> alive{0};
  explicit Counted(int v) : value(v) { alive.fetch_add(1, std::memory_order_relaxed); }
  Counted(Counted&& other) noexcept : value(other.value) {
    alive.fetch_add(1, std::memory_order_relaxed);
  }
  Counted& operator=(Counted&&) = delete;
  ~Counted() { alive.fetch_sub(1, std::memory_order_relaxed); }
  const int value;
};

class MpmcBoundedQueueTest : public ::testing::Test {
 protected:
  void SetUp() override { Counted::alive.store(0); }
  void TearDown() override { EXPECT_EQ(Counted::alive.load(), 0) << "an element leaked"; }
};

TEST_F(MpmcBoundedQueueTest, ReportsTheCapacityAskedFor) {
  for (std::size_t capacity : {1u, 3u, 64u, 1000u}) {
    MpmcBoundedQueue<int> queue(capacity);
    EXPECT_EQ(queue.capacity(), capacity);
    int value = 0;
    for (std::size_t i = 0; i < capacity; ++i)
      EXPECT_TRUE(queue.try_push(value));
    EXPECT_FALSE(queue.try_push(value)) << "holds more than " << capacity;
    EXPECT_EQ(queue.size_approx(), capacity);
  }
}

TEST_F(MpmcBoundedQueueTest, CapacityOneHandsOverInOrder) {
  MpmcBoundedQueue<int> queue(1);
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(queue.push(i));
    int extra = 99;
    EXPECT_FALSE(queue.try_push(extra));
    EXPECT_EQ(queue.pop(), i);
  }
}

TEST_F(MpmcBoundedQueueTest, KeepsFifoOrderAcrossWrapAround) {
  MpmcBoundedQueue<int> queue(5);
  int next_in = 0;
  int next_out = 0;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 3; ++i)
      EXPECT_TRUE(queue.push(next_in++));
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(queue.pop(), next_out++);
  }
  EXPECT_EQ(queue.size_approx(), 0u);
}

TEST_F(MpmcBoundedQueueTest, TryPushOnFullLeavesTheValueAlone) {
  MpmcBoundedQueue<std::unique_ptr<int>> queue(2);
  auto first = std::make_unique<int>(1);
  auto second = std::make_unique<int>(2);
  auto third = std::make_unique<int>(3);
  EXPECT_TRUE(queue.try_push(first));
  EXPECT_EQ(first, nullptr);
  EXPECT_TRUE(queue.try_push(second));
  EXPECT_FALSE(queue.try_push(third));
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(*third, 3);
  EXPECT_EQ(**queue.try_pop(), 1);
  EXPECT_TRUE(queue.try_push(third));
  EXPECT_EQ(**queue.pop(), 2);
  EXPECT_EQ(**queue.pop(), 3);
}

TEST_F(MpmcBoundedQueueTest, TryPopOnEmptyReturnsNothing) {
  MpmcBoundedQueue<int> queue(4);
  EXPECT_EQ(queue.try_pop(), std::nullopt);
  int value = 7;
  ASSERT_TRUE(queue.try_push(value));
  EXPECT_EQ(queue.try_pop(), 7);
  EXPECT_EQ(queue.try_pop(), std::nullopt);
}

TEST_F(MpmcBoundedQueueTest, SizeApproxFollowsPushesAndPops) {
  MpmcBoundedQueue<int> queue(8);
  EXPECT_EQ(queue.size_approx(), 0u);
  queue.push(1);
  queue.push(2);
  queue.push(3);
  EXPECT_EQ(queue.size_approx(), 3u);
  queue.pop();
  EXPECT_EQ(queue.size_approx(), 2u);
}

TEST_F(MpmcBoundedQueueTest, BulkFormsMoveBatchesAcrossWrapAround) {
  MpmcBoundedQueue<int> queue(5);
  std::vector<int> input{0, 1, 2, 3};
  EXPECT_EQ(queue.push_bulk(input.begin(), input.end()), 4u);
  std::vector<int> output;
  EXPECT_EQ(queue.pop_bulk(std::back_inserter(output), 3), 3u);  // partial: fewer than there are
  EXPECT_EQ(output, (std::vector<int>{0, 1, 2}));
  std::vector<int> more{4, 5, 6, 7};  // wraps around the end of the storage
  EXPECT_EQ(queue.push_bulk(more.begin(), more.end()), 4u);
  output.clear();
  EXPECT_EQ(queue.pop_bulk(std::back_inserter(output), 100), 5u);
  EXPECT_EQ(output, (std::vector<int>{3, 4, 5, 6, 7}));
}

TEST_F(MpmcBoundedQueueTest, PushBulkLargerThanCapacityBlocksUntilTheConsumerMakesRoom) {
  Watchdog watchdog;
  MpmcBoundedQueue<int> queue(3);
  std::vector<int> input(100);
  for (int i = 0; i < 100; ++i)
    input[static_cast<std::size_t>(i)] = i;
  std::thread producer([&] {
    EXPECT_EQ(queue.push_bulk(input.begin(), input.end()), 100u);
    queue.close();
  });
  std::vector<int> output;
  while (queue.pop_bulk(std::back_inserter(output), 2) > 0) {
  }
  producer.join();
  EXPECT_EQ(output, input);
}

TEST_F(MpmcBoundedQueueTest, PushBulkStopsAtCloseAndReportsHowManyWentIn) {
  Watchdog watchdog;
  MpmcBoundedQueue<Counted> queue(2);
  std::vector<Counted> input;
  for (int i = 0; i < 10; ++i)
    input.emplace_back(i);
  std::size_t pushed = 0;
  std::thread producer([&] { pushed = queue.push_bulk(input.begin(), input.end()); });
  // The producer fills the ring and blocks on the third item; take one, then end the stream.
  EXPECT_EQ(queue.pop()->value, 0);
  queue.close();
  producer.join();
  std::vector<int> rest;
  while (auto item = queue.pop())
    rest.push_back(item->value);
  EXPECT_GE(pushed, 2u);
  EXPECT_LE(pushed, 3u);
  EXPECT_EQ(rest.size(), pushed - 1);
  for (std::size_t i = 0; i < rest.size(); ++i)
    EXPECT_EQ(rest[i], static_cast<int>(i) + 1);
  input.clear();
}

TEST_F(MpmcBoundedQueueTest, PopBulkReturnsZeroAtTheEndOfStream) {
  MpmcBoundedQueue<int> queue(4);
  queue.push(1);
  queue.close();
  std::vector<int> output;
  EXPECT_EQ(queue.pop_bulk(std::back_inserter(output), 4), 1u);
  EXPECT_EQ(queue.pop_bulk(std::back_inserter(output), 4), 0u);
  EXPECT_EQ(output, std::vector<int>{1});
}

TEST_F(MpmcBoundedQueueTest, CloseDrainsWhatIsLeftInOrderThenEnds) {
  MpmcBoundedQueue<Counted> queue(4);
  EXPECT_FALSE(queue.closed());
  for (int i = 0; i < 3; ++i)
    queue.push(Counted(i));
  queue.close();
  EXPECT_TRUE(queue.closed());
  EXPECT_FALSE(queue.push(Counted(99)));
  Counted kept(98);
  EXPECT_FALSE(queue.try_push(kept));
  EXPECT_EQ(kept.value, 98);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(queue.pop()->value, i);
  EXPECT_EQ(queue.pop(), std::nullopt);
  EXPECT_EQ(queue.try_pop(), std::nullopt);
  queue.close();  // idempotent
  EXPECT_EQ(queue.pop(), std::nullopt);
}

TEST_F(MpmcBoundedQueueTest, PopOnAClosedEmptyQueueReturnsAtOnce) {
  Watchdog watchdog;
  MpmcBoundedQueue<int> queue(1);
  queue.close();
  EXPECT_EQ(queue.pop(), std::nullopt);
}

TEST_F(MpmcBoundedQueueTest, BlockedPopWakesForAPush) {
  Watchdog watchdog;
  MpmcBoundedQueue<int> queue(2);
  std::thread consumer([&] { EXPECT_EQ(queue.pop(), 42); });
  std::this_thread::sleep_for(20ms);  // let it sleep; the test passes either way
  EXPECT_TRUE(queue.push(42));
  consumer.join();
}

TEST_F(MpmcBoundedQueueTest, BlockedPopWakesForATryPush) {
  Watchdog watchdog;
  MpmcBoundedQueue<int> queue(2);
  std::thread consumer([&] { EXPECT_EQ(queue.pop(), 42); });
  std::this_thread::sleep_for(20ms);
  int value = 42;
  EXPECT_TRUE(queue.try_push(value));
  consumer.join();
}

TEST_F(MpmcBoundedQueueTest, BlockedPushWakesForAPop) {
  Watchdog watchdog;
  MpmcBoundedQueue<int> queue(1);
  queue.push(1);
  std::thread producer([&] { EXPECT_TRUE(queue.push(2)); });
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(queue.try_pop(), 1);
  producer.join();
  EXPECT_EQ(queue.pop(), 2);
}

TEST_F(MpmcBoundedQueueTest, CloseWakesABlockedPopAndABlockedPush) {
  Watchdog watchdog;
  MpmcBoundedQueue<int> empty(1);
  std::thread consumer([&] { EXPECT_EQ(empty.pop(), std::nullopt); });
  MpmcBoundedQueue<int> full(1);
  full.push(1);
  std::thread producer([&] { EXPECT_FALSE(full.push(2)); });
  std::this_thread::sleep_for(20ms);
  empty.close();
  full.close();
  consumer.join();
  producer.join();
  EXPECT_EQ(full.pop(), 1);
  EXPECT_EQ(full.pop(), std::nullopt);
}

TEST_F(MpmcBoundedQueueTest, AbortWakesABlockedPopAndABlockedPush) {
  Watchdog watchdog;
  MpmcBoundedQueue<Counted> empty(1);
  std::thread consumer([&] { EXPECT_EQ(empty.pop(), std::nullopt); });
  MpmcBoundedQueue<Counted> full(1);
  full.push(Counted(1));
  std::thread producer([&] { EXPECT_FALSE(full.push(Counted(2))); });
  std::this_thread::sleep_for(20ms);
  std::thread aborter([&] {
    empty.abort();
    full.abort();
  });
  aborter.join();
  consumer.join();
  producer.join();
  EXPECT_TRUE(full.closed());
  EXPECT_EQ(full.pop(), std::nullopt);  // the pending item is dropped, not returned
  EXPECT_EQ(Counted::alive.load(), 0);
}

TEST_F(MpmcBoundedQueueTest, AbortDropsPendingItemsOnTheNextPop) {
  MpmcBoundedQueue<Counted> queue(8);
  for (int i = 0; i < 5; ++i)
    queue.push(Counted(i));
  EXPECT_EQ(Counted::alive.load(), 5);
  queue.abort();
  EXPECT_TRUE(queue.closed());
  EXPECT_EQ(queue.pop(), std::nullopt);
  EXPECT_EQ(Counted::alive.load(), 0);
  EXPECT_FALSE(queue.push(Counted(9)));
  std::vector<Counted> output;
  EXPECT_EQ(queue.pop_bulk(std::back_inserter(output), 4), 0u);
  queue.abort();  // idempotent
}

TEST_F(MpmcBoundedQueueTest, DestructorDestroysWhatIsStillQueued) {
  {
    MpmcBoundedQueue<Counted> queue(4);
    for (int i = 0; i < 7; ++i) {  // wraps, so the leftovers straddle the end of the storage
      queue.push(Counted(i));
      if (i % 2 == 0) queue.pop();
    }
    EXPECT_GT(Counted::alive.load(), 0);
  }
  {
    MpmcBoundedQueue<Counted> queue(4);
    queue.push(Counted(1));
    queue.abort();  // no consumer call: the destructor drops it
  }
  EXPECT_EQ(Counted::alive.load(), 0);
}

TEST_F(MpmcBoundedQueueTest, MoveOnlyElementsAreNeverLeaked) {
  {
    MpmcBoundedQueue<std::unique_ptr<Counted>> queue(3);
    queue.push(std::make_unique<Counted>(1));
    queue.push(std::make_unique<Counted>(2));
    EXPECT_EQ((*queue.pop())->value, 1);
    std::vector<std::unique_ptr<Counted>> batch;
    batch.push_back(std::make_unique<Counted>(3));
    EXPECT_EQ(queue.push_bulk(batch.begin(), batch.end()), 1u);
    queue.push(std::make_unique<Counted>(4));  // left for the destructor
  }
  {
    MpmcBoundedQueue<std::unique_ptr<Counted>> queue(3);
    queue.push(std::make_unique<Counted>(1));
    queue.abort();
    EXPECT_EQ(queue.pop(), std::nullopt);
    EXPECT_EQ(Counted::alive.load(), 0);
  }
  EXPECT_EQ(Counted::alive.load(), 0);
}

TEST_F(MpmcBoundedQueueTest, NonDefaultConstructibleTypeRoundTrips) {
  static_assert(!std::is_default_constructible_v<Counted>);
  MpmcBoundedQueue<Counted> queue(2);
  queue.push(Counted(5));
  Counted value(6);
  EXPECT_TRUE(queue.try_push(value));
  EXPECT_EQ(queue.pop()->value, 5);
  EXPECT_EQ(queue.try_pop()->value, 6);
}

TEST(MpmcBoundedQueueDeathTest, ZeroCapacityIsAContractViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(MpmcBoundedQueue<int> queue(0),
               "contract violation: MpmcBoundedQueue: the capacity");
}

TEST(MpmcBoundedQueueDeathTest, PopBulkOfZeroIsAContractViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  MpmcBoundedQueue<int> queue(1);
  std::vector<int> output;
  EXPECT_DEATH(queue.pop_bulk(std::back_inserter(output), 0), "contract violation");
}

TEST_F(MpmcBoundedQueueTest, CloseWakesEveryBlockedConsumerAfterTheDrain) {
  Watchdog watchdog;
  MpmcBoundedQueue<Counted> queue(4);
  std::atomic<int> popped{0};
  std::vector<std::thread> consumers;
  for (int i = 0; i < 4; ++i) {
    consumers.emplace_back([&] {
      while (auto item = queue.pop())
        popped.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(20ms);  // let them sleep; the test passes either way
  for (int i = 0; i < 3; ++i)
    queue.push(Counted(i));
  queue.close();
  for (auto& consumer : consumers)
    consumer.join();
  EXPECT_EQ(popped.load(), 3);
}

TEST_F(MpmcBoundedQueueTest, AbortWakesEveryBlockedProducerAndConsumer) {
  Watchdog watchdog;
  MpmcBoundedQueue<Counted> empty(2);
  MpmcBoundedQueue<Counted> full(2);
  full.push(Counted(1));
  full.push(Counted(2));
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] { EXPECT_EQ(empty.pop(), std::nullopt); });
    threads.emplace_back([&, i] { EXPECT_FALSE(full.push(Counted(10 + i))); });
  }
  std::this_thread::sleep_for(20ms);
  std::thread aborter([&] {
    empty.abort();
    full.abort();
  });
  aborter.join();
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(full.pop(), std::nullopt);
  EXPECT_EQ(Counted::alive.load(), 0);
}

TEST_F(MpmcBoundedQueueTest, PushBulkFromASinglePassRange) {
  MpmcBoundedQueue<int> queue(8);
  std::istringstream text("1 2 3");
  EXPECT_EQ(queue.push_bulk(std::istream_iterator<int>(text), std::istream_iterator<int>()), 3u);
  std::vector<int> output;
  EXPECT_EQ(queue.pop_bulk(std::back_inserter(output), 8), 3u);
  EXPECT_EQ(output, (std::vector<int>{1, 2, 3}));
}

}  // namespace
