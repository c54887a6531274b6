// Unit tests for sync::Doorbell: a worker sleeps until a ring for the reason it waits
// for, a bounded park ends on its own, tokens never pile up, and a oneTBB task suspends instead
// of blocking its thread.
#include "conveyor/sync/doorbell.hpp"

#include <gtest/gtest.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <atomic>
#include <thread>

#include "settle_time.hpp"
#include "task_suspension.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::Doorbell;
using conveyor::sync::WaitReason;
using conveyor::testing::settle_time;
using conveyor::testing::Watchdog;

TEST(DoorbellTest, ARingWithoutAnAnnouncementDoesNothing) {
  Doorbell bell;
  EXPECT_FALSE(bell.waits_for(WaitReason::items));
  bell.ring(WaitReason::items);
  bell.ring_any();
  EXPECT_EQ(bell.waiting(), WaitReason::none);
}

TEST(DoorbellTest, ARingForAnotherReasonLeavesTheAnnouncement) {
  Doorbell bell;
  bell.prepare(WaitReason::items);
  bell.ring(WaitReason::space);
  EXPECT_EQ(bell.waiting(), WaitReason::items);
  bell.cancel();  // takes no token: nobody gave one
  EXPECT_EQ(bell.waiting(), WaitReason::none);
}

TEST(DoorbellTest, CancelAfterARingTakesItsToken) {
  Watchdog watchdog;
  Doorbell bell;
  bell.prepare(WaitReason::items);
  bell.ring(WaitReason::items);
  EXPECT_EQ(bell.waiting(), WaitReason::none);
  bell.cancel();  // the ring's token is taken here, so the next park really sleeps
  std::atomic<bool> woken{false};
  std::thread owner([&] {
    bell.prepare(WaitReason::space);
    bell.park();
    woken.store(true, std::memory_order_release);
  });
  std::this_thread::sleep_for(settle_time());
  EXPECT_FALSE(woken.load(std::memory_order_acquire));
  bell.ring(WaitReason::space);
  owner.join();
  EXPECT_TRUE(woken.load(std::memory_order_acquire));
}

TEST(DoorbellTest, ParkReturnsAfterAMatchingRing) {
  Watchdog watchdog;
  Doorbell bell;
  std::atomic<bool> ready{false};
  std::thread owner([&] {
    for (;;) {
      bell.prepare(WaitReason::window);
      if (ready.load(std::memory_order_acquire)) {
        bell.cancel();
        return;
      }
      bell.park();
    }
  });
  std::this_thread::sleep_for(settle_time());
  ready.store(true, std::memory_order_release);
  bell.ring(WaitReason::window);
  owner.join();
  EXPECT_EQ(bell.waiting(), WaitReason::none);
}

TEST(DoorbellTest, RingAnyEndsEveryWait) {
  Watchdog watchdog;
  for (WaitReason reason : {WaitReason::items, WaitReason::space, WaitReason::window}) {
    Doorbell bell;
    std::thread owner([&] {
      bell.prepare(reason);
      bell.park();
    });
    std::this_thread::sleep_for(settle_time());
    bell.ring_any();
    owner.join();
  }
}

TEST(DoorbellTest, AHandOverRingsOnlyWhenTheWaitIsOver) {
  Watchdog watchdog;
  Doorbell bell;
  bell.prepare(WaitReason::space);
  bell.ring_after_hand_over(WaitReason::space, [] { return false; });  // not enough room yet
  EXPECT_EQ(bell.waiting(), WaitReason::space);
  bell.ring_after_hand_over(WaitReason::items);  // another reason
  EXPECT_EQ(bell.waiting(), WaitReason::space);
  bell.ring_after_hand_over(WaitReason::space, [] { return true; });
  EXPECT_EQ(bell.waiting(), WaitReason::none);
  bell.cancel();  // takes the ring's token
}

