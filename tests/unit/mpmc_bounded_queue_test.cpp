// Unit tests for what conveyor::sync::MpmcBoundedQueue adds to the BoundedQueue contract: many
// producers and consumers blocked at once, all woken by close or abort, and the timed push. The
// contract the two queues
// share is tested for both in bounded_queue_test.cpp.
#include "conveyor/sync/mpmc_bounded_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tracked.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::MpmcBoundedQueue;
using conveyor::testing::Tracked;
using conveyor::testing::TrackedLeakCheck;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

using MpmcBoundedQueueTest = TrackedLeakCheck;

TEST_F(MpmcBoundedQueueTest, CloseWakesEveryBlockedConsumerAfterTheDrain) {
  Watchdog watchdog;
  MpmcBoundedQueue<Tracked> queue(4);
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
    queue.push(Tracked(i));
  queue.close();
  for (auto& consumer : consumers)
    consumer.join();
  EXPECT_EQ(popped.load(), 3);
}

// An item whose move waits while `hold` is set: a push of it stays inside its cell's write.
struct SlowToMove {
  int value;
  std::atomic<bool>* hold;
  SlowToMove(int v, std::atomic<bool>* h) : value(v), hold(h) {}
  SlowToMove(SlowToMove&& other) noexcept : value(other.value), hold(other.hold) {
    while (hold != nullptr && hold->load(std::memory_order_acquire))
      std::this_thread::sleep_for(1ms);
  }
  SlowToMove(const SlowToMove&) = delete;
  SlowToMove& operator=(const SlowToMove&) = delete;
  SlowToMove& operator=(SlowToMove&&) = delete;
  ~SlowToMove() = default;
};

