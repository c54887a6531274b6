// Stress tests for conveyor::sync::CooperativeSemaphore: many more tasks than arena threads
// contend for a few tokens, tasks and plain threads share one semaphore, timed task waiters race
// releases, and a producer/consumer hand-off carries counted items without loss or duplication.
#include <gtest/gtest.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "conveyor/sync/cooperative_semaphore.hpp"
#include "stress.hpp"
#include "task_suspension.hpp"
#include "tracked.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::CooperativeSemaphore;
using conveyor::testing::stress_items;
using conveyor::testing::Tracked;
using conveyor::testing::Watchdog;

constexpr std::uint64_t mix(std::uint64_t value) {
  return value * 0x9E3779B97F4A7C15u;
}

// How the waiters of a test wait: as tasks in a two-thread arena (they suspend) or as plain
// threads (they block).
enum class Waiters { tasks, threads };

constexpr bool suspension_is_checkable = conveyor::testing::task_suspension_checkable;

#define SKIP_SUSPENDING_TASKS_UNDER_TSAN(kind)                                              \
  if (!suspension_is_checkable && (kind) == Waiters::tasks) {                               \
    GTEST_SKIP() << "ThreadSanitizer cannot follow libtbb's task stack switches (see top)"; \
  }

// Runs body(0) .. body(count - 1) concurrently and waits for all of them.
template <class Body>
void run_workers(Waiters kind, int count, const Body& body) {
  if (kind == Waiters::tasks) {
    static tbb::task_arena arena(2);
    arena.execute([&] {
      tbb::task_group group;
      for (int worker = 0; worker < count; ++worker) {
        group.run([&body, worker] { body(worker); });
      }
      group.wait();
    });
  } else {
    std::vector<std::thread> threads;
    for (int worker = 0; worker < count; ++worker) {
      threads.emplace_back([&body, worker] { body(worker); });
    }
    for (auto& thread : threads)
      thread.join();
  }
}

// Holders of a semaphore of capacity k: never more than k at once, and every entry is counted
// with a sum and an xor of the entrants' ids.
struct HolderCheck {
  explicit HolderCheck(std::int32_t tokens) : semaphore(tokens) {}

  // Every `linger_every`-th entrant waits a little while it holds the token: a task suspends (and
  // the timer thread resumes it), so that other tasks contend meanwhile even with k >= threads.
  void enter(std::uint64_t id, std::uint64_t linger_every = 5) {
    const int now = holders.fetch_add(1, std::memory_order_relaxed) + 1;
    int most = most_holders.load(std::memory_order_relaxed);
    while (now > most &&
           !most_holders.compare_exchange_weak(most, now, std::memory_order_relaxed)) {
    }
    if (id % linger_every == 0 && never_released.try_acquire_for(std::chrono::microseconds(30))) {
      lingering_acquired.fetch_add(1, std::memory_order_relaxed);
    }
    entries.fetch_add(1, std::memory_order_relaxed);
    sum.fetch_add(mix(id), std::memory_order_relaxed);
    xor_of_ids.fetch_xor(mix(id), std::memory_order_relaxed);
    holders.fetch_sub(1, std::memory_order_relaxed);
  }

  CooperativeSemaphore semaphore;
  CooperativeSemaphore never_released;
  std::atomic<std::uint64_t> lingering_acquired{0};  // must stay 0
  std::atomic<int> holders{0};
  std::atomic<int> most_holders{0};
  std::atomic<std::uint64_t> entries{0};
  std::atomic<std::uint64_t> sum{0};
  std::atomic<std::uint64_t> xor_of_ids{0};
};

// Rounds of `waiters` waiters, each taking the semaphore once.
void contend(Waiters kind, std::int32_t tokens, int waiters, std::uint64_t rounds) {
  Watchdog watchdog(std::chrono::seconds(120));
  for (std::uint64_t round = 0; round < rounds; ++round) {
    HolderCheck check(tokens);
    std::uint64_t expected_sum = 0;
    std::uint64_t expected_xor = 0;
    const std::uint64_t first_id = round * static_cast<std::uint64_t>(waiters);
    for (std::uint64_t id = first_id; id < first_id + static_cast<std::uint64_t>(waiters); ++id) {
      expected_sum += mix(id);
      expected_xor ^= mix(id);
    }
    run_workers(kind, waiters, [&](int worker) {
      CooperativeSemaphore::scoped_lock lock(check.semaphore);
      check.enter(first_id + static_cast<std::uint64_t>(worker));
    });
    ASSERT_LE(check.most_holders.load(), tokens) << "round " << round;
    ASSERT_EQ(check.entries.load(), static_cast<std::uint64_t>(waiters)) << "round " << round;
    ASSERT_EQ(check.sum.load(), expected_sum) << "round " << round;
    ASSERT_EQ(check.xor_of_ids.load(), expected_xor) << "round " << round;
    ASSERT_EQ(check.semaphore.available(), tokens) << "round " << round;
    ASSERT_EQ(check.lingering_acquired.load(), 0u) << "round " << round;
  }
}

