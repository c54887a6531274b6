// Unit tests for sync::Waiter, the owner's side of the Doorbell protocol: it returns once its
// condition holds or it is cancelled, runs its rechecks once before it parks, recovers from a
// ring that the cheap check missed in both ways (bounded park, heavy fence first), and parks until
// a ring when its ringers never miss (no recovery).
#include "conveyor/sync/waiter.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "counted_recheck.hpp"
#include "settle_time.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::Doorbell;
using conveyor::sync::Waiter;
using conveyor::sync::WaitReason;
using conveyor::testing::CountedRecheck;
using conveyor::testing::settle_time;
using conveyor::testing::Watchdog;

class WaiterTest : public ::testing::TestWithParam<Waiter::Recovery> {};

TEST_P(WaiterTest, ReturnsAtOnceWhenTheConditionHolds) {
  Watchdog watchdog;
  Doorbell bell;
  Waiter waiter(bell, GetParam());
  EXPECT_TRUE(waiter.wait(
      WaitReason::items, [] { return true; }, [] { return false; }));
  EXPECT_EQ(bell.waiting(), WaitReason::none);
}

TEST_P(WaiterTest, ReturnsFalseOnceCancelled) {
  Watchdog watchdog;
  Doorbell bell;
  Waiter waiter(bell, GetParam());
  EXPECT_FALSE(waiter.wait(
      WaitReason::items, [] { return false; }, [] { return true; }));
  EXPECT_EQ(bell.waiting(), WaitReason::none);
}

TEST_P(WaiterTest, SleepsUntilTheRingerHandsOver) {
  Watchdog watchdog;
  Doorbell bell;
  Waiter waiter(bell, GetParam());
  std::atomic<int> items{0};
  std::thread ringer([&] {
    std::this_thread::sleep_for(settle_time());
    items.store(1, std::memory_order_release);
    bell.ring_after_hand_over(WaitReason::items);
  });
  EXPECT_TRUE(waiter.wait(
      WaitReason::items, [&] { return items.load(std::memory_order_acquire) > 0; },
      [] { return false; }));
  ringer.join();
  EXPECT_EQ(bell.waiting(), WaitReason::none);
}

TEST_P(WaiterTest, ACancellationRingWakesTheOwner) {
  Watchdog watchdog;
  Doorbell bell;
  Waiter waiter(bell, GetParam());
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(settle_time());
    cancelled.store(true, std::memory_order_relaxed);
    bell.ring_any();
  });
  EXPECT_FALSE(waiter.wait(
      WaitReason::space, [] { return false; },
      [&] { return cancelled.load(std::memory_order_relaxed); }));
  canceller.join();
}

TEST_P(WaiterTest, ManyHandOversLoseNoWakeUp) {
  Watchdog watchdog;
  constexpr int rounds = 20'000;
  Doorbell bell;
  Waiter waiter(bell, GetParam());
  std::atomic<int> published{0};
  std::thread ringer([&] {
    for (int i = 1; i <= rounds; ++i) {
      published.store(i, std::memory_order_release);
      bell.ring_after_hand_over(WaitReason::items);
    }
  });
  for (int i = 1; i <= rounds; ++i) {
    ASSERT_TRUE(waiter.wait(
        WaitReason::items, [&] { return published.load(std::memory_order_acquire) >= i; },
        [] { return false; }));
  }
  ringer.join();
}

// Recovery::none: ringers ring behind a full fence (Doorbell::ring), so the owner parks until a
// ring without any recovery, and none is lost.
TEST(WaiterNoRecoveryTest, FullFenceRingsLoseNoWakeUp) {
  Watchdog watchdog;
  constexpr int rounds = 20'000;
  Doorbell bell;
  Waiter waiter(bell, Waiter::Recovery::none);
  std::atomic<int> published{0};
  std::thread ringer([&] {
    for (int i = 1; i <= rounds; ++i) {
      published.store(i, std::memory_order_release);
      bell.ring(WaitReason::items);
    }
  });
  for (int i = 1; i <= rounds; ++i) {
    ASSERT_TRUE(waiter.wait(
        WaitReason::items, [&] { return published.load(std::memory_order_acquire) >= i; },
        [] { return false; }));
  }
  ringer.join();
  EXPECT_EQ(bell.waiting(), WaitReason::none);
}

// A missed ring, as its owner sees it: the change is not visible to the look before the
// announcement nor to the re-check right after it, and no ring comes. Each recovery finds it
// without a ring: the bounded park by its timeout, fence_first by the heavy fence.
TEST_P(WaiterTest, FindsAChangeWhoseRingWasMissed) {
  Watchdog watchdog;
  Doorbell bell;
  Waiter waiter(bell, GetParam());
  int looks = 0;
  EXPECT_TRUE(waiter.wait(
      WaitReason::window, [&] { return ++looks > 2; }, [] { return false; }));
  EXPECT_GE(looks, 3);  // the third look found it: no ring was needed
  EXPECT_LE(looks, 4);
  EXPECT_EQ(bell.waiting(), WaitReason::none);
}

INSTANTIATE_TEST_SUITE_P(BothRecoveries, WaiterTest,
                         ::testing::Values(Waiter::Recovery::bounded_park,
                                           Waiter::Recovery::fence_first));

TEST(WaiterRecheckTest, RechecksRunOncePerWaitAndAreRemoved) {
  Watchdog watchdog;
  Doorbell bell;
  Waiter waiter(bell);
  CountedRecheck recheck;
  waiter.add_recheck({&recheck, &CountedRecheck::run});
  std::atomic<int> rings{0};
  std::thread ringer([&] {
    // Three rings, each after the owner has announced, so that it parks three times.
    for (int i = 1; i <= 3; ++i) {
      while (bell.waiting() != WaitReason::items)
        std::this_thread::yield();
      rings.store(i, std::memory_order_release);
      bell.ring(WaitReason::items);
    }
  });
  EXPECT_TRUE(waiter.wait(
      WaitReason::items, [&] { return rings.load(std::memory_order_acquire) == 3; },
      [] { return false; }));
  ringer.join();
  EXPECT_EQ(recheck.runs.load(), 1);
  waiter.remove_recheck(&recheck);
  std::atomic<bool> ready{false};
  std::thread second([&] {
    while (bell.waiting() != WaitReason::space)
      std::this_thread::yield();
    ready.store(true, std::memory_order_release);
    bell.ring(WaitReason::space);
  });
  EXPECT_TRUE(waiter.wait(
      WaitReason::space, [&] { return ready.load(std::memory_order_acquire); },
      [] { return false; }));
  second.join();
  EXPECT_EQ(recheck.runs.load(), 1);  // removed: not run by the second wait
}

TEST(WaiterDeathTest, TooManyRechecksAreAContractViolation) {
  Doorbell bell;
  Waiter waiter(bell);
  CountedRecheck recheck;
  for (std::size_t i = 0; i < Waiter::max_rechecks; ++i)
    waiter.add_recheck({&recheck, &CountedRecheck::run});
  EXPECT_DEATH(waiter.add_recheck({&recheck, &CountedRecheck::run}), "too many rechecks");
}

}  // namespace
