// Unit tests for conveyor::sync::BoundedQueue and MpmcBoundedQueue. The two share one public API
// and one contract, so every test of that contract (each member and state change, element
// lifetimes, capacity) runs on both. BoundedQueue's single-producer/single-consumer role checks
// follow; MpmcBoundedQueue's many-callers tests are in mpmc_bounded_queue_test.cpp.
#include "conveyor/sync/bounded_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/sync/mpmc_bounded_queue.hpp"
#include "tracked.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::BoundedQueue;
using conveyor::sync::MpmcBoundedQueue;
using conveyor::testing::Tracked;
using conveyor::testing::TrackedLeakCheck;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

// The type parameters name a queue template; a test picks the element type.
// close_from_any_thread: MpmcBoundedQueue::close() may race with pushes from other threads;
// BoundedQueue::close() belongs to its producer, like push (another thread stops it with abort()).
struct SingleProducerSingleConsumer {
  template <class T>
  using Of = BoundedQueue<T>;
  static constexpr const char* name = "BoundedQueue";
  static constexpr bool close_from_any_thread = false;
};
struct ManyProducersManyConsumers {
  template <class T>
  using Of = MpmcBoundedQueue<T>;
  static constexpr const char* name = "MpmcBoundedQueue";
  static constexpr bool close_from_any_thread = true;
};

template <class Kind, class T>
using Queue = typename Kind::template Of<T>;

using QueueKinds = ::testing::Types<SingleProducerSingleConsumer, ManyProducersManyConsumers>;

// Names the instantiations after the queue, e.g.
// QueueTest/MpmcBoundedQueue.CapacityOneHandsOverInOrder.
struct QueueName {
  template <class Kind>
  static std::string GetName(int) {
    return Kind::name;
  }
};

template <class Kind>
class QueueTest : public TrackedLeakCheck {};
TYPED_TEST_SUITE(QueueTest, QueueKinds, QueueName);

TYPED_TEST(QueueTest, ReportsTheCapacityAskedFor) {
  for (std::size_t capacity : {1u, 3u, 64u, 1000u}) {
    Queue<TypeParam, int> queue(capacity);
    EXPECT_EQ(queue.capacity(), capacity);
    int value = 0;
    for (std::size_t i = 0; i < capacity; ++i)
      EXPECT_TRUE(queue.try_push(value));
    EXPECT_FALSE(queue.try_push(value)) << "holds more than " << capacity;
    EXPECT_EQ(queue.size_approx(), capacity);
  }
}

TYPED_TEST(QueueTest, CapacityOneHandsOverInOrder) {
  Queue<TypeParam, int> queue(1);
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(queue.push(i));
    int extra = 99;
    EXPECT_FALSE(queue.try_push(extra));
    EXPECT_EQ(queue.pop(), i);
  }
}

