// Unit tests for the reader slots of conveyor::sync::RwLock: readers that back off from an
// announced writer, a writer that sleeps until readers on every slot have left, writers and
// readers that give up (try_ and timed forms) without leaving a trace, the statistics, and the
// unlock_shared contract.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "conveyor/sync/rw_lock.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::GroupLockPolicy;
using conveyor::sync::RwLock;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

TEST(RwLockReaderSlots, ReaderEntriesAreCountedAsAces) {
  RwLock lock;
  for (int i = 0; i < 1000; ++i) {
    std::shared_lock reader(lock);
  }
  const auto stats = lock.stats(RwLock::reader_group);
  EXPECT_EQ(stats.entries, 1000u);
  EXPECT_EQ(stats.aces, 1000u);
  EXPECT_EQ(stats.waits, 0u);
}

TEST(RwLockReaderSlots, ReaderBacksOffFromAWriterAndEntersAfterIt) {
  for (const GroupLockPolicy policy : {GroupLockPolicy::throughput, GroupLockPolicy::fair}) {
    Watchdog watchdog;
    RwLock lock(policy);
    lock.lock();
    std::atomic<bool> entered{false};
    std::thread reader([&] {
      lock.lock_shared();
      entered.store(true, std::memory_order_release);
      lock.unlock_shared();
    });
    // The reader must meet the writer: wait until it has counted its entry and backed off.
    while (lock.stats(RwLock::reader_group).entries == 0)
      std::this_thread::yield();
    EXPECT_FALSE(entered.load(std::memory_order_acquire));
    lock.unlock();
    reader.join();
    EXPECT_TRUE(entered.load(std::memory_order_acquire));
    const auto stats = lock.stats(RwLock::reader_group);
    EXPECT_EQ(stats.entries, 1u);
    EXPECT_EQ(stats.waits, 1u);
    EXPECT_EQ(stats.aces, 0u);
  }
}

// More reader threads than slots, so that some share a slot; the writer must wait for all.
TEST(RwLockReaderSlots, WriterWaitsForReadersOnEverySlot) {
  Watchdog watchdog;
  constexpr std::size_t reader_count = RwLock::reader_slot_count + 4;
  RwLock lock;
  std::atomic<std::size_t> inside{0};
  std::atomic<bool> leave{false};
  std::vector<std::thread> readers;
  for (std::size_t i = 0; i < reader_count; ++i) {
    readers.emplace_back([&] {
      lock.lock_shared();
      inside.fetch_add(1, std::memory_order_acq_rel);
      while (!leave.load(std::memory_order_acquire))
        std::this_thread::yield();
      inside.fetch_sub(1, std::memory_order_acq_rel);
      lock.unlock_shared();
    });
  }
  while (inside.load(std::memory_order_acquire) != reader_count)
    std::this_thread::yield();
  std::atomic<std::size_t> seen_inside{reader_count};
  std::thread writer([&] {
    lock.lock();
    seen_inside.store(inside.load(std::memory_order_acquire), std::memory_order_release);
    lock.unlock();
  });
  // Give the writer time to announce itself and go to sleep (not required for correctness).
  std::this_thread::sleep_for(20ms);
  leave.store(true, std::memory_order_release);
  for (std::thread& reader : readers)
    reader.join();
  writer.join();
  EXPECT_EQ(seen_inside.load(std::memory_order_acquire), 0u);
  EXPECT_EQ(lock.stats(RwLock::writer_group).entries, 1u);
  EXPECT_EQ(lock.stats(RwLock::writer_group).waits, 1u);
}

TEST(RwLockReaderSlots, FailedTryLockLeavesNoTrace) {
  Watchdog watchdog;
  RwLock lock;
  lock.lock_shared();
  EXPECT_FALSE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock_for(5ms));
  // The writer withdrew: readers, on this thread and on others, still get in.
  EXPECT_TRUE(lock.try_lock_shared());
  lock.unlock_shared();
  std::thread other([&] {
    EXPECT_TRUE(lock.try_lock_shared());
    lock.unlock_shared();
  });
  other.join();
  lock.unlock_shared();
  EXPECT_EQ(lock.stats(RwLock::writer_group).entries, 0u);
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
  EXPECT_EQ(lock.stats(RwLock::writer_group).entries, 1u);
}

