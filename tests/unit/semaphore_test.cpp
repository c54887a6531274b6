// Unit tests for conveyor::sync::Semaphore: every member and state change, and the contract.
#include "conveyor/sync/semaphore.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "watchdog.hpp"

namespace {

using conveyor::sync::Semaphore;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

TEST(Semaphore, StartsWithTheInitialCount) {
  Semaphore empty;
  EXPECT_EQ(empty.available(), 0);
  Semaphore three(3);
  EXPECT_EQ(three.available(), 3);
}

TEST(Semaphore, TryAcquireTakesOnlyWhatIsThere) {
  Semaphore semaphore(2);
  EXPECT_TRUE(semaphore.try_acquire());
  EXPECT_TRUE(semaphore.try_acquire());
  EXPECT_FALSE(semaphore.try_acquire());
  EXPECT_EQ(semaphore.available(), 0);
}

TEST(Semaphore, ReleaseAddsTokens) {
  Semaphore semaphore;
  semaphore.release();
  EXPECT_EQ(semaphore.available(), 1);
  semaphore.release(5);
  EXPECT_EQ(semaphore.available(), 6);
  semaphore.release(0);
  EXPECT_EQ(semaphore.available(), 6);
}

TEST(Semaphore, AcquireReturnsAtOnceWhenATokenIsThere) {
  Watchdog watchdog;
  Semaphore semaphore(1);
  semaphore.acquire();
  EXPECT_EQ(semaphore.available(), 0);
}

TEST(Semaphore, TryAcquireForTimesOutWhenEmpty) {
  Watchdog watchdog;
  Semaphore semaphore;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(semaphore.try_acquire_for(20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  EXPECT_FALSE(semaphore.try_acquire_for(0ms));
  EXPECT_FALSE(semaphore.try_acquire_for(-5ms));
}

TEST(Semaphore, TryAcquireForTakesATokenReleasedWhileWaiting) {
  Watchdog watchdog;
  Semaphore semaphore;
  std::thread releaser([&] {
    std::this_thread::sleep_for(10ms);
    semaphore.release();
  });
  EXPECT_TRUE(semaphore.try_acquire_for(60s));
  releaser.join();
  EXPECT_EQ(semaphore.available(), 0);
}

TEST(Semaphore, AcquireBlocksUntilRelease) {
  Watchdog watchdog;
  Semaphore semaphore;
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    semaphore.acquire();
    acquired.store(true, std::memory_order_release);
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(acquired.load(std::memory_order_acquire));
  semaphore.release();
  waiter.join();
  EXPECT_TRUE(acquired.load(std::memory_order_acquire));
}

TEST(Semaphore, ReleaseHandsOverWhatWasWrittenBefore) {
  Watchdog watchdog;
  Semaphore semaphore;
  int payload = 0;  // plain: the semaphore's release/acquire must order it (TSan checks)
  std::thread producer([&] {
    payload = 42;
    semaphore.release();
  });
  semaphore.acquire();
  EXPECT_EQ(payload, 42);
  producer.join();
}

TEST(Semaphore, MultiReleaseWakesExactlyAsManyWaitersAsTokens) {
  Watchdog watchdog;
  constexpr int waiters = 4;
  Semaphore semaphore;
  std::atomic<int> through{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < waiters; ++i) {
    threads.emplace_back([&] {
      semaphore.acquire();
      through.fetch_add(1, std::memory_order_relaxed);
    });
  }
  std::this_thread::sleep_for(20ms);
  semaphore.release(2);
  while (through.load(std::memory_order_relaxed) < 2)
    std::this_thread::yield();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(through.load(std::memory_order_relaxed), 2);
  semaphore.release(2);
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(through.load(std::memory_order_relaxed), waiters);
  EXPECT_EQ(semaphore.available(), 0);
}

TEST(Semaphore, TimedWaitersThatGiveUpLeaveTheCountIntact) {
  Watchdog watchdog;
  Semaphore semaphore;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] { EXPECT_FALSE(semaphore.try_acquire_for(5ms)); });
  }
  for (auto& thread : threads)
    thread.join();
  semaphore.release(3);
  EXPECT_EQ(semaphore.available(), 3);
}

TEST(Semaphore, MakesNoSystemCallWhenNobodyWaits) {
  Semaphore semaphore(1);
  const auto waits = conveyor::sync::detail::futex_wait_calls();
  const auto wakes = conveyor::sync::detail::futex_wake_calls();
  for (int i = 0; i < 10000; ++i) {
    semaphore.acquire();
    semaphore.release();
    semaphore.release(3);
    EXPECT_TRUE(semaphore.try_acquire_for(std::chrono::milliseconds(1)));
    EXPECT_TRUE(semaphore.try_acquire());
    EXPECT_TRUE(semaphore.try_acquire());
  }
  EXPECT_EQ(conveyor::sync::detail::futex_wait_calls(), waits);
  EXPECT_EQ(conveyor::sync::detail::futex_wake_calls(), wakes);
}

TEST(Semaphore, ReleaseWakesASleeperThroughTheKernel) {
  Watchdog watchdog;
  Semaphore semaphore;
  const auto waits = conveyor::sync::detail::futex_wait_calls();
  const auto wakes = conveyor::sync::detail::futex_wake_calls();
  std::thread waiter([&] { semaphore.acquire(); });
  // Release only once the waiter has stopped spinning and gone to sleep.
  while (conveyor::sync::detail::futex_wait_calls() == waits)
    std::this_thread::yield();
  semaphore.release();
  waiter.join();
  EXPECT_GT(conveyor::sync::detail::futex_wake_calls(), wakes);
}

TEST(Semaphore, ReachesTheMaximumCount) {
  Semaphore semaphore(Semaphore::max_count - 1);
  semaphore.release();
  EXPECT_EQ(semaphore.available(), Semaphore::max_count);
}

using SemaphoreDeathTest = ::testing::Test;

TEST(SemaphoreDeathTest, ReleasePastTheMaximumIsAContractViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Semaphore semaphore(Semaphore::max_count);
  EXPECT_DEATH(semaphore.release(), "contract violation: Semaphore::release would overflow");
}

TEST(SemaphoreDeathTest, NegativeReleaseIsAContractViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Semaphore semaphore;
  EXPECT_DEATH(semaphore.release(-1), "contract violation: Semaphore::release: n must not be");
}

TEST(SemaphoreDeathTest, NegativeInitialCountIsAContractViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(Semaphore semaphore(-1), "contract violation: Semaphore: the initial count");
}

}  // namespace