TYPED_TEST(QueueTest, KeepsFifoOrderAcrossWrapAround) {
  Queue<TypeParam, int> queue(5);
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

TYPED_TEST(QueueTest, TryPushOnFullLeavesTheValueAlone) {
  Queue<TypeParam, std::unique_ptr<int>> queue(2);
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

TYPED_TEST(QueueTest, TryPopOnEmptyReturnsNothing) {
  Queue<TypeParam, int> queue(4);
  EXPECT_EQ(queue.try_pop(), std::nullopt);
  int value = 7;
  ASSERT_TRUE(queue.try_push(value));
  EXPECT_EQ(queue.try_pop(), 7);
  EXPECT_EQ(queue.try_pop(), std::nullopt);
}

TYPED_TEST(QueueTest, SizeApproxFollowsPushesAndPops) {
  Queue<TypeParam, int> queue(8);
  EXPECT_EQ(queue.size_approx(), 0u);
  queue.push(1);
  queue.push(2);
  queue.push(3);
  EXPECT_EQ(queue.size_approx(), 3u);
  queue.pop();
  EXPECT_EQ(queue.size_approx(), 2u);
}

TYPED_TEST(QueueTest, BulkFormsMoveBatchesAcrossWrapAround) {
  Queue<TypeParam, int> queue(5);
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

TYPED_TEST(QueueTest, PushBulkLargerThanCapacityBlocksUntilTheConsumerMakesRoom) {
  Watchdog watchdog;
  Queue<TypeParam, int> queue(3);
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

TYPED_TEST(QueueTest, PushBulkStopsAtCloseAndReportsHowManyWentIn) {
  if constexpr (!TypeParam::close_from_any_thread) {
    GTEST_SKIP() << "close() belongs to the producer here; abort() is tested below";
  }
  Watchdog watchdog;
  Queue<TypeParam, Tracked> queue(2);
  std::vector<Tracked> input;
  for (int i = 0; i < 10; ++i)
    input.emplace_back(i);
  std::size_t pushed = 0;
  std::thread producer([&] { pushed = queue.push_bulk(input.begin(), input.end()); });
  // The producer fills the ring and blocks on the third item; take one, then end the stream.
  EXPECT_EQ(queue.pop()->value(), 0);
  queue.close();
  producer.join();
  std::vector<int> rest;
  while (auto item = queue.pop())
    rest.push_back(item->value());
  EXPECT_GE(pushed, 2u);
  EXPECT_LE(pushed, 3u);
  EXPECT_EQ(rest.size(), pushed - 1);
  for (std::size_t i = 0; i < rest.size(); ++i)
    EXPECT_EQ(rest[i], static_cast<int>(i) + 1);
  input.clear();
}

TYPED_TEST(QueueTest, PopBulkReturnsZeroAtTheEndOfStream) {
  Queue<TypeParam, int> queue(4);
  queue.push(1);
  queue.close();
  std::vector<int> output;
  EXPECT_EQ(queue.pop_bulk(std::back_inserter(output), 4), 1u);
  EXPECT_EQ(queue.pop_bulk(std::back_inserter(output), 4), 0u);
  EXPECT_EQ(output, std::vector<int>{1});
}

TYPED_TEST(QueueTest, CloseDrainsWhatIsLeftInOrderThenEnds) {
  Queue<TypeParam, Tracked> queue(4);
  EXPECT_FALSE(queue.closed());
  for (int i = 0; i < 3; ++i)
    queue.push(Tracked(i));
  queue.close();
  EXPECT_TRUE(queue.closed());
  EXPECT_FALSE(queue.push(Tracked(99)));
  Tracked kept(98);
  EXPECT_FALSE(queue.try_push(kept));
  EXPECT_EQ(kept.value(), 98);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(queue.pop()->value(), i);
  EXPECT_EQ(queue.pop(), std::nullopt);
  EXPECT_EQ(queue.try_pop(), std::nullopt);
  queue.close();  // idempotent
  EXPECT_EQ(queue.pop(), std::nullopt);
}

TYPED_TEST(QueueTest, PopOnAClosedEmptyQueueReturnsAtOnce) {
  Watchdog watchdog;
  Queue<TypeParam, int> queue(1);
  queue.close();
  EXPECT_EQ(queue.pop(), std::nullopt);
}

TYPED_TEST(QueueTest, BlockedPopWakesForAPush) {
  Watchdog watchdog;
  Queue<TypeParam, int> queue(2);
  std::thread consumer([&] { EXPECT_EQ(queue.pop(), 42); });
  std::this_thread::sleep_for(20ms);  // let it sleep; the test passes either way
  EXPECT_TRUE(queue.push(42));
  consumer.join();
}

TYPED_TEST(QueueTest, BlockedPopWakesForATryPush) {
  Watchdog watchdog;
  Queue<TypeParam, int> queue(2);
  std::thread consumer([&] { EXPECT_EQ(queue.pop(), 42); });
  std::this_thread::sleep_for(20ms);
  int value = 42;
  EXPECT_TRUE(queue.try_push(value));
  consumer.join();
}

TYPED_TEST(QueueTest, BlockedPushWakesForAPop) {
  Watchdog watchdog;
  Queue<TypeParam, int> queue(1);
  queue.push(1);
  std::thread producer([&] { EXPECT_TRUE(queue.push(2)); });
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(queue.try_pop(), 1);
  producer.join();
  EXPECT_EQ(queue.pop(), 2);
}

TYPED_TEST(QueueTest, CloseWakesABlockedPop) {
  Watchdog watchdog;
  Queue<TypeParam, int> empty(1);
  std::thread consumer([&] { EXPECT_EQ(empty.pop(), std::nullopt); });
  std::this_thread::sleep_for(20ms);
  empty.close();  // the producer's role: nobody else pushes
  consumer.join();
}

TYPED_TEST(QueueTest, CloseFromAnotherThreadWakesABlockedPush) {
  if constexpr (!TypeParam::close_from_any_thread) {
    GTEST_SKIP() << "close() belongs to the producer here; abort() wakes a blocked push";
  }
  Watchdog watchdog;
  Queue<TypeParam, int> full(1);
  full.push(1);
  std::thread producer([&] { EXPECT_FALSE(full.push(2)); });
  std::this_thread::sleep_for(20ms);
  full.close();
  producer.join();
  EXPECT_EQ(full.pop(), 1);
  EXPECT_EQ(full.pop(), std::nullopt);
}

TYPED_TEST(QueueTest, AbortWakesABlockedPopAndABlockedPush) {
  Watchdog watchdog;
  Queue<TypeParam, Tracked> empty(1);
  std::thread consumer([&] { EXPECT_EQ(empty.pop(), std::nullopt); });
  Queue<TypeParam, Tracked> full(1);
  full.push(Tracked(1));
  std::thread producer([&] { EXPECT_FALSE(full.push(Tracked(2))); });
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
  EXPECT_EQ(Tracked::alive(), 0);
}

TYPED_TEST(QueueTest, AbortDropsPendingItemsOnTheNextPop) {
  Queue<TypeParam, Tracked> queue(8);
  for (int i = 0; i < 5; ++i)
    queue.push(Tracked(i));
  EXPECT_EQ(Tracked::alive(), 5);
  queue.abort();
  EXPECT_TRUE(queue.closed());
  EXPECT_EQ(queue.pop(), std::nullopt);
  EXPECT_EQ(Tracked::alive(), 0);
  EXPECT_FALSE(queue.push(Tracked(9)));
  std::vector<Tracked> output;
  EXPECT_EQ(queue.pop_bulk(std::back_inserter(output), 4), 0u);
  queue.abort();  // idempotent
}

TYPED_TEST(QueueTest, DestructorDestroysWhatIsStillQueued) {
  {
    Queue<TypeParam, Tracked> queue(4);
    for (int i = 0; i < 7; ++i) {  // wraps, so the leftovers straddle the end of the storage
      queue.push(Tracked(i));
      if (i % 2 == 0) queue.pop();
    }
    EXPECT_GT(Tracked::alive(), 0);
  }
  {
    Queue<TypeParam, Tracked> queue(4);
    queue.push(Tracked(1));
    queue.abort();  // no consumer call: the destructor drops it
  }
  EXPECT_EQ(Tracked::alive(), 0);
}

TYPED_TEST(QueueTest, MoveOnlyElementsAreNeverLeaked) {
  {
    Queue<TypeParam, std::unique_ptr<Tracked>> queue(3);
    queue.push(std::make_unique<Tracked>(1));
    queue.push(std::make_unique<Tracked>(2));
    EXPECT_EQ((*queue.pop())->value(), 1);
    std::vector<std::unique_ptr<Tracked>> batch;
    batch.push_back(std::make_unique<Tracked>(3));
    EXPECT_EQ(queue.push_bulk(batch.begin(), batch.end()), 1u);
    queue.push(std::make_unique<Tracked>(4));  // left for the destructor
  }
  {
    Queue<TypeParam, std::unique_ptr<Tracked>> queue(3);
    queue.push(std::make_unique<Tracked>(1));
    queue.abort();
    EXPECT_EQ(queue.pop(), std::nullopt);
    EXPECT_EQ(Tracked::alive(), 0);
  }
  EXPECT_EQ(Tracked::alive(), 0);
}

TYPED_TEST(QueueTest, NonDefaultConstructibleTypeRoundTrips) {
  static_assert(!std::is_default_constructible_v<Tracked>);
  Queue<TypeParam, Tracked> queue(2);
  queue.push(Tracked(5));
  Tracked value(6);
  EXPECT_TRUE(queue.try_push(value));
  EXPECT_EQ(queue.pop()->value(), 5);
  EXPECT_EQ(queue.try_pop()->value(), 6);
}

TYPED_TEST(QueueTest, PushBulkFromASinglePassRange) {
  Queue<TypeParam, int> queue(8);
  std::istringstream text("1 2 3");
  EXPECT_EQ(queue.push_bulk(std::istream_iterator<int>(text), std::istream_iterator<int>()), 3u);
  std::vector<int> output;
  EXPECT_EQ(queue.pop_bulk(std::back_inserter(output), 8), 3u);
  EXPECT_EQ(output, (std::vector<int>{1, 2, 3}));
}

template <class Kind>
class QueueDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};
TYPED_TEST_SUITE(QueueDeathTest, QueueKinds, QueueName);

TYPED_TEST(QueueDeathTest, ZeroCapacityIsAContractViolation) {
  using IntQueue = Queue<TypeParam, int>;
  EXPECT_DEATH(IntQueue queue(0),
               std::string("contract violation: ") + TypeParam::name + ": the capacity");
}

TYPED_TEST(QueueDeathTest, PopBulkOfZeroIsAContractViolation) {
  Queue<TypeParam, int> queue(1);
  std::vector<int> output;
  EXPECT_DEATH(queue.pop_bulk(std::back_inserter(output), 0), "contract violation");
}

// The single-producer/single-consumer roles are guarded only in debug builds.
class BoundedQueueDeathTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef NDEBUG
    GTEST_SKIP() << "the role guard is checked only in debug builds";
#endif
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }

  // `first` blocks inside the queue on a thread of its own; `second` keeps calling on this thread
  // until it runs into the first and the role guard aborts with `message`.
  template <class First, class Second>
  static void expect_clash(bool start_full, First first, Second second, const char* message) {
    Watchdog watchdog;
    EXPECT_DEATH(
        {
          BoundedQueue<int> queue(1);
          if (start_full) queue.push(1);
          std::thread blocked([&] { first(queue); });
          for (;;) {
            second(queue);
            std::this_thread::sleep_for(1ms);
          }
        },
        message);
  }
};

TEST_F(BoundedQueueDeathTest, TwoProducersAtOnceIsAContractViolation) {
  expect_clash(
      true, [](BoundedQueue<int>& queue) { queue.push(2); },
      [](BoundedQueue<int>& queue) {
        int value = 3;
        (void)queue.try_push(value);
      },
      "contract violation: BoundedQueue: two threads are pushing at once");
}

TEST_F(BoundedQueueDeathTest, CloseWhileAnotherThreadPushesIsAContractViolation) {
  Watchdog watchdog;
  EXPECT_DEATH(
      {
        BoundedQueue<int> queue(1);
        queue.push(1);
        std::thread blocked([&] { queue.push(2); });  // full: blocks inside push
        std::this_thread::sleep_for(100ms);
        queue.close();
        blocked.join();
      },
      "contract violation: BoundedQueue: two threads are pushing at once");
}

TEST_F(BoundedQueueDeathTest, TwoConsumersAtOnceIsAContractViolation) {
  expect_clash(
      false, [](BoundedQueue<int>& queue) { queue.pop(); },
      [](BoundedQueue<int>& queue) { (void)queue.try_pop(); },
      "contract violation: BoundedQueue: two threads are popping at once");
}

}  // namespace
