// Stress tests for conveyor::sync::Semaphore: no token is ever lost or invented, under every mix of
// blocking, polling and timed waiters, and a hand-off carries data with it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "conveyor/sync/semaphore.hpp"
#include "stress.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::Semaphore;
using conveyor::testing::stress_items;
using conveyor::testing::Watchdog;

// A producer writes items into a ring guarded by two semaphores (free slots and filled slots);
// the consumer checks that it sees every item exactly once and in order.
void hand_off(std::uint64_t items, std::int32_t slots) {
  Watchdog watchdog(std::chrono::seconds(120));
  Semaphore free_slots(slots);
  Semaphore filled(0);
  std::vector<std::uint64_t> ring(
      static_cast<std::size_t>(slots));  // plain: ordered by the semaphores
  std::uint64_t sum = 0;
  std::uint64_t mismatches = 0;
  std::thread consumer([&] {
    for (std::uint64_t i = 0; i < items; ++i) {
      filled.acquire();
      const std::uint64_t value = ring[i % ring.size()];
      free_slots.release();
      mismatches += value != i * 2654435761u ? 1 : 0;
      sum += value;
    }
  });
  std::uint64_t expected_sum = 0;
  for (std::uint64_t i = 0; i < items; ++i) {
    free_slots.acquire();
    ring[i % ring.size()] = i * 2654435761u;
    expected_sum += i * 2654435761u;
    filled.release();
  }
  consumer.join();
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(sum, expected_sum);
  EXPECT_EQ(filled.available(), 0);
  EXPECT_EQ(free_slots.available(), slots);
}

TEST(SemaphoreStress, HandOffThroughOneSlot) {
  hand_off(stress_items(), 1);
}
TEST(SemaphoreStress, HandOffThroughSixtyFourSlots) {
  hand_off(stress_items(), 64);
}

// k tokens, many threads: never more than k holders at once, and every token comes back.
void bounded_holders(int threads, std::int32_t tokens, std::uint64_t rounds_per_thread) {
  Watchdog watchdog(std::chrono::seconds(120));
  Semaphore semaphore(tokens);
  std::atomic<int> holders{0};
  std::atomic<int> most_holders{0};
  std::atomic<std::uint64_t> entries{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (std::uint64_t round = 0; round < rounds_per_thread; ++round) {
        semaphore.acquire();
        const int now = holders.fetch_add(1, std::memory_order_relaxed) + 1;
        int most = most_holders.load(std::memory_order_relaxed);
        while (now > most &&
               !most_holders.compare_exchange_weak(most, now, std::memory_order_relaxed)) {
        }
        entries.fetch_add(1, std::memory_order_relaxed);
        holders.fetch_sub(1, std::memory_order_relaxed);
        semaphore.release();
      }
    });
  }
  for (auto& worker : workers)
    worker.join();
  EXPECT_LE(most_holders.load(), tokens);
  EXPECT_EQ(entries.load(), rounds_per_thread * static_cast<std::uint64_t>(threads));
  EXPECT_EQ(semaphore.available(), tokens);
}

// More threads than the machine's cores: divide the work so the test stays quick.
TEST(SemaphoreStress, OneTokenEightThreads) {
  bounded_holders(8, 1, stress_items() / 40);
}
TEST(SemaphoreStress, ThreeTokensEightThreads) {
  bounded_holders(8, 3, stress_items() / 40);
}

// Blocking, polling and timed waiters share one semaphore with releasers of single and multiple
// tokens. At the end the count must equal exactly what was released minus what was taken.
TEST(SemaphoreStress, MixedWaitersLoseNoToken) {
  Watchdog watchdog(std::chrono::seconds(120));
  Semaphore semaphore;
  const std::uint64_t batches = stress_items() / 100;
  std::atomic<std::uint64_t> taken{0};
  std::atomic<bool> releasing{true};
  std::vector<std::thread> waiters;
  waiters.emplace_back([&] {  // blocking, until the releasers are done and a final token arrives
    for (;;) {
      semaphore.acquire();
      if (!releasing.load(std::memory_order_acquire)) return;
      taken.fetch_add(1, std::memory_order_relaxed);
    }
  });
  waiters.emplace_back([&] {  // polling
    while (releasing.load(std::memory_order_acquire)) {
      if (semaphore.try_acquire()) taken.fetch_add(1, std::memory_order_relaxed);
    }
  });
  waiters.emplace_back([&] {  // timed, often timing out
    while (releasing.load(std::memory_order_acquire)) {
      if (semaphore.try_acquire_for(std::chrono::microseconds(50))) {
        taken.fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  std::uint64_t released = 0;
  for (std::uint64_t batch = 0; batch < batches; ++batch) {
    const auto n = static_cast<std::int32_t>(1 + batch % 4);
    semaphore.release(n);
    released += static_cast<std::uint64_t>(n);
  }
  releasing.store(false, std::memory_order_release);
  waiters[1].join();
  waiters[2].join();
  semaphore.release();  // the blocking waiter's stop signal, once nobody else can take it
  waiters[0].join();
  // The blocking waiter consumed exactly one token without counting it.
  EXPECT_EQ(taken.load() + static_cast<std::uint64_t>(semaphore.available()), released)
      << "taken " << taken.load() << ", left " << semaphore.available();
}

}  // namespace