TEST(DoorbellTest, ARecheckRingsLikeAHandOver) {
  Watchdog watchdog;
  Doorbell bell;
  bell.prepare(WaitReason::window);
  bell.ring_on_recheck(WaitReason::window, [] { return false; });
  EXPECT_EQ(bell.waiting(), WaitReason::window);
  bell.ring_on_recheck(WaitReason::window, [] { return true; });
  EXPECT_EQ(bell.waiting(), WaitReason::none);
  bell.cancel();
}

TEST(DoorbellTest, RingAnyEndsAWaitForAnyReason) {
  Watchdog watchdog;
  Doorbell bell;
  bell.prepare(WaitReason::window);
  bell.ring_any();
  EXPECT_EQ(bell.waiting(), WaitReason::none);
  EXPECT_TRUE(bell.park_bounded());  // the token is there
}

TEST(DoorbellTest, ABoundedParkEndsWithoutARing) {
  Watchdog watchdog;
  Doorbell bell;
  bell.prepare(WaitReason::items);
  // Nobody rings: the park runs out, and the announcement is still up for the owner to withdraw.
  EXPECT_FALSE(bell.park_bounded());
  EXPECT_EQ(bell.waiting(), WaitReason::items);
  bell.cancel();
  EXPECT_EQ(bell.waiting(), WaitReason::none);
}

TEST(DoorbellTest, ABoundedParkReturnsTrueAfterARing) {
  Watchdog watchdog;
  Doorbell bell;
  bell.prepare(WaitReason::space);
  std::thread ringer([&] { bell.ring(WaitReason::space); });
  // The ring came before or during the park; either way its token ends the park.
  while (!bell.park_bounded()) {
    ASSERT_EQ(bell.waiting(), WaitReason::space);  // no ring yet: still announced
  }
  ringer.join();
  EXPECT_EQ(bell.waiting(), WaitReason::none);
}

TEST(DoorbellTest, ARingAfterABoundedParkRanOutIsTakenByCancel) {
  Watchdog watchdog;
  Doorbell bell;
  bell.prepare(WaitReason::window);
  EXPECT_FALSE(bell.park_bounded());
  bell.ring(WaitReason::window);  // the owner's re-check then finds the condition true
  bell.cancel();                  // and takes the ring's token
  // No token left over: a new wait sleeps until its own ring.
  bell.prepare(WaitReason::window);
  EXPECT_FALSE(bell.park_bounded());
  bell.cancel();
}

TEST(DoorbellTest, ACooperativeOwnersRingersUseAFullFence) {
  Watchdog watchdog;
  Doorbell bell(/*cooperative=*/true);
  // Not in a task, so the cooperative semaphore blocks the thread; a bounded park of a
  // cooperative owner parks until a ring.
  bell.prepare(WaitReason::items);
  std::thread ringer([&] {
    std::this_thread::sleep_for(settle_time());
    EXPECT_TRUE(bell.waits_for(WaitReason::items));
    bell.wake(WaitReason::items);
  });
  EXPECT_TRUE(bell.park_bounded());
  ringer.join();
}

TEST(DoorbellTest, ACooperativeOwnerSuspendsAndFreesItsThread) {
  SKIP_IF_SUSPENSION_IS_UNCHECKABLE();
  Watchdog watchdog;
  Doorbell bell(/*cooperative=*/true);
  tbb::task_arena arena(1, 0);  // one thread for both tasks: blocking it would deadlock
  tbb::task_group group;
  std::atomic<bool> ready{false};
  arena.execute([&] {
    group.run([&] {
      for (;;) {
        bell.prepare(WaitReason::items);
        if (ready.load(std::memory_order_acquire)) {
          bell.cancel();
          return;
        }
        bell.park();
      }
    });
    group.run([&] {
      ready.store(true, std::memory_order_release);
      bell.ring(WaitReason::items);
    });
  });
  arena.execute([&] { group.wait(); });
  EXPECT_TRUE(ready.load());
}

}  // namespace
