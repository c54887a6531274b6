// Unit tests for WorkerContext::wait: a worker sleeps until its condition holds, also when the
// change that made it hold was never rung (a ring that missed the announcement), and before it
// sleeps it re-checks, once per wait, the rings it may have missed itself.
#include "conveyor/framework/detail/worker_context.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "settle_time.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::detail::Control;
using conveyor::detail::Doorbell;
using conveyor::detail::WaitReason;
using conveyor::detail::WorkerContext;
using conveyor::detail::WorkerCounters;
using conveyor::testing::settle_time;
using conveyor::testing::Watchdog;

struct Worker {
  Doorbell bell;
  Control control;
  WorkerCounters counters;
  WorkerContext context{bell, control, counters, 0};

  template <class Ready>
  bool wait(Ready ready) {
    return context.wait(
        WaitReason::items, ready, [] {}, counters.blocked_pop_ticks);
  }
};

TEST(WorkerContextTest, AWaitWhoseConditionHoldsReturnsAtOnce) {
  Worker worker;
  EXPECT_TRUE(worker.wait([] { return true; }));
  EXPECT_EQ(worker.bell.waiting(), WaitReason::none);
}

TEST(WorkerContextTest, AWaitEndsAfterARing) {
  Watchdog watchdog;
  Worker worker;
  std::atomic<bool> ready{false};
  std::thread ringer([&] {
    std::this_thread::sleep_for(settle_time());
    ready.store(true, std::memory_order_release);
    worker.bell.ring(WaitReason::items);
  });
  EXPECT_TRUE(worker.wait([&] { return ready.load(std::memory_order_acquire); }));
  ringer.join();
  EXPECT_EQ(worker.bell.waiting(), WaitReason::none);
}

// A ringer's light-fenced check may miss an announcement made at the same moment as its change.
// Here the change comes between the owner's re-check and its park, and nobody rings at all, which
// is the worst a miss can do: the bounded park runs out and the owner finds the change itself.
TEST(WorkerContextTest, AChangeWhoseRingWasMissedIsFoundAfterABoundedPark) {
  Watchdog watchdog;
  Worker worker;
  int checks = 0;
  // False before the announcement and at the re-check after it; true from then on.
  EXPECT_TRUE(worker.wait([&] { return ++checks > 2; }));
  EXPECT_EQ(worker.bell.waiting(), WaitReason::none);
}

TEST(WorkerContextTest, CancellationEndsAWait) {
  Watchdog watchdog;
  Worker worker;
  worker.control.set_doorbells({&worker.bell});
  std::thread canceller([&] {
    std::this_thread::sleep_for(settle_time());
    worker.control.cancel();
  });
  EXPECT_FALSE(worker.wait([] { return false; }));
  canceller.join();
}

struct CountedRecheck {
  std::atomic<int> runs{0};
  static void run(const void* self) {
    static_cast<CountedRecheck*>(const_cast<void*>(self))
        ->runs.fetch_add(1, std::memory_order_relaxed);
  }
};

TEST(WorkerContextTest, RechecksRunOnceBeforeAWorkerSleeps) {
  Watchdog watchdog;
  Worker worker;
  CountedRecheck first;
  CountedRecheck second;
  worker.context.add_recheck({&first, &CountedRecheck::run});
  worker.context.add_recheck({&second, &CountedRecheck::run});

  // No sleep, no recheck.
  EXPECT_TRUE(worker.wait([] { return true; }));
  EXPECT_EQ(first.runs.load(), 0);

  // A wait through several wake-ups rechecks once.
  std::atomic<int> rings{0};
  // Each ring comes after the worker has announced its wait, so that the worker sleeps at least
  // once whatever the scheduler does.
  auto ring = [&](int times) {
    for (int i = 0; i < times; ++i) {
      while (worker.bell.waiting() != WaitReason::items)
        std::this_thread::yield();
      rings.fetch_add(1, std::memory_order_release);
      worker.bell.ring(WaitReason::items);
    }
  };
  std::thread ringer(ring, 3);
  EXPECT_TRUE(worker.wait([&] { return rings.load(std::memory_order_acquire) >= 3; }));
  ringer.join();
  EXPECT_EQ(first.runs.load(), 1);
  EXPECT_EQ(second.runs.load(), 1);

  // A removed recheck no longer runs.
  worker.context.remove_recheck(&first);
  std::thread last(ring, 1);
  EXPECT_TRUE(worker.wait([&] { return rings.load(std::memory_order_acquire) >= 4; }));
  last.join();
  EXPECT_EQ(first.runs.load(), 1);
  EXPECT_EQ(second.runs.load(), 2);
}

TEST(WorkerContextDeathTest, TooManyRechecksAreAContractViolation) {
  Worker worker;
  CountedRecheck recheck;
  for (std::size_t i = 0; i < WorkerContext::max_rechecks; ++i)
    worker.context.add_recheck({&recheck, &CountedRecheck::run});
  EXPECT_DEATH(worker.context.add_recheck({&recheck, &CountedRecheck::run}), "too many rechecks");
}

}  // namespace