// Two consumers sleep, each busy for a long while after every item it takes. A push claims the
// first cell and is slow to fill it; a second push fills the next cell and wakes one consumer,
// which finds the first cell still being written and sleeps again. When the first push ends, its
// wake-up brings its item out, and the consumer that took it passes a wake-up on: the second item
// goes to the other consumer at once, not after the first one's long work.
TEST_F(MpmcBoundedQueueTest, AWakeUpSpentOnACellStillBeingWrittenIsPassedOn) {
  Watchdog watchdog;
  MpmcBoundedQueue<SlowToMove> queue(4);
  std::atomic<int> popped{0};
  std::vector<std::thread> consumers;
  for (int i = 0; i < 2; ++i) {
    consumers.emplace_back([&] {
      while (auto item = queue.pop()) {
        popped.fetch_add(1);
        std::this_thread::sleep_for(2s);  // its work on the item
      }
    });
  }
  std::this_thread::sleep_for(50ms);  // both asleep
  std::atomic<bool> hold{true};
  std::thread slow([&] {
    SlowToMove first(1, &hold);
    EXPECT_TRUE(queue.try_push(first));  // claims cell 0, then waits inside its move
  });
  std::this_thread::sleep_for(20ms);
  SlowToMove second(2, nullptr);
  ASSERT_TRUE(queue.try_push(second));  // cell 1: wakes one consumer, which sleeps again
  std::this_thread::sleep_for(50ms);
  hold.store(false, std::memory_order_release);
  slow.join();
  for (int i = 0; i < 100 && popped.load() < 2; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(popped.load(), 2) << "an item waited while a consumer slept";
  queue.close();
  for (auto& consumer : consumers)
    consumer.join();
}

// The same for producers. The ring is full and two producers sleep. A pop takes the first cell and
// is slow to empty it; a second pop frees the next cell and wakes one producer, which finds the
// first cell still held and sleeps again. When the first pop ends, its wake-up lets one producer
// in, and that push passes a wake-up on: the other producer takes the free cell at once, without
// waiting for another pop.
TEST_F(MpmcBoundedQueueTest, AWakeUpSpentOnACellStillBeingEmptiedIsPassedOn) {
  Watchdog watchdog;
  MpmcBoundedQueue<SlowToMove> queue(2);
  std::atomic<bool> hold{false};
  SlowToMove first(1, &hold);
  SlowToMove second(2, nullptr);
  ASSERT_TRUE(queue.try_push(first));
  ASSERT_TRUE(queue.try_push(second));
  std::atomic<int> pushed{0};
  std::vector<std::thread> producers;
  for (int i = 0; i < 2; ++i) {
    producers.emplace_back([&, i] {
      if (queue.push(SlowToMove(10 + i, nullptr))) pushed.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(50ms);  // both asleep
  hold.store(true, std::memory_order_release);
  std::thread slow([&] { EXPECT_TRUE(queue.pop().has_value()); });  // cell 0, slow to empty
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(queue.pop().has_value());  // cell 1: wakes one producer, which sleeps again
  std::this_thread::sleep_for(50ms);
  hold.store(false, std::memory_order_release);
  slow.join();
  for (int i = 0; i < 100 && pushed.load() < 2; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(pushed.load(), 2) << "a producer slept while a cell was free";
  queue.close();
  for (auto& producer : producers)
    producer.join();
}

TEST_F(MpmcBoundedQueueTest, AbortWakesEveryBlockedProducerAndConsumer) {
  Watchdog watchdog;
  MpmcBoundedQueue<Tracked> empty(2);
  MpmcBoundedQueue<Tracked> full(2);
  full.push(Tracked(1));
  full.push(Tracked(2));
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] { EXPECT_EQ(empty.pop(), std::nullopt); });
    threads.emplace_back([&, i] { EXPECT_FALSE(full.push(Tracked(10 + i))); });
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
  EXPECT_EQ(Tracked::alive(), 0);
}

TEST_F(MpmcBoundedQueueTest, TimedPushLeavesItsValueOnTimeoutAndPushesOnceThereIsRoom) {
  Watchdog watchdog;
  MpmcBoundedQueue<Tracked> queue(1);
  queue.push(Tracked(1));
  Tracked value(2);
  const auto before = std::chrono::steady_clock::now();
  EXPECT_FALSE(queue.try_push_for(value, 20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - before, 20ms);
  EXPECT_EQ(value.value(), 2);  // not moved from
  EXPECT_FALSE(queue.closed());
  std::thread consumer([&] {
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(queue.pop()->value(), 1);
  });
  EXPECT_TRUE(queue.try_push_for(value, 60s));
  consumer.join();
  EXPECT_EQ(queue.pop()->value(), 2);
}

TEST_F(MpmcBoundedQueueTest, TimedPushFailsOnceClosedAndCloseWakesIt) {
  Watchdog watchdog;
  MpmcBoundedQueue<Tracked> queue(1);
  queue.push(Tracked(1));
  Tracked value(2);
  std::thread closer([&] {
    std::this_thread::sleep_for(20ms);
    queue.close();
  });
  EXPECT_FALSE(queue.try_push_for(value, 60s));  // woken by the close, long before its timeout
  closer.join();
  EXPECT_TRUE(queue.closed());
  EXPECT_EQ(value.value(), 2);
  EXPECT_FALSE(queue.try_push_for(value, 0ms));
}

// A timed push that gives up takes itself off the producers' waiter count: the blocked push that
// shares it is still woken by the next free cell, and no free cell is given to nobody.
TEST_F(MpmcBoundedQueueTest, TimedPushesThatGiveUpTakeNoWakeUpFromABlockedPush) {
  Watchdog watchdog;
  MpmcBoundedQueue<Tracked> queue(1);
  queue.push(Tracked(1));
  std::atomic<bool> blocked_pushed{false};
  std::thread blocked([&] {
    EXPECT_TRUE(queue.push(Tracked(2)));
    blocked_pushed.store(true);
  });
  Tracked value(3);
  for (int i = 0; i < 20; ++i)
    EXPECT_FALSE(queue.try_push_for(value, 1ms));
  EXPECT_FALSE(blocked_pushed.load());
  EXPECT_EQ(queue.pop()->value(), 1);  // room for one: the blocked push takes it
  blocked.join();
  EXPECT_EQ(queue.pop()->value(), 2);
  EXPECT_TRUE(queue.try_push_for(value, 0ms));
  EXPECT_EQ(queue.pop()->value(), 3);
}

}  // namespace