TEST(RwLockReaderSlots, FailedReaderTriesLeaveNoTrace) {
  Watchdog watchdog;
  RwLock lock;
  lock.lock();
  std::thread reader([&] {
    EXPECT_FALSE(lock.try_lock_shared());
    EXPECT_FALSE(lock.try_lock_shared_for(5ms));
    EXPECT_FALSE(lock.try_lock_shared_for(-1ms));
  });
  reader.join();
  lock.unlock();
  EXPECT_EQ(lock.stats(RwLock::reader_group).entries, 0u);
  EXPECT_TRUE(lock.try_lock_shared_for(5ms));
  lock.unlock_shared();
  EXPECT_EQ(lock.stats(RwLock::reader_group).entries, 1u);
}

TEST(RwLockReaderSlots, TimedWriterEntersOnceReadersLeave) {
  Watchdog watchdog;
  RwLock lock;
  lock.lock_shared();
  std::atomic<bool> wrote{false};
  std::thread writer([&] {
    EXPECT_TRUE(lock.try_lock_for(30s));
    wrote.store(true, std::memory_order_release);
    lock.unlock();
  });
  // The writer announces itself: a new reader backs off and fails its try.
  std::thread probe([&] {
    while (lock.try_lock_shared()) {
      lock.unlock_shared();
      std::this_thread::yield();
    }
  });
  probe.join();
  EXPECT_FALSE(wrote.load(std::memory_order_acquire));
  lock.unlock_shared();
  writer.join();
  EXPECT_TRUE(wrote.load(std::memory_order_acquire));
}

// Every form of entry, mixed at random on several threads, against counts of who is inside.
TEST(RwLockReaderSlots, MixedEntriesKeepReadersAndWritersApart) {
  Watchdog watchdog;
  constexpr int thread_count = 4;
  constexpr int operations = 4000;
  RwLock lock;
  std::atomic<int> readers_inside{0};
  std::atomic<int> writers_inside{0};
  std::atomic<std::uint64_t> violations{0};
  std::atomic<std::uint64_t> reads{0};
  std::atomic<std::uint64_t> writes{0};
  std::uint64_t written = 0;  // plain: under the write lock
  const auto check = [&](bool writer) {
    const int readers = readers_inside.load(std::memory_order_acquire);
    const int writers = writers_inside.load(std::memory_order_acquire);
    if (writer ? (readers != 0 || writers != 1) : writers != 0) {
      violations.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<std::uint32_t>(t + 1));
      for (int i = 0; i < operations; ++i) {
        const unsigned choice = random() % 6;
        const bool writer = choice < 3;
        bool entered = true;
        switch (choice) {
          case 0:
            lock.lock();
            break;
          case 1:
            entered = lock.try_lock();
            break;
          case 2:
            entered = lock.try_lock_for(100us);
            break;
          case 3:
            lock.lock_shared();
            break;
          case 4:
            entered = lock.try_lock_shared();
            break;
          default:
            entered = lock.try_lock_shared_for(100us);
            break;
        }
        if (!entered) continue;
        (writer ? writers_inside : readers_inside).fetch_add(1, std::memory_order_acq_rel);
        check(writer);
        if (writer) ++written;
        (writer ? writers_inside : readers_inside).fetch_sub(1, std::memory_order_acq_rel);
        if (writer) {
          writes.fetch_add(1, std::memory_order_relaxed);
          lock.unlock();
        } else {
          reads.fetch_add(1, std::memory_order_relaxed);
          lock.unlock_shared();
        }
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  EXPECT_EQ(violations.load(), 0u);
  EXPECT_EQ(written, writes.load());
  EXPECT_EQ(lock.stats(RwLock::writer_group).entries, writes.load());
  EXPECT_EQ(lock.stats(RwLock::reader_group).entries, reads.load());
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

TEST(RwLockReaderSlotsDeathTest, UnlockSharedWithoutLockIsAContractViolation) {
#ifdef NDEBUG
  GTEST_SKIP() << "unlock_shared is checked only when NDEBUG is not defined";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  RwLock lock;
  EXPECT_DEATH(lock.unlock_shared(), "contract violation: RwLock::unlock_shared");
  lock.lock();
  EXPECT_DEATH(lock.unlock_shared(), "contract violation: RwLock::unlock_shared");
  lock.unlock();
#endif
}

}  // namespace
