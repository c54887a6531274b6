// Unit tests for conveyor::sync::GroupLock: every member and state change, both policies, caps,
// statistics, and the contract.
#include "conveyor/sync/group_lock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "watchdog.hpp"

namespace {

using conveyor::sync::GroupLock;
using conveyor::sync::GroupLockOptions;
using conveyor::sync::GroupLockPolicy;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

// try_lock fails once any thread waits (the fast path closes), so this returns once a thread of
// another group has registered as a waiter while `group` holds the lock.
void wait_until_someone_waits(GroupLock& lock, std::size_t group) {
  while (lock.try_lock(group)) {
    lock.unlock(group);
    std::this_thread::yield();
  }
}

TEST(GroupLock, DefaultsToTwoUncappedGroupsAndTheThroughputPolicy) {
  GroupLock lock;
  EXPECT_EQ(lock.groups(), 2u);
  EXPECT_EQ(lock.policy(), GroupLockPolicy::throughput);
  EXPECT_GE(lock.cap(0), 1u << 20);
  EXPECT_GE(lock.cap(1), 1u << 20);
}

TEST(GroupLock, TakesGroupsAndCapsFromTheOptions) {
  GroupLock lock(GroupLockOptions{.groups = 3, .caps = {2, 0, 1}, .policy = GroupLockPolicy::fair});
  EXPECT_EQ(lock.groups(), 3u);
  EXPECT_EQ(lock.cap(0), 2u);
  EXPECT_GE(lock.cap(1), 1u << 20);
  EXPECT_EQ(lock.cap(2), 1u);
  EXPECT_EQ(lock.policy(), GroupLockPolicy::fair);
}

TEST(GroupLock, OneGroupSharesTheLock) {
  GroupLock lock;
  EXPECT_TRUE(lock.try_lock(0));
  EXPECT_TRUE(lock.try_lock(0));
  lock.lock(0);
  lock.unlock(0);
  lock.unlock(0);
  lock.unlock(0);
}

TEST(GroupLock, ExcludesOtherGroupsUntilTheLastHolderLeaves) {
  GroupLock lock(GroupLockOptions{.groups = 3});
  ASSERT_TRUE(lock.try_lock(1));
  ASSERT_TRUE(lock.try_lock(1));
  EXPECT_FALSE(lock.try_lock(0));
  EXPECT_FALSE(lock.try_lock(2));
  lock.unlock(1);
  EXPECT_FALSE(lock.try_lock(0));
  lock.unlock(1);
  EXPECT_TRUE(lock.try_lock(2));
  EXPECT_FALSE(lock.try_lock(1));
  lock.unlock(2);
  EXPECT_TRUE(lock.try_lock(0));
  lock.unlock(0);
}

TEST(GroupLock, CapLimitsHoldersOfOneGroup) {
  GroupLock lock(GroupLockOptions{.caps = {2, 1}});
  EXPECT_TRUE(lock.try_lock(0));
  EXPECT_TRUE(lock.try_lock(0));
  EXPECT_FALSE(lock.try_lock(0));
  lock.unlock(0);
  EXPECT_TRUE(lock.try_lock(0));
  lock.unlock(0);
  lock.unlock(0);
  EXPECT_TRUE(lock.try_lock(1));
  EXPECT_FALSE(lock.try_lock(1));
  lock.unlock(1);
}

TEST(GroupLock, GuardHoldsForItsScope) {
  GroupLock lock;
  {
    GroupLock::Guard guard(lock, 1);
    EXPECT_FALSE(lock.try_lock(0));
  }
  EXPECT_TRUE(lock.try_lock(0));
  lock.unlock(0);
}

TEST(GroupLock, LockWaitsForTheOtherGroup) {
  Watchdog watchdog;
  GroupLock lock;
  lock.lock(0);
  std::atomic<bool> entered{false};
  std::thread other([&] {
    lock.lock(1);
    entered.store(true, std::memory_order_release);
    lock.unlock(1);
  });
  wait_until_someone_waits(lock, 0);
  EXPECT_FALSE(entered.load(std::memory_order_acquire));
  lock.unlock(0);
  other.join();
  EXPECT_TRUE(entered.load(std::memory_order_acquire));
  EXPECT_TRUE(lock.try_lock(0));  // the lock is free and uncontended again
  lock.unlock(0);
}

TEST(GroupLock, TryLockForTimesOutWhileAnotherGroupHolds) {
  Watchdog watchdog;
  GroupLock lock;
  lock.lock(0);
  std::thread other([&] {
    EXPECT_FALSE(lock.try_lock_for(1, 20ms));
    EXPECT_FALSE(lock.try_lock_for(1, 0ms));
    EXPECT_FALSE(lock.try_lock_for(1, -1ms));
  });
  other.join();
  // The timed-out waiter withdrew: the fast path is open again.
  EXPECT_TRUE(lock.try_lock(0));
  lock.unlock(0);
  lock.unlock(0);
  EXPECT_TRUE(lock.try_lock(1));
  lock.unlock(1);
  EXPECT_EQ(lock.stats(1).waits, 0u);
}

TEST(GroupLock, TryLockForSucceedsWhenTheOtherGroupLeaves) {
  Watchdog watchdog;
  GroupLock lock;
  lock.lock(0);
  std::atomic<bool> entered{false};
  std::thread other([&] {
    entered.store(lock.try_lock_for(1, 60s), std::memory_order_release);
    lock.unlock(1);
  });
  wait_until_someone_waits(lock, 0);
  lock.unlock(0);
  other.join();
  EXPECT_TRUE(entered.load(std::memory_order_acquire));
  EXPECT_EQ(lock.stats(1).waits, 1u);
}

TEST(GroupLock, CappedWaiterEntersWhenAHolderOfItsGroupLeaves) {
  Watchdog watchdog;
  GroupLock lock(GroupLockOptions{.caps = {1, 0}});
  lock.lock(0);
  std::atomic<bool> entered{false};
  std::thread second([&] {
    lock.lock(0);
    entered.store(true, std::memory_order_release);
    lock.unlock(0);
  });
  // Nothing outside shows that the second thread is waiting yet; give it time to (the checks
  // below hold either way, this only makes the waiting path the likely one).
  std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(entered.load(std::memory_order_acquire));
  EXPECT_FALSE(lock.try_lock(0));
  lock.unlock(0);
  second.join();
  EXPECT_TRUE(entered.load(std::memory_order_acquire));
  EXPECT_EQ(lock.stats(0).entries, 2u);
}

TEST(GroupLock, FairPolicyAdmitsNobodyNewOnceAnotherGroupWaits) {
  Watchdog watchdog;
  GroupLock lock(GroupLockOptions{.policy = GroupLockPolicy::fair});
  lock.lock(0);
  std::thread other([&] {
    lock.lock(1);
    lock.unlock(1);
  });
  wait_until_someone_waits(lock, 0);
  EXPECT_FALSE(lock.try_lock_for(0, 10ms));
  lock.unlock(0);
  other.join();
  EXPECT_EQ(lock.stats(0).waits, 0u);
  EXPECT_EQ(lock.stats(1).waits, 1u);
}

TEST(GroupLock, ThroughputPolicyAdmitsAcesUpToTheEntryBound) {
  Watchdog watchdog;
  GroupLock lock(GroupLockOptions{.policy = GroupLockPolicy::throughput,
                                  .max_wait = std::chrono::hours(1),
                                  .max_entries_while_waiting = 3});
  lock.lock(0);
  std::atomic<bool> entered{false};
  std::thread other([&] {
    lock.lock(1);
    entered.store(true, std::memory_order_release);
    lock.unlock(1);
  });
  wait_until_someone_waits(lock, 0);
  for (int i = 0; i < 3; ++i)
    lock.lock(0);  // three aces while group 1 waits
  EXPECT_FALSE(lock.try_lock_for(0, 10ms));
  EXPECT_FALSE(entered.load(std::memory_order_acquire));
  for (int i = 0; i < 4; ++i)
    lock.unlock(0);
  other.join();
  EXPECT_TRUE(entered.load(std::memory_order_acquire));
  const GroupLock::GroupStats stats = lock.stats(0);
  EXPECT_GE(stats.entries, 4u);  // plus the probes of wait_until_someone_waits
  EXPECT_EQ(stats.aces, stats.entries);
  EXPECT_EQ(stats.waits, 0u);
}

TEST(GroupLock, ThroughputPolicyStopsAdmittingAfterTheTimeBound) {
  Watchdog watchdog;
  GroupLock lock(GroupLockOptions{.policy = GroupLockPolicy::throughput,
                                  .max_wait = std::chrono::microseconds(500),
                                  .max_entries_while_waiting = 1'000'000});
  lock.lock(0);
  std::thread other([&] {
    lock.lock(1);
    lock.unlock(1);
  });
  wait_until_someone_waits(lock, 0);
  std::this_thread::sleep_for(5ms);  // well past max_wait
  EXPECT_FALSE(lock.try_lock_for(0, 10ms));
  lock.unlock(0);
  other.join();
}

TEST(GroupLock, StatsCountAcesAndWaits) {
  Watchdog watchdog;
  GroupLock lock;
  for (int i = 0; i < 5; ++i) {
    lock.lock(0);
    lock.unlock(0);
  }
  GroupLock::GroupStats zero = lock.stats(0);
  EXPECT_EQ(zero.entries, 5u);
  EXPECT_EQ(zero.aces, 5u);
  EXPECT_EQ(zero.waits, 0u);
  EXPECT_EQ(zero.wait_time, std::chrono::nanoseconds(0));

  lock.lock(0);
  std::thread other([&] {
    lock.lock(1);
    lock.unlock(1);
  });
  wait_until_someone_waits(lock, 0);
  std::this_thread::sleep_for(1ms);
  lock.unlock(0);
  other.join();
  const GroupLock::GroupStats one = lock.stats(1);
  EXPECT_EQ(one.entries, 1u);
  EXPECT_EQ(one.aces, 0u);
  EXPECT_EQ(one.waits, 1u);
  EXPECT_GT(one.wait_time, std::chrono::nanoseconds(0));
  EXPECT_GE(lock.stats(0).entries, 6u);  // plus the probes of wait_until_someone_waits
}

TEST(GroupLock, EntryCountSurvivesTheFoldingOfTheStateWord) {
  GroupLock lock;
  constexpr std::uint64_t rounds = 70'000;  // more than the word's 16-bit entry field
  for (std::uint64_t i = 0; i < rounds; ++i) {
    lock.lock(0);
    lock.unlock(0);
  }
  lock.lock(1);  // a change of owner folds group 0's entries out of the word
  lock.unlock(1);
  EXPECT_EQ(lock.stats(0).entries, rounds);
  EXPECT_EQ(lock.stats(0).aces, rounds);
  EXPECT_EQ(lock.stats(1).entries, 1u);
}

TEST(GroupLock, ManyGroupsAllGetIn) {
  Watchdog watchdog;
  constexpr std::size_t groups = 5;
  GroupLock lock(GroupLockOptions{.groups = groups});
  lock.lock(0);
  std::vector<std::thread> threads;
  std::atomic<int> inside_other_group{0};
  for (std::size_t group = 1; group < groups; ++group) {
    threads.emplace_back([&, group] {
      lock.lock(group);
      inside_other_group.fetch_add(1, std::memory_order_relaxed);
      lock.unlock(group);
    });
  }
  wait_until_someone_waits(lock, 0);
  EXPECT_EQ(inside_other_group.load(std::memory_order_relaxed), 0);
  lock.unlock(0);
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(inside_other_group.load(std::memory_order_relaxed), 4);
}

TEST(GroupLockDeathTest, UnlockWithTheWrongGroupIsAContractViolation) {
#ifdef NDEBUG
  GTEST_SKIP() << "unlock is checked only when NDEBUG is not defined";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  GroupLock lock;
  lock.lock(0);
  EXPECT_DEATH(lock.unlock(1), "contract violation: GroupLock::unlock");
  lock.unlock(0);
#endif
}

TEST(GroupLockDeathTest, UnlockWithoutLockIsAContractViolation) {
#ifdef NDEBUG
  GTEST_SKIP() << "unlock is checked only when NDEBUG is not defined";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  GroupLock lock;
  EXPECT_DEATH(lock.unlock(0), "contract violation: GroupLock::unlock");
#endif
}

TEST(GroupLockDeathTest, GroupOutOfRangeIsAContractViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  GroupLock lock;
  EXPECT_DEATH(lock.lock(2), "contract violation: GroupLock: group out of range");
  EXPECT_DEATH((void)lock.try_lock(7), "contract violation: GroupLock: group out of range");
}

TEST(GroupLockDeathTest, CapsMustMatchTheGroups) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(GroupLock(GroupLockOptions{.groups = 3, .caps = {1, 1}}),
               "contract violation: GroupLock: caps must be empty");
  EXPECT_DEATH(GroupLock(GroupLockOptions{.groups = 0}),
               "contract violation: GroupLock: the number of groups");
}

}  // namespace
