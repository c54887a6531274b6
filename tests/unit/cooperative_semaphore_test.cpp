// Unit tests for what conveyor::sync::CooperativeSemaphore adds to the Semaphore contract: FIFO
// hand-off, timed-out waiters giving their place back, RAII scoped_lock, and cooperative waiting
// (task suspension) inside oneTBB arenas. The contract it shares with Semaphore is tested for both
// in semaphore_test.cpp.
#include "conveyor/sync/cooperative_semaphore.hpp"

#include <gtest/gtest.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "conveyor/sync/semaphore.hpp"
#include "settle_time.hpp"
#include "task_suspension.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::CooperativeSemaphore;
using conveyor::sync::Semaphore;
using conveyor::testing::settle_time;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

void raise_to(std::atomic<int>& most, int now) {
  int seen = most.load(std::memory_order_relaxed);
  while (now > seen && !most.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
}

TEST(CooperativeSemaphore, AvailableIsZeroWhileSomebodyWaits) {
  Watchdog watchdog;
  CooperativeSemaphore semaphore;
  std::thread waiter([&] { semaphore.acquire(); });
  std::this_thread::sleep_for(settle_time());
  EXPECT_EQ(semaphore.available(), 0);
  EXPECT_FALSE(semaphore.try_acquire());
  semaphore.release();
  waiter.join();
  EXPECT_EQ(semaphore.available(), 0);
}

TEST(CooperativeSemaphore, ThreadWaitersAreServedFirstComeFirstServed) {
  Watchdog watchdog;
  constexpr int waiters = 5;
  CooperativeSemaphore semaphore;
  std::mutex order_mutex;
  std::vector<int> order;
  std::vector<std::thread> threads;
  for (int i = 0; i < waiters; ++i) {
    threads.emplace_back([&, i] {
      semaphore.acquire();
      std::lock_guard lock(order_mutex);
      order.push_back(i);
    });
    std::this_thread::sleep_for(settle_time());  // let waiter i queue before waiter i + 1
  }
  for (int i = 0; i < waiters; ++i) {
    semaphore.release();
    // Each release goes to the head of the queue; wait for it before the next one.
    for (;;) {
      std::lock_guard lock(order_mutex);
      if (static_cast<int>(order.size()) == i + 1) break;
    }
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(CooperativeSemaphore, ATimedOutWaiterDoesNotTakeTheNextWaitersToken) {
  Watchdog watchdog;
  CooperativeSemaphore semaphore;
  std::thread patient([&] { EXPECT_TRUE(semaphore.try_acquire_for(60s)); });
  std::this_thread::sleep_for(settle_time());
  EXPECT_FALSE(semaphore.try_acquire_for(5ms));  // queued behind `patient`, then gives up
  semaphore.release();
  patient.join();
  EXPECT_EQ(semaphore.available(), 0);
}

TEST(CooperativeSemaphore, ScopedLockHoldsATokenForItsScope) {
  Watchdog watchdog;
  CooperativeSemaphore semaphore(2);
  {
    CooperativeSemaphore::scoped_lock first(semaphore);
    EXPECT_EQ(semaphore.available(), 1);
    {
      CooperativeSemaphore::scoped_lock second(semaphore);
      EXPECT_EQ(semaphore.available(), 0);
    }
    EXPECT_EQ(semaphore.available(), 1);
  }
  EXPECT_EQ(semaphore.available(), 2);
}

// The required scenario: 64 tasks in a two-thread arena take a capacity-2 semaphore in turn, then
// all wait for the 64th to arrive. A semaphore that blocked worker threads would deadlock as soon
// as two tasks wait at the gate; suspended tasks free their threads for the others.
TEST(CooperativeSemaphoreInTasks, SixtyFourTasksWaitForEachOtherInATwoThreadArena) {
  SKIP_IF_SUSPENSION_IS_UNCHECKABLE();
  Watchdog watchdog;
  constexpr int tasks = 64;
  CooperativeSemaphore capacity(2);
  CooperativeSemaphore gate;
  std::atomic<int> holders{0};
  std::atomic<int> most_holders{0};
  std::atomic<int> arrivals{0};
  std::atomic<int> through_gate{0};
  tbb::task_arena arena(2);
  arena.execute([&] {
    tbb::task_group group;
    for (int i = 0; i < tasks; ++i) {
      group.run([&] {
        {
          CooperativeSemaphore::scoped_lock lock(capacity);
          raise_to(most_holders, holders.fetch_add(1, std::memory_order_relaxed) + 1);
          holders.fetch_sub(1, std::memory_order_relaxed);
        }
        if (arrivals.fetch_add(1, std::memory_order_acq_rel) + 1 == tasks) gate.release(tasks);
        gate.acquire();
        through_gate.fetch_add(1, std::memory_order_relaxed);
      });
    }
    group.wait();
  });
  EXPECT_EQ(through_gate.load(), tasks);
  EXPECT_LE(most_holders.load(), 2);
  EXPECT_GE(most_holders.load(), 1);
  EXPECT_EQ(capacity.available(), 2);
  EXPECT_EQ(gate.available(), 0);
}

// In an arena with a single slot, a task that waits must suspend, or the task that lets the plain
// thread release could never run.
TEST(CooperativeSemaphoreInTasks, AReleaseFromAPlainThreadResumesASuspendedTask) {
  SKIP_IF_SUSPENSION_IS_UNCHECKABLE();
  Watchdog watchdog;
  CooperativeSemaphore semaphore;
  Semaphore helper_ran;
  int payload = 0;  // plain: ordered by the semaphore's hand-off (TSan checks)
  std::thread releaser([&] {
    helper_ran.acquire();
    payload = 7;
    semaphore.release();
  });
  int seen = 0;
  tbb::task_arena arena(1);
  arena.execute([&] {
    tbb::task_group group;
    group.run([&] {
      group.run([&] { helper_ran.release(); });
      semaphore.acquire();
      seen = payload;
    });
    group.wait();
  });
  releaser.join();
  EXPECT_EQ(seen, 7);
}

TEST(CooperativeSemaphoreInTasks, TimedWaitsInTasksTimeOutOrSucceed) {
  SKIP_IF_SUSPENSION_IS_UNCHECKABLE();
  Watchdog watchdog;
  constexpr int impatient = 8;
  constexpr int patient = 8;
  CooperativeSemaphore semaphore;
  std::atomic<int> timed_out{0};
  std::atomic<int> acquired{0};
  std::atomic<int> wrongly_acquired{0};
  // No token exists until every impatient task has given up, so none of them can succeed.
  std::thread releaser([&] {
    while (timed_out.load(std::memory_order_acquire) < impatient)
      std::this_thread::sleep_for(1ms);
    semaphore.release(patient);
  });
  tbb::task_arena arena(2);
  arena.execute([&] {
    tbb::task_group group;
    for (int i = 0; i < impatient + patient; ++i) {
      group.run([&, i] {
        if (i % 2 == 0) {
          if (semaphore.try_acquire_for(std::chrono::milliseconds(1 + i))) {
            wrongly_acquired.fetch_add(1, std::memory_order_relaxed);
          }
          timed_out.fetch_add(1, std::memory_order_release);
        } else if (semaphore.try_acquire_for(60s)) {
          acquired.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    group.wait();
  });
  releaser.join();
  EXPECT_EQ(wrongly_acquired.load(), 0);
  EXPECT_EQ(timed_out.load(), impatient);
  EXPECT_EQ(acquired.load(), patient);
  EXPECT_EQ(semaphore.available(), 0);
  semaphore.release();
  EXPECT_EQ(semaphore.available(), 1);  // the timed-out tasks gave their places back
}

TEST(CooperativeSemaphoreInTasks, TasksAreServedFirstComeFirstServed) {
  SKIP_IF_SUSPENSION_IS_UNCHECKABLE();
  Watchdog watchdog;
  constexpr int waiters = 5;
  CooperativeSemaphore semaphore;
  Semaphore queued;  // one token per task that is about to wait
  std::mutex order_mutex;
  std::vector<int> order;
  tbb::task_arena arena(1);
  std::thread releaser([&] {
    for (int i = 0; i < waiters; ++i)
      queued.acquire();
    std::this_thread::sleep_for(settle_time());  // the last task reaches its suspension
    for (int i = 0; i < waiters; ++i) {
      semaphore.release();
      for (;;) {
        std::lock_guard lock(order_mutex);
        if (static_cast<int>(order.size()) == i + 1) break;
      }
    }
  });
  // One slot: each task suspends before the next one starts, so the queue order is the start order.
  arena.execute([&] {
    tbb::task_group group;
    std::function<void(int)> start = [&](int i) {
      group.run([&, i] {
        if (i + 1 < waiters) start(i + 1);
        queued.release();
        semaphore.acquire();
        std::lock_guard lock(order_mutex);
        order.push_back(i);
      });
    };
    start(0);
    group.wait();
  });
  releaser.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(CooperativeSemaphoreInTasks, TheOutermostLevelOfAnArenaBlocksAndIsWoken) {
  Watchdog watchdog;
  CooperativeSemaphore semaphore;
  std::thread releaser([&] {
    std::this_thread::sleep_for(10ms);
    semaphore.release(2);
  });
  tbb::task_arena arena(2);
  arena.execute([&] {
    semaphore.acquire();  // not inside a task: blocks this external thread
    EXPECT_TRUE(semaphore.try_acquire_for(60s));
  });
  releaser.join();
  EXPECT_EQ(semaphore.available(), 0);
}

}  // namespace