// Suspending and resuming a task costs a few microseconds (a stack switch and a trip through the
// arena's resume queue), and starting a thread far more, so these run fewer rounds than
// stress_items() would suggest.
std::uint64_t contention_rounds() {
  return std::max<std::uint64_t>(stress_items() / 20'000, 5);
}

class CooperativeSemaphoreContention : public ::testing::TestWithParam<std::tuple<Waiters, int>> {};

TEST_P(CooperativeSemaphoreContention, NeverMoreHoldersThanTokensAndEveryEntryCounted) {
  const auto [kind, tokens] = GetParam();
  SKIP_SUSPENDING_TASKS_UNDER_TSAN(kind);
  // Tasks: 64 in an arena of 2 threads. Threads: 16, so that thread start-up does not dominate.
  contend(kind, tokens, kind == Waiters::tasks ? 64 : 16,
          kind == Waiters::tasks ? contention_rounds() : contention_rounds());
}

INSTANTIATE_TEST_SUITE_P(WaitersAndTokens, CooperativeSemaphoreContention,
                         ::testing::Combine(::testing::Values(Waiters::tasks, Waiters::threads),
                                            ::testing::Values(1, 2, 3)),
                         [](const ::testing::TestParamInfo<std::tuple<Waiters, int>>& param_info) {
                           return std::string(std::get<0>(param_info.param) == Waiters::tasks
                                                  ? "Tasks"
                                                  : "Threads") +
                                  std::to_string(std::get<1>(param_info.param)) + "Tokens";
                         });

// Tasks (which suspend) and plain threads (which block) take the same semaphore in loops.
TEST(CooperativeSemaphoreStress, TasksAndPlainThreadsShareOneSemaphore) {
  SKIP_SUSPENDING_TASKS_UNDER_TSAN(Waiters::tasks);
  Watchdog watchdog(std::chrono::seconds(120));
  constexpr int tasks = 16;
  constexpr int threads = 2;
  const std::uint64_t rounds = std::max<std::uint64_t>(stress_items() / 2'000, 50);
  HolderCheck check(2);
  auto work = [&](std::uint64_t worker) {
    for (std::uint64_t round = 0; round < rounds; ++round) {
      const std::uint64_t id = worker * rounds + round;
      if (round % 5 == 0) {
        while (!check.semaphore.try_acquire_for(std::chrono::microseconds(200))) {
        }
      } else if (round % 5 == 1) {
        // Poll once, then wait: a task that spun here would keep its thread from resuming the
        // suspended holders it waits for.
        if (!check.semaphore.try_acquire()) check.semaphore.acquire();
      } else {
        check.semaphore.acquire();
      }
      check.enter(id, 50);
      check.semaphore.release();
    }
  };
  std::vector<std::thread> plain;
  for (int thread = 0; thread < threads; ++thread) {
    plain.emplace_back([&, thread] { work(static_cast<std::uint64_t>(tasks + thread)); });
  }
  tbb::task_arena arena(2);
  arena.execute([&] {
    tbb::task_group group;
    for (int task = 0; task < tasks; ++task) {
      group.run([&, task] { work(static_cast<std::uint64_t>(task)); });
    }
    group.wait();
  });
  for (auto& thread : plain)
    thread.join();
  std::uint64_t expected_sum = 0;
  std::uint64_t expected_xor = 0;
  for (std::uint64_t id = 0; id < static_cast<std::uint64_t>(tasks + threads) * rounds; ++id) {
    expected_sum += mix(id);
    expected_xor ^= mix(id);
  }
  EXPECT_LE(check.most_holders.load(), 2);
  EXPECT_EQ(check.entries.load(), static_cast<std::uint64_t>(tasks + threads) * rounds);
  EXPECT_EQ(check.sum.load(), expected_sum);
  EXPECT_EQ(check.xor_of_ids.load(), expected_xor);
  EXPECT_EQ(check.semaphore.available(), 2);
  EXPECT_EQ(check.lingering_acquired.load(), 0u);
}

// Timed waiters (often timing out; a task is then resumed by the timer thread) and untimed ones
// race a plain thread that releases in batches. No token may be lost or invented.
void timed_waiters_lose_no_token(Waiters kind) {
  Watchdog watchdog(std::chrono::seconds(120));
  CooperativeSemaphore semaphore;
  const std::uint64_t batches = std::max<std::uint64_t>(stress_items() / 200, 100);
  std::atomic<std::uint64_t> taken{0};
  std::atomic<bool> releasing{true};
  std::thread releaser([&] {
    for (std::uint64_t batch = 0; batch < batches; ++batch) {
      semaphore.release(static_cast<std::int32_t>(1 + batch % 3));
      if (batch % 16 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    releasing.store(false, std::memory_order_release);
  });
  constexpr int timed_waiters = 6;
  constexpr int untimed_waiters = 2;
  std::atomic<int> timed_left{timed_waiters};
  std::atomic<int> untimed_left{untimed_waiters};
  run_workers(kind, timed_waiters + untimed_waiters, [&](int worker) {
    if (worker < timed_waiters) {
      const auto timeout = std::chrono::microseconds(20 + 40 * worker);
      while (releasing.load(std::memory_order_acquire)) {
        if (semaphore.try_acquire_for(timeout)) taken.fetch_add(1, std::memory_order_relaxed);
      }
      // The last timed waiter releases a stop token for each untimed one; nobody else can take
      // them now.
      if (timed_left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        semaphore.release(untimed_waiters);
      }
      return;
    }
    for (;;) {
      semaphore.acquire();
      // Once releasing is over, the token taken here is not counted: each untimed waiter
      // consumes one token more than it counts, and there are exactly that many stop tokens.
      if (!releasing.load(std::memory_order_acquire)) break;
      taken.fetch_add(1, std::memory_order_relaxed);
    }
    untimed_left.fetch_sub(1, std::memory_order_relaxed);
  });
  releaser.join();
  std::uint64_t released = 0;
  for (std::uint64_t batch = 0; batch < batches; ++batch)
    released += 1 + batch % 3;
  EXPECT_EQ(untimed_left.load(), 0);
  EXPECT_EQ(taken.load() + static_cast<std::uint64_t>(semaphore.available()), released)
      << "taken " << taken.load() << ", left " << semaphore.available();
}

TEST(CooperativeSemaphoreStress, TimedTaskWaitersLoseNoToken) {
  SKIP_SUSPENDING_TASKS_UNDER_TSAN(Waiters::tasks);
  timed_waiters_lose_no_token(Waiters::tasks);
}
TEST(CooperativeSemaphoreStress, TimedThreadWaitersLoseNoToken) {
  timed_waiters_lose_no_token(Waiters::threads);
}

// A producer fills a ring guarded by two semaphores (free slots, filled slots) and a consumer
// drains it; with fewer slots than items both sides wait again and again.
void hand_off(Waiters kind, std::uint64_t items, std::int32_t slots) {
  Watchdog watchdog(std::chrono::seconds(120));
  CooperativeSemaphore free_slots(slots);
  CooperativeSemaphore filled(0);
  std::vector<std::optional<Tracked>> ring(static_cast<std::size_t>(slots));  // plain: ordered
  std::uint64_t sum = 0;
  std::uint64_t xor_of_items = 0;
  std::uint64_t out_of_order = 0;
  std::uint64_t expected_sum = 0;
  std::uint64_t expected_xor = 0;
  run_workers(kind, 2, [&](int worker) {
    if (worker == 0) {  // consumer
      for (std::uint64_t i = 0; i < items; ++i) {
        filled.acquire();
        auto& slot = ring[i % ring.size()];
        // Tracked holds a signed value; mix() uses every bit, so compare as unsigned.
        const std::uint64_t value =
            slot.has_value() ? static_cast<std::uint64_t>(slot->value()) : 0;
        out_of_order += slot.has_value() && value == mix(i) ? 0 : 1;
        sum += value;
        xor_of_items ^= value;
        slot.reset();
        free_slots.release();
      }
      return;
    }
    for (std::uint64_t i = 0; i < items; ++i) {  // producer
      free_slots.acquire();
      ring[i % ring.size()].emplace(static_cast<std::int64_t>(mix(i)));
      expected_sum += mix(i);
      expected_xor ^= mix(i);
      filled.release();
    }
  });
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(sum, expected_sum);
  EXPECT_EQ(xor_of_items, expected_xor);
  EXPECT_EQ(filled.available(), 0);
  EXPECT_EQ(free_slots.available(), slots);
  EXPECT_EQ(Tracked::alive(), 0);
}

// Scaled down from stress_items(): through one slot nearly every item costs a suspension (or a
// futex sleep) on one side and a resumption (or wake) on the other.
TEST(CooperativeSemaphoreStress, TaskHandOffThroughOneSlot) {
  SKIP_SUSPENDING_TASKS_UNDER_TSAN(Waiters::tasks);
  hand_off(Waiters::tasks, stress_items() / 20, 1);
}
TEST(CooperativeSemaphoreStress, TaskHandOffThroughSixtyFourSlots) {
  SKIP_SUSPENDING_TASKS_UNDER_TSAN(Waiters::tasks);
  hand_off(Waiters::tasks, stress_items() / 5, 64);
}
TEST(CooperativeSemaphoreStress, ThreadHandOffThroughOneSlot) {
  hand_off(Waiters::threads, stress_items() / 20, 1);
}
TEST(CooperativeSemaphoreStress, ThreadHandOffThroughSixtyFourSlots) {
  hand_off(Waiters::threads, stress_items() / 5, 64);
}

}  // namespace
