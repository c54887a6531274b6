// Unit tests for sync::WakeDeferral and sync::DeferredWakes: a sleeping consumer is woken at
// once, or its wake is deferred for at most half its ring and then delivered, and a deferred wake
// is never lost.
#include "conveyor/sync/deferred_wakes.hpp"

#include <gtest/gtest.h>

#include "watchdog.hpp"

namespace {

using conveyor::sync::DeferredWakes;
using conveyor::sync::Doorbell;
using conveyor::sync::WaitReason;
using conveyor::sync::WakeDeferral;
using conveyor::testing::Watchdog;

// One consumer's doorbell and the producer's debt register that rings it.
class DeferredWakesTest : public ::testing::Test {
 protected:
  DeferredWakesTest() { owed.set_consumers({&consumer}); }
  Doorbell consumer;
  DeferredWakes owed;
};

TEST_F(DeferredWakesTest, AConsumerThatDoesNotWaitIsLeftAlone) {
  WakeDeferral deferral(8, &owed);
  deferral.after_push(consumer);
  EXPECT_EQ(consumer.waiting(), WaitReason::none);
}

TEST(WakeDeferralTest, WithoutADebtRegisterEveryWakeIsImmediate) {
  Watchdog watchdog;
  Doorbell consumer;
  WakeDeferral deferral(8, nullptr);
  consumer.prepare(WaitReason::items);
  deferral.after_push(consumer);
  EXPECT_EQ(consumer.waiting(), WaitReason::none);  // woken
  consumer.cancel();                                // takes the token
}

TEST_F(DeferredWakesTest, DefersForHalfTheRingThenWakes) {
  Watchdog watchdog;
  WakeDeferral deferral(8, &owed);
  consumer.prepare(WaitReason::items);
  for (int push = 0; push < 4; ++push) {
    deferral.after_push(consumer);
    EXPECT_EQ(consumer.waiting(), WaitReason::items) << "push " << push;
  }
  deferral.after_push(consumer);  // the fifth: half the ring was reached
  EXPECT_EQ(consumer.waiting(), WaitReason::none);
  consumer.cancel();
}

TEST_F(DeferredWakesTest, AnUndeferrableWaitIsWokenAtOnce) {
  Watchdog watchdog;
  WakeDeferral deferral(8, &owed);
  consumer.prepare(WaitReason::items, /*deferrable=*/false);
  deferral.after_push(consumer);
  EXPECT_EQ(consumer.waiting(), WaitReason::none);
  consumer.cancel();
}

TEST_F(DeferredWakesTest, DeliverRingsWhatIsOwedOnce) {
  Watchdog watchdog;
  WakeDeferral deferral(8, &owed);
  consumer.prepare(WaitReason::items);
  deferral.after_push(consumer);
  ASSERT_EQ(consumer.waiting(), WaitReason::items);
  owed.deliver();
  EXPECT_EQ(consumer.waiting(), WaitReason::none);
  consumer.cancel();
  // Nothing is owed any more: a new wait is left alone.
  consumer.prepare(WaitReason::items);
  owed.deliver();
  EXPECT_EQ(consumer.waiting(), WaitReason::items);
  consumer.cancel();
}

TEST_F(DeferredWakesTest, AMailboxNeverDefers) {
  Watchdog watchdog;
  WakeDeferral deferral(1, &owed);  // half of one slot is none
  consumer.prepare(WaitReason::items);
  deferral.after_push(consumer);
  EXPECT_EQ(consumer.waiting(), WaitReason::none);
  consumer.cancel();
}

}  // namespace
