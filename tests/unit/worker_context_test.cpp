// Unit tests for WorkerContext::wait: a worker sleeps until its condition holds, also when the
// change that made it hold was never rung (a ring that missed the announcement), and before it
// sleeps it re-checks, once per wait, the rings it may have missed itself: those of its InPort
// (producers waiting for room), its OutPort (consumers waiting for items) and the window gate it
// advances (a sequencer waiting for room in the window).
#include "conveyor/framework/detail/worker_context.hpp"

#include "conveyor/framework/detail/in_port.hpp"
#include "conveyor/framework/detail/out_port.hpp"
#include "conveyor/framework/detail/port/make_out_port.hpp"
#include "conveyor/framework/detail/window_gate.hpp"
#include "conveyor/framework/detail/worker_loop.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "counted_recheck.hpp"
#include "settle_time.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Dispatch;
using conveyor::detail::Batch;
using conveyor::detail::Control;
using conveyor::detail::Entry;
using conveyor::detail::InPort;
using conveyor::detail::make_out_port;
using conveyor::detail::OutPort;
using conveyor::detail::Parcel;
using conveyor::detail::ReorderBuffer;
using conveyor::detail::Tag;
using conveyor::detail::Tagging;
using conveyor::detail::WindowGate;
using conveyor::detail::WorkerContext;
using conveyor::detail::WorkerCounters;
using conveyor::sync::Doorbell;
using conveyor::sync::SpscRing;
using conveyor::sync::WaitReason;
using conveyor::testing::CountedRecheck;
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

// In the three tests below, a change is made before the other side announces its wait, so the
// hand-over's own check finds nobody to wake, as a check that missed the announcement would. The
// worker that made the change must then wake the other side when it waits itself; if it does not,
// the other side's park() never returns and the watchdog fails the test.

Parcel<int> item(int value) {
  return Parcel<int>(Entry<int>{Tag::fresh(static_cast<std::uint64_t>(value)), value});
}

TEST(WorkerContextTest, AConsumerAboutToSleepWakesAProducerWaitingForRoom) {
  Watchdog watchdog;
  SpscRing<Parcel<int>> lane(2);
  SpscRing<Batch<int>> returns(2);
  Doorbell producer;
  Worker consumer;
  InPort<int> in(consumer.context, {{&lane}, {&returns}, {&producer}});
  for (int value : {1, 2}) {
    Parcel<int> parcel = item(value);
    ASSERT_TRUE(lane.try_push(parcel));
  }
  ASSERT_TRUE(in.try_pop());
  ASSERT_TRUE(in.try_pop());
  producer.prepare(WaitReason::space);  // after the pops' checks
  std::thread waiter([&] { EXPECT_FALSE(in.pop([] {})); });
  producer.park();  // woken by the consumer's recheck as it waits for items
  EXPECT_EQ(producer.waiting(), WaitReason::none);
  lane.close();
  consumer.bell.ring(WaitReason::items);
  waiter.join();
}

TEST(WorkerContextTest, AProducerAboutToSleepWakesAConsumerWaitingForItems) {
  Watchdog watchdog;
  SpscRing<Parcel<int>> lane(1);
  SpscRing<Batch<int>> returns(1);
  Doorbell consumer;
  Worker producer;
  const Dispatch dispatch = Dispatch::round_robin();
  std::unique_ptr<OutPort<int>> port = make_out_port<int>(
      producer.context, producer.context.counters(), {{&lane}, {&returns}, {&consumer}},
      {.dispatch = &dispatch, .batch = 1, .tagging = Tagging::none});
  OutPort<int>& out = *port;
  Parcel<int> first = item(1);
  ASSERT_TRUE(lane.try_push(first));                       // the lane is full
  consumer.prepare(WaitReason::items);                     // after the push's check
  std::thread emitter([&] { EXPECT_TRUE(out.emit(2)); });  // waits for room
  consumer.park();  // woken by the producer's recheck as it waits for room
  EXPECT_EQ(consumer.waiting(), WaitReason::none);
  ASSERT_TRUE(lane.try_pop());
  producer.bell.ring(WaitReason::space);
  emitter.join();
  EXPECT_TRUE(lane.try_pop());
}

TEST(WorkerContextTest, AnInOrderStageAboutToSleepWakesItsSequencer) {
  Watchdog watchdog;
  constexpr std::uint64_t window = 4;
  Doorbell sequencer;
  WindowGate gate(window, sequencer);
  gate.request_wake_at(window);  // number 4 waits for half the window: released >= 3
  gate.advance(3);               // before the sequencer announces
  sequencer.prepare(WaitReason::window);
  SpscRing<Parcel<int>> lane(1);
  SpscRing<Batch<int>> returns(1);
  Doorbell producer;
  Worker stage;
  InPort<int> in(stage.context, {{&lane}, {&returns}, {&producer}});
  ReorderBuffer<int> reorder(window);
  std::thread waiter([&] {
    EXPECT_TRUE(consume_in_order(
        in, stage.context, reorder, &gate, [](int&&) {}, [] {}));
  });
  sequencer.park();  // woken by the gate's recheck as the stage waits for items
  EXPECT_EQ(sequencer.waiting(), WaitReason::none);
  lane.close();
  stage.bell.ring(WaitReason::items);
  waiter.join();
}

TEST(WorkerContextDeathTest, TooManyRechecksAreAContractViolation) {
  Worker worker;
  CountedRecheck recheck;
  for (std::size_t i = 0; i < conveyor::sync::Waiter::max_rechecks; ++i)
    worker.context.add_recheck({&recheck, &CountedRecheck::run});
  EXPECT_DEATH(worker.context.add_recheck({&recheck, &CountedRecheck::run}), "too many rechecks");
}

}  // namespace
