// Unit tests for conveyor::sync::Mailbox: every state change, waking, abort, lifetimes and the
// contract.
#include "conveyor/sync/mailbox.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include "conveyor/sync/semaphore.hpp"
#include "tracked.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::Mailbox;
using conveyor::sync::Semaphore;
using conveyor::testing::Tracked;
using conveyor::testing::TrackedLeakCheck;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

using MailboxTest = TrackedLeakCheck;

TEST_F(MailboxTest, StartsEmpty) {
  Mailbox<int> mailbox;
  EXPECT_TRUE(mailbox.empty());
  EXPECT_FALSE(mailbox.done());
  EXPECT_FALSE(mailbox.aborted());
  EXPECT_EQ(mailbox.try_take(), std::nullopt);
}

TEST_F(MailboxTest, PutThenTakeEmptiesTheSlotAgain) {
  Mailbox<int> mailbox;
  int value = 7;
  ASSERT_TRUE(mailbox.try_put(value));
  EXPECT_FALSE(mailbox.empty());
  EXPECT_EQ(mailbox.try_take(), 7);
  EXPECT_TRUE(mailbox.empty());
  EXPECT_EQ(mailbox.try_take(), std::nullopt);
  value = 8;
  ASSERT_TRUE(mailbox.try_put(value));
  EXPECT_EQ(mailbox.try_take(), 8);
}

TEST_F(MailboxTest, TryPutOnAFullSlotFailsAndLeavesTheValueIntact) {
  Mailbox<std::unique_ptr<int>> mailbox;
  auto first = std::make_unique<int>(1);
  auto second = std::make_unique<int>(2);
  ASSERT_TRUE(mailbox.try_put(first));
  EXPECT_EQ(first, nullptr);  // moved from on success
  EXPECT_FALSE(mailbox.try_put(second));
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(*second, 2);
  EXPECT_FALSE(mailbox.try_put_done());
  EXPECT_EQ(**mailbox.try_take(), 1);
}

TEST_F(MailboxTest, DoneIsFinal) {
  Mailbox<Tracked> mailbox;
  ASSERT_TRUE(mailbox.try_put_done());
  EXPECT_TRUE(mailbox.done());
  EXPECT_FALSE(mailbox.empty());
  EXPECT_EQ(mailbox.take(), std::nullopt);
  EXPECT_EQ(mailbox.take(), std::nullopt);
  EXPECT_EQ(mailbox.try_take(), std::nullopt);
  Tracked value(3);
  EXPECT_FALSE(mailbox.try_put(value));
  EXPECT_EQ(value.value(), 3);
  EXPECT_FALSE(mailbox.try_put_done());
  EXPECT_TRUE(mailbox.done());
}

TEST_F(MailboxTest, MoveOnlyItemsTravel) {
  Mailbox<std::unique_ptr<int>> mailbox;
  auto item = std::make_unique<int>(42);
  ASSERT_TRUE(mailbox.try_put(item));
  std::optional<std::unique_ptr<int>> taken = mailbox.take();
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(**taken, 42);
}

TEST_F(MailboxTest, NonDefaultConstructibleItemsTravelAndNothingLeaks) {
  {
    Mailbox<Tracked> mailbox;
    for (int i = 0; i < 100; ++i) {
      Tracked item(i);
      ASSERT_TRUE(mailbox.try_put(item));
      EXPECT_EQ(item.value(), Tracked::moved_from);
      std::optional<Tracked> taken = mailbox.try_take();
      ASSERT_TRUE(taken.has_value());
      EXPECT_EQ(taken->value(), i);
    }
    EXPECT_EQ(Tracked::alive(), 0);
  }
}

TEST_F(MailboxTest, DestructorDestroysAHeldItem) {
  {
    Mailbox<Tracked> mailbox;
    Tracked item(5);
    ASSERT_TRUE(mailbox.try_put(item));
    EXPECT_EQ(Tracked::alive(), 2);  // the moved-from original and the one in the slot
  }
  EXPECT_EQ(Tracked::alive(), 0);
}

TEST_F(MailboxTest, AbortDestroysAHeldItemAndEndsBothSides) {
  Mailbox<Tracked> mailbox;
  {
    Tracked item(5);
    ASSERT_TRUE(mailbox.try_put(item));
  }
  EXPECT_EQ(Tracked::alive(), 1);
  mailbox.abort();
  EXPECT_EQ(Tracked::alive(), 0);
  EXPECT_TRUE(mailbox.aborted());
  EXPECT_TRUE(mailbox.empty());
  EXPECT_EQ(mailbox.take(), std::nullopt);
  EXPECT_EQ(mailbox.try_take(), std::nullopt);
  Tracked refused(6);
  EXPECT_FALSE(mailbox.try_put(refused));
  EXPECT_EQ(refused.value(), 6);
  EXPECT_FALSE(mailbox.try_put_done());
  mailbox.abort();  // idempotent
  EXPECT_TRUE(mailbox.aborted());
}

