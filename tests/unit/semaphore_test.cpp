// Unit tests for conveyor::sync::Semaphore and CooperativeSemaphore. The two promise the same
// contract to plain threads, so every test of that contract runs on both; the futex Semaphore's own
// guarantees (no system call without waiters) follow. CooperativeSemaphore's own guarantees (FIFO
// hand-off, task suspension) are in cooperative_semaphore_test.cpp.
#include "conveyor/sync/semaphore.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/sync/cooperative_semaphore.hpp"
#include "settle_time.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::CooperativeSemaphore;
using conveyor::sync::Semaphore;
using conveyor::testing::settle_time;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

template <class S>
constexpr const char* name_of();
template <>
constexpr const char* name_of<Semaphore>() {
  return "Semaphore";
}
template <>
constexpr const char* name_of<CooperativeSemaphore>() {
  return "CooperativeSemaphore";
}

// Names the instantiations after the semaphore, e.g.
// SemaphoreTest/CooperativeSemaphore.ReleaseAddsTokens.
struct SemaphoreName {
  template <class S>
  static std::string GetName(int) {
    return name_of<S>();
  }
};

using Semaphores = ::testing::Types<Semaphore, CooperativeSemaphore>;

template <class S>
class SemaphoreTest : public ::testing::Test {};
TYPED_TEST_SUITE(SemaphoreTest, Semaphores, SemaphoreName);

TYPED_TEST(SemaphoreTest, StartsWithTheInitialCount) {
  TypeParam empty;
  EXPECT_EQ(empty.available(), 0);
  TypeParam three(3);
  EXPECT_EQ(three.available(), 3);
}

TYPED_TEST(SemaphoreTest, TryAcquireTakesOnlyWhatIsThere) {
  TypeParam semaphore(2);
  EXPECT_TRUE(semaphore.try_acquire());
  EXPECT_TRUE(semaphore.try_acquire());
  EXPECT_FALSE(semaphore.try_acquire());
  EXPECT_EQ(semaphore.available(), 0);
}

TYPED_TEST(SemaphoreTest, ReleaseAddsTokens) {
  TypeParam semaphore;
  semaphore.release();
  EXPECT_EQ(semaphore.available(), 1);
  semaphore.release(5);
  EXPECT_EQ(semaphore.available(), 6);
  semaphore.release(0);
  EXPECT_EQ(semaphore.available(), 6);
}

// duration::max() as "no limit": the deadline saturates instead of overflowing into the past, so
// the wait lasts until the token comes (it gave up at once before).
TYPED_TEST(SemaphoreTest, TheLongestTimeoutsWaitForTheToken) {
  Watchdog watchdog;
  for (int form = 0; form < 3; ++form) {
    TypeParam semaphore;
    std::thread releaser([&] {
      std::this_thread::sleep_for(20ms);
      semaphore.release();
    });
    const bool taken = form == 0   ? semaphore.try_acquire_for(std::chrono::nanoseconds::max())
                       : form == 1 ? semaphore.try_acquire_for(std::chrono::seconds::max())
                                   : semaphore.try_acquire_for(std::chrono::hours::max());
    releaser.join();
    EXPECT_TRUE(taken) << "form " << form;
  }
}

TYPED_TEST(SemaphoreTest, AcquireReturnsAtOnceWhenATokenIsThere) {
  Watchdog watchdog;
  TypeParam semaphore(1);
  semaphore.acquire();
  EXPECT_EQ(semaphore.available(), 0);
}

