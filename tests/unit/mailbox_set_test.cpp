// Unit tests for conveyor::sync::MailboxSet: the round-robin fill, the free-slot wait, close (phase
// 2), abort, lifetimes and the contract.
#include "conveyor/sync/mailbox_set.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <thread>
#include <vector>

#include "tracked.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::MailboxSet;
using conveyor::testing::Tracked;
using conveyor::testing::TrackedLeakCheck;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

using MailboxSetTest = TrackedLeakCheck;

TEST_F(MailboxSetTest, SizeIsTheNumberOfConsumers) {
  MailboxSet<int> one(1);
  EXPECT_EQ(one.size(), 1u);
  MailboxSet<int> five(5);
  EXPECT_EQ(five.size(), 5u);
  EXPECT_FALSE(five.aborted());
  for (std::size_t i = 0; i < five.size(); ++i)
    EXPECT_FALSE(five.finished(i));
}

TEST_F(MailboxSetTest, PutsFillTheSlotsRoundRobinWhileNobodyTakes) {
  constexpr std::size_t consumers = 4;
  MailboxSet<int> mailboxes(consumers);
  for (std::size_t i = 0; i < consumers; ++i)
    ASSERT_TRUE(mailboxes.put(static_cast<int>(100 + i)));
  for (std::size_t i = 0; i < consumers; ++i)
    EXPECT_EQ(mailboxes.try_take(i), static_cast<int>(100 + i)) << "slot " << i;
}

TEST_F(MailboxSetTest, TheFingerMovesPastTheSlotItFilled) {
  // A consumer that empties its slot at once does not get every item: the next put starts at the
  // next slot.
  MailboxSet<int> mailboxes(3);
  ASSERT_TRUE(mailboxes.put(1));
  EXPECT_EQ(mailboxes.try_take(0), 1);
  ASSERT_TRUE(mailboxes.put(2));
  EXPECT_EQ(mailboxes.try_take(0), std::nullopt);
  EXPECT_EQ(mailboxes.try_take(1), 2);
}

TEST_F(MailboxSetTest, PutSkipsFullSlots) {
  MailboxSet<int> mailboxes(3);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(mailboxes.put(i));
  EXPECT_EQ(mailboxes.try_take(1), 1);
  ASSERT_TRUE(mailboxes.put(10));  // the finger is back at 0; slots 0 and 2 are full
  EXPECT_EQ(mailboxes.try_take(1), 10);
  EXPECT_EQ(mailboxes.try_take(0), 0);
  EXPECT_EQ(mailboxes.try_take(2), 2);
}