TEST_F(MailboxTest, AbortKeepsTheDoneSentinel) {
  Mailbox<int> mailbox;
  ASSERT_TRUE(mailbox.try_put_done());
  mailbox.abort();
  EXPECT_TRUE(mailbox.done());
  EXPECT_TRUE(mailbox.aborted());
  EXPECT_EQ(mailbox.take(), std::nullopt);
}

TEST_F(MailboxTest, EmptyingTheSlotReleasesTheOnEmptiedSemaphore) {
  Semaphore emptied;
  Mailbox<int> mailbox(&emptied);
  int value = 1;
  ASSERT_TRUE(mailbox.try_put(value));
  EXPECT_EQ(emptied.available(), 0);
  EXPECT_EQ(mailbox.take(), 1);
  EXPECT_EQ(emptied.available(), 1);
  ASSERT_TRUE(mailbox.try_put_done());
  EXPECT_EQ(mailbox.take(), std::nullopt);
  EXPECT_EQ(emptied.available(), 1);  // done is never emptied
}

TEST_F(MailboxTest, TakeBlocksUntilPut) {
  Watchdog watchdog;
  Mailbox<int> mailbox;
  std::atomic<bool> returned{false};
  std::optional<int> taken;
  std::thread consumer([&] {
    taken = mailbox.take();
    returned.store(true, std::memory_order_release);
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(returned.load(std::memory_order_acquire));
  int value = 11;
  ASSERT_TRUE(mailbox.try_put(value));
  consumer.join();
  EXPECT_EQ(taken, 11);
  EXPECT_TRUE(mailbox.empty());
}

TEST_F(MailboxTest, DoneWakesABlockedTake) {
  Watchdog watchdog;
  Mailbox<int> mailbox;
  std::optional<int> taken = 0;
  std::thread consumer([&] { taken = mailbox.take(); });
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(mailbox.try_put_done());
  consumer.join();
  EXPECT_EQ(taken, std::nullopt);
}

TEST_F(MailboxTest, AbortWakesABlockedTake) {
  Watchdog watchdog;
  Mailbox<int> mailbox;
  std::optional<int> taken = 0;
  std::thread consumer([&] { taken = mailbox.take(); });
  std::this_thread::sleep_for(20ms);
  mailbox.abort();
  consumer.join();
  EXPECT_EQ(taken, std::nullopt);
}

TEST_F(MailboxTest, PutHandsOverWhatWasWrittenBefore) {
  Watchdog watchdog;
  Mailbox<int> mailbox;
  int payload = 0;  // plain: the mailbox's release/acquire must order it (TSan checks)
  std::thread producer([&] {
    payload = 42;
    int value = 1;
    ASSERT_TRUE(mailbox.try_put(value));
  });
  EXPECT_EQ(mailbox.take(), 1);
  EXPECT_EQ(payload, 42);
  producer.join();
}

TEST_F(MailboxTest, TakingHandsTheSlotBackBeforeTheNextPut) {
  Watchdog watchdog;
  Semaphore emptied;
  Mailbox<int> mailbox(&emptied);
  int consumer_note = 0;  // plain: written before the take returns, read after the next put
  std::thread consumer([&] {
    EXPECT_EQ(mailbox.take(), 1);
    consumer_note = 7;
    EXPECT_EQ(mailbox.take(), std::nullopt);
  });
  int value = 1;
  ASSERT_TRUE(mailbox.try_put(value));
  emptied.acquire();
  ASSERT_TRUE(mailbox.try_put_done());
  consumer.join();
  EXPECT_EQ(consumer_note, 7);
}

using MailboxDeathTest = MailboxTest;

TEST_F(MailboxDeathTest, TwoConsumersAtOnceIsAContractViolation) {
#ifdef NDEBUG
  GTEST_SKIP() << "the role check is a debug contract";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Mailbox<int> mailbox;
  EXPECT_DEATH(
      {
        // Whichever of the two takes comes second finds the other one inside and aborts.
        std::thread other([&] { (void)mailbox.take(); });
        std::this_thread::sleep_for(20ms);
        (void)mailbox.take();
        other.join();
      },
      "contract violation: Mailbox: two threads in the consumer role at once");
#endif
}

}  // namespace
