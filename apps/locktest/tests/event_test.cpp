// Event (automatic and manual reset) and wait_any's left-to-right priority.
#include "event.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "watchdog.hpp"

namespace {

using conveyor::locktest::Event;
using conveyor::locktest::EventReset;
using conveyor::locktest::no_event;
using conveyor::locktest::try_wait_any;
using conveyor::locktest::wait_any;

TEST(Event, AutomaticResetLetsOneWaiterThroughPerSet) {
  Event event(EventReset::automatic, true);
  EXPECT_TRUE(event.try_wait());
  EXPECT_FALSE(event.is_set());
  EXPECT_FALSE(event.try_wait());
  event.set();
  event.set();  // setting a signalled event does nothing
  EXPECT_TRUE(event.try_wait());
  EXPECT_FALSE(event.try_wait());
}

TEST(Event, ManualResetStaysSetUntilReset) {
  Event event(EventReset::manual, false);
  EXPECT_FALSE(event.try_wait());
  event.set();
  EXPECT_TRUE(event.try_wait());
  EXPECT_TRUE(event.try_wait());
  event.reset();
  EXPECT_FALSE(event.try_wait());
}

TEST(Event, ManualSetReleasesEveryWaiter) {
  conveyor::testing::Watchdog watchdog;
  Event event(EventReset::manual, false);
  std::atomic<int> passed{0};
  std::vector<std::thread> waiters;
  waiters.reserve(4);
  for (int index = 0; index < 4; ++index) {
    waiters.emplace_back([&] {
      event.wait();
      passed.fetch_add(1, std::memory_order_relaxed);
    });
  }
  event.set();
  for (auto& waiter : waiters)
    waiter.join();
  EXPECT_EQ(passed.load(), 4);
  EXPECT_TRUE(event.is_set());
}

TEST(Event, AutomaticSetsHandOverExactlyOncePerSet) {
  conveyor::testing::Watchdog watchdog;
  constexpr int rounds = 2000;
  constexpr int waiter_count = 3;
  Event token(EventReset::automatic, false);
  Event done(EventReset::automatic, false);
  std::atomic<bool> stop{false};
  std::atomic<int> passed{0};
  std::atomic<int> exited{0};
  std::vector<std::thread> waiters;
  waiters.reserve(waiter_count);
  for (int index = 0; index < waiter_count; ++index) {
    waiters.emplace_back([&] {
      for (;;) {
        token.wait();
        if (stop.load(std::memory_order_acquire)) break;
        passed.fetch_add(1, std::memory_order_relaxed);
        done.set();
      }
      exited.fetch_add(1, std::memory_order_release);
    });
  }
  // One set per round, and the next only after the previous one was consumed: exactly one
  // waiter passes each time.
  for (int round = 0; round < rounds; ++round) {
    token.set();
    done.wait();
  }
  EXPECT_EQ(passed.load(), rounds);
  stop.store(true, std::memory_order_release);
  while (exited.load(std::memory_order_acquire) < waiter_count) {
    token.set();
    std::this_thread::yield();
  }
  for (auto& waiter : waiters)
    waiter.join();
  EXPECT_EQ(passed.load(), rounds);
}

TEST(WaitAny, LowestSignalledIndexWins) {
  Event first(EventReset::automatic, false);
  Event second(EventReset::manual, true);
  Event third(EventReset::automatic, true);
  EXPECT_EQ(wait_any({&first, &second, &third}), 1u);
  first.set();
  EXPECT_EQ(wait_any({&first, &second, &third}), 0u);
  EXPECT_FALSE(first.is_set());  // consumed: automatic reset
  EXPECT_TRUE(second.is_set());  // manual reset stays set
  EXPECT_TRUE(third.is_set());   // not the winner, so not consumed
}

TEST(WaitAny, ConsumesOnlyTheWinner) {
  Event first(EventReset::automatic, true);
  Event second(EventReset::automatic, true);
  Event* events[] = {&first, &second};
  EXPECT_EQ(try_wait_any(events), 0u);
  EXPECT_EQ(try_wait_any(events), 1u);
  EXPECT_EQ(try_wait_any(events), no_event);
}

TEST(WaitAny, WakesWhenAnyEventIsSet) {
  conveyor::testing::Watchdog watchdog;
  Event first(EventReset::automatic, false);
  Event second(EventReset::manual, false);
  std::atomic<std::size_t> result{no_event};
  std::thread waiter([&] { result.store(wait_any({&first, &second}), std::memory_order_relaxed); });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  second.set();
  waiter.join();
  EXPECT_EQ(result.load(), 1u);
}

TEST(WaitAny, NoLostWakeUpUnderRacingSets) {
  conveyor::testing::Watchdog watchdog;
  constexpr int rounds = 5000;
  Event first(EventReset::automatic, false);
  Event second(EventReset::automatic, false);
  Event acknowledged(EventReset::automatic, false);
  std::atomic<int> first_count{0};
  std::atomic<int> second_count{0};
  std::thread waiter([&] {
    for (int round = 0; round < rounds; ++round) {
      const auto index = wait_any({&first, &second});
      (index == 0 ? first_count : second_count).fetch_add(1, std::memory_order_relaxed);
      acknowledged.set();
    }
  });
  for (int round = 0; round < rounds; ++round) {
    (round % 2 == 0 ? first : second).set();
    acknowledged.wait();
  }
  waiter.join();
  EXPECT_EQ(first_count.load(), rounds / 2);
  EXPECT_EQ(second_count.load(), rounds / 2);
}

}  // namespace