TYPED_TEST(SemaphoreTest, TryAcquireForTimesOutWhenEmpty) {
  Watchdog watchdog;
  TypeParam semaphore;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(semaphore.try_acquire_for(20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  EXPECT_FALSE(semaphore.try_acquire_for(0ms));
  EXPECT_FALSE(semaphore.try_acquire_for(-5ms));
  EXPECT_EQ(semaphore.available(), 0);
  semaphore.release();
  EXPECT_EQ(semaphore.available(), 1);  // the timed-out waiter gave its place back
}

TYPED_TEST(SemaphoreTest, TryAcquireForTakesATokenReleasedWhileWaiting) {
  Watchdog watchdog;
  TypeParam semaphore;
  std::thread releaser([&] {
    std::this_thread::sleep_for(10ms);
    semaphore.release();
  });
  EXPECT_TRUE(semaphore.try_acquire_for(60s));
  releaser.join();
  EXPECT_EQ(semaphore.available(), 0);
}

TYPED_TEST(SemaphoreTest, AcquireBlocksUntilRelease) {
  Watchdog watchdog;
  TypeParam semaphore;
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    semaphore.acquire();
    acquired.store(true, std::memory_order_release);
  });
  std::this_thread::sleep_for(settle_time());
  EXPECT_FALSE(acquired.load(std::memory_order_acquire));
  semaphore.release();
  waiter.join();
  EXPECT_TRUE(acquired.load(std::memory_order_acquire));
}

TYPED_TEST(SemaphoreTest, ReleaseHandsOverWhatWasWrittenBefore) {
  Watchdog watchdog;
  TypeParam semaphore;
  int payload = 0;  // plain: the semaphore's release/acquire must order it (TSan checks)
  std::thread producer([&] {
    payload = 42;
    semaphore.release();
  });
  semaphore.acquire();
  EXPECT_EQ(payload, 42);
  producer.join();
}

TYPED_TEST(SemaphoreTest, MultiReleaseWakesExactlyAsManyWaitersAsTokens) {
  Watchdog watchdog;
  constexpr int waiters = 4;
  TypeParam semaphore;
  std::atomic<int> through{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < waiters; ++i) {
    threads.emplace_back([&] {
      semaphore.acquire();
      through.fetch_add(1, std::memory_order_relaxed);
    });
  }
  std::this_thread::sleep_for(settle_time());
  semaphore.release(2);
  while (through.load(std::memory_order_relaxed) < 2)
    std::this_thread::yield();
  std::this_thread::sleep_for(settle_time());
  EXPECT_EQ(through.load(std::memory_order_relaxed), 2);
  semaphore.release(2);
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(through.load(std::memory_order_relaxed), waiters);
  EXPECT_EQ(semaphore.available(), 0);
}

TYPED_TEST(SemaphoreTest, TimedWaitersThatGiveUpLeaveTheCountIntact) {
  Watchdog watchdog;
  TypeParam semaphore;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] { EXPECT_FALSE(semaphore.try_acquire_for(5ms)); });
  }
  for (auto& thread : threads)
    thread.join();
  semaphore.release(3);
  EXPECT_EQ(semaphore.available(), 3);
}

TYPED_TEST(SemaphoreTest, ReachesTheMaximumCount) {
  TypeParam semaphore(TypeParam::max_count - 1);
  semaphore.release();
  EXPECT_EQ(semaphore.available(), TypeParam::max_count);
}

template <class S>
class SemaphoreDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }

  static std::string violation(const char* what) {
    return std::string("contract violation: ") + name_of<S>() + what;
  }
};
TYPED_TEST_SUITE(SemaphoreDeathTest, Semaphores, SemaphoreName);

TYPED_TEST(SemaphoreDeathTest, ReleasePastTheMaximumIsAContractViolation) {
  TypeParam semaphore(TypeParam::max_count);
  EXPECT_DEATH(semaphore.release(), this->violation("::release would overflow"));
}

TYPED_TEST(SemaphoreDeathTest, NegativeReleaseIsAContractViolation) {
  TypeParam semaphore;
  EXPECT_DEATH(semaphore.release(-1), this->violation("::release: n must not be"));
}

TYPED_TEST(SemaphoreDeathTest, NegativeInitialCountIsAContractViolation) {
  EXPECT_DEATH(TypeParam semaphore(-1), this->violation(": the initial count"));
}

// The futex Semaphore sleeps in the kernel only when it must.
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

}  // namespace
