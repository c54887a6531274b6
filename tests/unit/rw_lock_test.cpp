// Unit tests for conveyor::sync::RwLock: the SharedMutex members, std::shared_lock and
// std::unique_lock, timed tries, both policies, and the contract.
#include "conveyor/sync/rw_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "watchdog.hpp"

namespace {

using conveyor::sync::GroupLockPolicy;
using conveyor::sync::RwLock;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

TEST(RwLock, ReadersShare) {
  RwLock lock;
  EXPECT_TRUE(lock.try_lock_shared());
  EXPECT_TRUE(lock.try_lock_shared());
  EXPECT_FALSE(lock.try_lock());
  lock.unlock_shared();
  lock.unlock_shared();
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

TEST(RwLock, OneWriterExcludesEveryone) {
  RwLock lock;
  lock.lock();
  EXPECT_FALSE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock_shared());
  lock.unlock();
  lock.lock_shared();
  lock.unlock_shared();
}

// duration::max() as "no limit": both timed forms wait until the lock is free (they gave up at
// once before, the deadline overflowing into the past); GroupLock's is the writers' first step.
TEST(RwLock, TheLongestTimeoutsWaitUntilTheLockIsFree) {
  Watchdog watchdog;
  RwLock lock;
  lock.lock();
  std::thread writer_holds([&] {
    std::this_thread::sleep_for(20ms);
    lock.unlock();
  });
  std::thread reader([&] {
    EXPECT_TRUE(lock.try_lock_shared_for(std::chrono::nanoseconds::max()));
    lock.unlock_shared();
  });
  writer_holds.join();
  reader.join();
  std::atomic<bool> reading{false};
  std::thread reader_leaves([&] {
    lock.lock_shared();
    reading.store(true, std::memory_order_release);
    std::this_thread::sleep_for(20ms);
    lock.unlock_shared();
  });
  while (!reading.load(std::memory_order_acquire))
    std::this_thread::yield();
  EXPECT_TRUE(lock.try_lock_for(std::chrono::hours::max()));
  reader_leaves.join();
  lock.unlock();
}

TEST(RwLock, WorksWithStandardLockTypes) {
  RwLock lock;
  {
    std::shared_lock reader(lock);
    std::shared_lock second_reader(lock);
    EXPECT_TRUE(reader.owns_lock());
    EXPECT_TRUE(second_reader.owns_lock());
    std::unique_lock writer(lock, std::try_to_lock);
    EXPECT_FALSE(writer.owns_lock());
  }
  {
    std::unique_lock writer(lock);
    EXPECT_TRUE(writer.owns_lock());
    std::shared_lock reader(lock, std::try_to_lock);
    EXPECT_FALSE(reader.owns_lock());
    writer.unlock();
    EXPECT_TRUE(reader.try_lock());
  }
  {
    std::scoped_lock writer(lock);
    EXPECT_FALSE(lock.try_lock_shared());
  }
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

TEST(RwLock, TimedTriesTimeOutAndSucceed) {
  Watchdog watchdog;
  RwLock lock;
  lock.lock();
  std::thread other([&] {
    EXPECT_FALSE(lock.try_lock_shared_for(10ms));
    EXPECT_FALSE(lock.try_lock_for(10ms));
  });
  other.join();
  std::atomic<bool> read{false};
  std::thread reader([&] {
    read.store(lock.try_lock_shared_for(60s), std::memory_order_release);
    lock.unlock_shared();
  });
  std::this_thread::sleep_for(5ms);
  lock.unlock();
  reader.join();
  EXPECT_TRUE(read.load(std::memory_order_acquire));
  EXPECT_TRUE(lock.try_lock_for(1s));
  lock.unlock();
}

TEST(RwLock, WriterWaitsForReadersAndThenEnters) {
  for (const GroupLockPolicy policy : {GroupLockPolicy::throughput, GroupLockPolicy::fair}) {
    Watchdog watchdog;
    RwLock lock(policy);
    lock.lock_shared();
    std::atomic<bool> wrote{false};
    std::thread writer([&] {
      lock.lock();
      wrote.store(true, std::memory_order_release);
      lock.unlock();
    });
    // A waiting writer closes the readers' fast path.
    while (lock.try_lock_shared()) {
      lock.unlock_shared();
      std::this_thread::yield();
    }
    EXPECT_FALSE(wrote.load(std::memory_order_acquire));
    lock.unlock_shared();
    writer.join();
    EXPECT_TRUE(wrote.load(std::memory_order_acquire));
    EXPECT_EQ(lock.stats(RwLock::writer_group).waits, 1u);
  }
}

TEST(RwLock, WritersTakeTurns) {
  Watchdog watchdog;
  RwLock lock;
  int counter = 0;  // plain: guarded by the lock
  std::thread first([&] {
    for (int i = 0; i < 10'000; ++i) {
      std::unique_lock writer(lock);
      ++counter;
    }
  });
  for (int i = 0; i < 10'000; ++i) {
    std::unique_lock writer(lock);
    ++counter;
  }
  first.join();
  EXPECT_EQ(counter, 20'000);
}

TEST(RwLockDeathTest, UnlockWithoutLockIsAContractViolation) {
#ifdef NDEBUG
  GTEST_SKIP() << "unlock is checked only when NDEBUG is not defined";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  RwLock lock;
  EXPECT_DEATH(lock.unlock(), "contract violation: GroupLock::unlock");
  lock.lock_shared();
  EXPECT_DEATH(lock.unlock(), "contract violation: GroupLock::unlock");
  lock.unlock_shared();
#endif
}

}  // namespace