TEST_F(MailboxSetTest, PutBlocksWhileEverySlotIsFullAndResumesWhenAConsumerTakes) {
  Watchdog watchdog;
  MailboxSet<int> mailboxes(2);
  ASSERT_TRUE(mailboxes.put(0));
  ASSERT_TRUE(mailboxes.put(1));
  std::atomic<bool> returned{false};
  std::thread producer([&] {
    EXPECT_TRUE(mailboxes.put(2));
    returned.store(true, std::memory_order_release);
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(returned.load(std::memory_order_acquire));
  EXPECT_EQ(mailboxes.take(1), 1);
  producer.join();
  EXPECT_TRUE(returned.load(std::memory_order_acquire));
  EXPECT_EQ(mailboxes.try_take(1), 2);
  EXPECT_EQ(mailboxes.try_take(0), 0);
}

TEST_F(MailboxSetTest, CloseOnEmptySlotsDeliversDoneToEveryConsumer) {
  Watchdog watchdog;
  MailboxSet<int> mailboxes(3);
  EXPECT_TRUE(mailboxes.close());
  for (std::size_t i = 0; i < mailboxes.size(); ++i) {
    EXPECT_TRUE(mailboxes.finished(i));
    EXPECT_EQ(mailboxes.take(i), std::nullopt);
  }
}

TEST_F(MailboxSetTest, CloseWaitsForFullSlotsAndDeliversDoneToEveryConsumer) {
  Watchdog watchdog;
  MailboxSet<Tracked> mailboxes(3);
  ASSERT_TRUE(mailboxes.put(Tracked(0)));
  ASSERT_TRUE(mailboxes.put(Tracked(1)));
  std::atomic<bool> closed{false};
  std::thread producer([&] {
    EXPECT_TRUE(mailboxes.close());
    closed.store(true, std::memory_order_release);
  });
  // Consumer 2 gets its done at once; 0 and 1 hold items that must be taken first.
  EXPECT_EQ(mailboxes.take(2), std::nullopt);
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(closed.load(std::memory_order_acquire));
  for (int i = 0; i < 2; ++i) {
    std::optional<Tracked> item = mailboxes.take(static_cast<std::size_t>(i));
    ASSERT_TRUE(item.has_value());
    EXPECT_EQ(item->value(), i);
  }
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(mailboxes.take(i), std::nullopt);
  producer.join();
  EXPECT_TRUE(closed.load(std::memory_order_acquire));
  for (std::size_t i = 0; i < mailboxes.size(); ++i)
    EXPECT_TRUE(mailboxes.finished(i));
}

TEST_F(MailboxSetTest, ConsumersThatWaitGetTheirItemsAndDone) {
  Watchdog watchdog;
  constexpr std::size_t consumers = 3;
  constexpr int items = 300;
  MailboxSet<int> mailboxes(consumers);
  std::vector<long> sums(consumers, 0);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < consumers; ++i) {
    threads.emplace_back([&, i] {
      while (std::optional<int> item = mailboxes.take(i))
        sums[i] += *item;
    });
  }
  for (int item = 1; item <= items; ++item)
    ASSERT_TRUE(mailboxes.put(item));
  ASSERT_TRUE(mailboxes.close());
  for (auto& thread : threads)
    thread.join();
  long total = 0;
  for (long sum : sums)
    total += sum;
  EXPECT_EQ(total, items * (items + 1) / 2);
}

TEST_F(MailboxSetTest, AbortWakesABlockedPutAndDropsTheHeldItems) {
  Watchdog watchdog;
  MailboxSet<Tracked> mailboxes(2);
  ASSERT_TRUE(mailboxes.put(Tracked(0)));
  ASSERT_TRUE(mailboxes.put(Tracked(1)));
  std::thread producer([&] { EXPECT_FALSE(mailboxes.put(Tracked(2))); });
  std::this_thread::sleep_for(20ms);
  mailboxes.abort();
  producer.join();
  EXPECT_TRUE(mailboxes.aborted());
  EXPECT_EQ(Tracked::alive(), 0);
  EXPECT_FALSE(mailboxes.put(Tracked(3)));
  EXPECT_FALSE(mailboxes.close());
}

TEST_F(MailboxSetTest, AbortWakesABlockedClose) {
  Watchdog watchdog;
  MailboxSet<int> mailboxes(2);
  ASSERT_TRUE(mailboxes.put(0));
  std::thread producer([&] { EXPECT_FALSE(mailboxes.close()); });
  std::this_thread::sleep_for(20ms);
  mailboxes.abort();
  producer.join();
}

TEST_F(MailboxSetTest, AbortWakesEveryBlockedConsumer) {
  Watchdog watchdog;
  constexpr std::size_t consumers = 4;
  MailboxSet<int> mailboxes(consumers);
  std::atomic<int> woken{0};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < consumers; ++i) {
    threads.emplace_back([&, i] {
      EXPECT_EQ(mailboxes.take(i), std::nullopt);
      woken.fetch_add(1, std::memory_order_relaxed);
    });
  }
  std::this_thread::sleep_for(20ms);
  mailboxes.abort();
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(woken.load(), static_cast<int>(consumers));
  for (std::size_t i = 0; i < consumers; ++i)
    EXPECT_TRUE(mailboxes.finished(i));
  mailboxes.abort();  // idempotent
}

TEST_F(MailboxSetTest, DestructorDestroysTheItemsStillInSlots) {
  {
    MailboxSet<Tracked> mailboxes(3);
    ASSERT_TRUE(mailboxes.put(Tracked(0)));
    ASSERT_TRUE(mailboxes.put(Tracked(1)));
    EXPECT_EQ(Tracked::alive(), 2);
  }
  EXPECT_EQ(Tracked::alive(), 0);
}

using MailboxSetDeathTest = MailboxSetTest;

TEST_F(MailboxSetDeathTest, NoConsumersIsAContractViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(MailboxSet<int> mailboxes(0),
               "contract violation: MailboxSet needs at least one consumer");
}

TEST_F(MailboxSetDeathTest, PutAfterCloseIsAContractViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  MailboxSet<int> mailboxes(2);
  ASSERT_TRUE(mailboxes.close());
  EXPECT_DEATH((void)mailboxes.put(1), "contract violation: MailboxSet::put after close");
}

TEST_F(MailboxSetDeathTest, CloseTwiceIsAContractViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  MailboxSet<int> mailboxes(1);
  ASSERT_TRUE(mailboxes.close());
  EXPECT_DEATH((void)mailboxes.close(), "contract violation: MailboxSet::close called twice");
}

TEST_F(MailboxSetDeathTest, AnUnknownConsumerIsAContractViolation) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  MailboxSet<int> mailboxes(2);
  EXPECT_DEATH((void)mailboxes.try_take(2), "contract violation: MailboxSet: no such consumer");
}

}  // namespace
