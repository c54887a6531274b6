// Stress tests for conveyor::sync::Mailbox and MailboxSet: millions of tasks through one to eight
// consumers with none lost or duplicated, a 1:1 hand-off through a single slot, and aborts that
// land while every thread is busy (no hang, no leak).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "conveyor/sync/mailbox.hpp"
#include "conveyor/sync/mailbox_set.hpp"
#include "conveyor/sync/semaphore.hpp"
#include "stress.hpp"
#include "tracked.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::Mailbox;
using conveyor::sync::MailboxSet;
using conveyor::sync::Semaphore;
using conveyor::testing::stress_items;
using conveyor::testing::Tracked;
using conveyor::testing::Watchdog;

// Task ids are scrambled so that the sum and the xor catch a lost task paired with a duplicate.
std::uint64_t task_value(std::uint64_t id) {
  return id * 0x9E3779B97F4A7C15ull;
}

struct Checksum {
  std::uint64_t count = 0;
  std::uint64_t sum = 0;
  std::uint64_t xor_all = 0;

  void add(std::uint64_t value) {
    ++count;
    sum += value;
    xor_all ^= value;
  }
  void merge(const Checksum& other) {
    count += other.count;
    sum += other.sum;
    xor_all ^= other.xor_all;
  }
};

struct Task {
  std::uint64_t id;
  std::uint64_t value;
};

// One producer puts `tasks` tasks through K mailboxes and closes; each consumer takes until done.
// Checks count, sum and xor, that every id arrived exactly once, and that each consumer ended on
// its done and only its done.
void dispatch(std::size_t consumers, std::uint64_t tasks) {
  Watchdog watchdog(std::chrono::seconds(120));
  MailboxSet<Task> mailboxes(consumers);
  std::vector<std::atomic<std::uint8_t>> times_seen(tasks);
  std::vector<Checksum> received(consumers);
  std::vector<int> dones(consumers, 0);
  std::vector<std::thread> threads;
  for (std::size_t me = 0; me < consumers; ++me) {
    threads.emplace_back([&, me] {
      Checksum mine;  // local: neighbouring consumers' totals would share a cache line
      while (std::optional<Task> task = mailboxes.take(me)) {
        mine.add(task->value);
        times_seen[task->id].fetch_add(1, std::memory_order_relaxed);
      }
      received[me] = mine;
      dones[me] += mailboxes.finished(me) && !mailboxes.aborted() ? 1 : 0;
      // Done is final: a consumer that looks again finds it again, and nothing else.
      EXPECT_EQ(mailboxes.take(me), std::nullopt);
      EXPECT_EQ(mailboxes.try_take(me), std::nullopt);
    });
  }
  Checksum sent;
  for (std::uint64_t id = 0; id < tasks; ++id) {
    const Task task{id, task_value(id)};
    sent.add(task.value);
    ASSERT_TRUE(mailboxes.put(task));
  }
  ASSERT_TRUE(mailboxes.close());
  for (auto& thread : threads)
    thread.join();

  Checksum total;
  for (const Checksum& part : received)
    total.merge(part);
  EXPECT_EQ(total.count, sent.count);
  EXPECT_EQ(total.sum, sent.sum);
  EXPECT_EQ(total.xor_all, sent.xor_all);
  const auto not_once = std::count_if(times_seen.begin(), times_seen.end(), [](const auto& seen) {
    return seen.load(std::memory_order_relaxed) != 1;
  });
  EXPECT_EQ(not_once, 0) << "tasks lost or delivered twice";
  for (std::size_t me = 0; me < consumers; ++me)
    EXPECT_EQ(dones[me], 1) << "consumer " << me;
}

// Every shape pushes the full stress count; single_slot_items() is kept as the one place to
// change it for the single-slot shapes.
std::uint64_t single_slot_items() {
  return std::max<std::uint64_t>(stress_items(), 1);
}

TEST(MailboxSetStress, OneConsumer) {
  dispatch(1, single_slot_items());
}
TEST(MailboxSetStress, TwoConsumers) {
  dispatch(2, single_slot_items());
}
TEST(MailboxSetStress, FourConsumers) {
  dispatch(4, single_slot_items());
}
TEST(MailboxSetStress, EightConsumers) {
  dispatch(8, single_slot_items());
}

// 1:1 through a single Mailbox: the producer sleeps on the on-emptied semaphore until the
// consumer hands the slot back, so ownership of the slot ping-pongs between the two threads.
TEST(MailboxStress, OneToOneHandOffThroughOneSlot) {
  Watchdog watchdog(std::chrono::seconds(120));
  const std::uint64_t items = single_slot_items();
  Semaphore slot_free(1);
  Mailbox<std::uint64_t> mailbox(&slot_free);
  Checksum received;
  std::uint64_t out_of_order = 0;
  std::thread consumer([&] {
    // Local totals, published after the loop: the producer's stack is next door.
    Checksum mine;
    std::uint64_t mismatches = 0;
    while (std::optional<std::uint64_t> value = mailbox.take()) {
      mismatches += *value != task_value(mine.count) ? 1 : 0;
      mine.add(*value);
    }
    received = mine;
    out_of_order = mismatches;
  });
  Checksum sent;
  for (std::uint64_t id = 0; id < items; ++id) {
    std::uint64_t value = task_value(id);
    sent.add(value);
    slot_free.acquire();
    ASSERT_TRUE(mailbox.try_put(value));  // the token promised an empty slot
  }
  slot_free.acquire();
  ASSERT_TRUE(mailbox.try_put_done());
  consumer.join();
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(received.count, sent.count);
  EXPECT_EQ(received.sum, sent.sum);
  EXPECT_EQ(received.xor_all, sent.xor_all);
  EXPECT_TRUE(mailbox.done());
}

// Round trips: a value goes out through one mailbox and comes back incremented through another,
// so every hand-off wakes the other side. Each round trip costs two wake-ups; fewer items.
TEST(MailboxStress, PingPongRoundTrips) {
  Watchdog watchdog(std::chrono::seconds(120));
  const std::uint64_t round_trips = std::max<std::uint64_t>(single_slot_items() / 10, 1);
  Mailbox<std::uint64_t> ping;
  Mailbox<std::uint64_t> pong;
  std::thread echo([&] {
    while (std::optional<std::uint64_t> value = ping.take()) {
      std::uint64_t reply = *value + 1;
      ASSERT_TRUE(pong.try_put(reply));  // empty: the other side took the last reply already
    }
    ASSERT_TRUE(pong.try_put_done());
  });
  std::uint64_t value = 0;
  for (std::uint64_t trip = 0; trip < round_trips; ++trip) {
    std::uint64_t outgoing = value;
    ASSERT_TRUE(ping.try_put(outgoing));
    std::optional<std::uint64_t> reply = pong.take();
    ASSERT_TRUE(reply.has_value());
    value = *reply;
  }
  ASSERT_TRUE(ping.try_put_done());
  EXPECT_EQ(pong.take(), std::nullopt);
  echo.join();
  EXPECT_EQ(value, round_trips);
}

enum class Aborter { outside_thread, consumer, producer };

// One run: a producer and K consumers at full speed, and an abort from `aborter` at a random
// moment. Every thread must return, no task may arrive twice, and every item must be destroyed.
void abort_while_busy(std::mt19937_64& random, Aborter aborter) {
  const std::size_t consumers = 1 + random() % 4;
  const std::uint64_t tasks = 2000;
  const std::uint64_t abort_after = random() % tasks;  // in tasks put, or tasks received
  {
    MailboxSet<Tracked> mailboxes(consumers);
    std::vector<std::atomic<std::uint8_t>> times_seen(tasks);
    std::atomic<std::uint64_t> received{0};
    std::vector<std::thread> threads;
    for (std::size_t me = 0; me < consumers; ++me) {
      threads.emplace_back([&, me] {
        while (std::optional<Tracked> task = mailboxes.take(me)) {
          times_seen[task->value()].fetch_add(1, std::memory_order_relaxed);
          const std::uint64_t so_far = received.fetch_add(1, std::memory_order_relaxed) + 1;
          if (aborter == Aborter::consumer && me == 0 && so_far >= abort_after) mailboxes.abort();
        }
      });
    }
    std::thread outside;
    if (aborter == Aborter::outside_thread) {
      outside = std::thread([&] {
        while (received.load(std::memory_order_relaxed) < abort_after && !mailboxes.finished(0))
          std::this_thread::yield();
        mailboxes.abort();
      });
    }
    std::uint64_t put = 0;
    for (std::uint64_t id = 0; id < tasks; ++id) {
      if (aborter == Aborter::producer && id == abort_after) mailboxes.abort();
      if (!mailboxes.put(Tracked(id))) break;
      ++put;
    }
    // Close may finish before the abort arrives, or lose to it; both are fine.
    const bool closed = mailboxes.close();
    EXPECT_TRUE(closed || mailboxes.aborted());
    // A consumer that aborts may have finished before reaching its threshold: make sure an abort
    // happens in every run, so that every shape ends with the abort path taken.
    mailboxes.abort();
    for (auto& thread : threads)
      thread.join();
    if (outside.joinable()) outside.join();

    EXPECT_LE(received.load(), put);
    const auto twice = std::count_if(times_seen.begin(), times_seen.end(), [](const auto& seen) {
      return seen.load(std::memory_order_relaxed) > 1;
    });
    EXPECT_EQ(twice, 0);
    for (std::size_t me = 0; me < consumers; ++me)
      EXPECT_TRUE(mailboxes.finished(me));
  }
  EXPECT_EQ(Tracked::alive(), 0) << "an item leaked";
}

TEST(MailboxSetStress, AbortWhileBusyNeitherHangsNorLeaks) {
  Watchdog watchdog(std::chrono::seconds(120));
  Tracked::reset_alive();
  std::mt19937_64 random(20240502);
  const std::uint64_t runs = std::clamp<std::uint64_t>(stress_items() / 20'000, 30, 300);
  for (std::uint64_t run = 0; run < runs; ++run) {
    abort_while_busy(random, Aborter::outside_thread);
    abort_while_busy(random, Aborter::consumer);
    abort_while_busy(random, Aborter::producer);
    if (::testing::Test::HasFailure()) break;
  }
}

// One mailbox, a producer and a consumer running flat out, and an abort from a third thread at a
// random moment. Every item a put handed over (try_put returned true) is either taken exactly
// once or destroyed by the abort, and nothing leaks: the abort's destroyer and a put that raced
// with it must not both destroy the item, nor neither.
TEST(MailboxStress, AbortRacingPutAndTakeLosesAndDuplicatesNothing) {
  Watchdog watchdog(std::chrono::seconds(120));
  Tracked::reset_alive();
  std::mt19937_64 random(20261125);
  const std::uint64_t runs = std::clamp<std::uint64_t>(stress_items() / 2'000, 100, 2'000);
  for (std::uint64_t run = 0; run < runs; ++run) {
    const auto abort_after = std::chrono::microseconds(random() % 200);
    std::int64_t put = 0;
    std::int64_t taken = 0;
    std::int64_t taken_twice = 0;
    {
      Mailbox<Tracked> mailbox;
      std::thread producer([&] {
        for (std::int64_t next = 0; !mailbox.aborted();) {
          Tracked item(next);
          if (mailbox.try_put(item)) {
            ++put;
            ++next;
          }
        }
      });
      std::thread consumer([&] {
        std::int64_t expected = 0;
        while (std::optional<Tracked> item = mailbox.take()) {
          if (item->value() < expected) ++taken_twice;
          expected = item->value() + 1;
          ++taken;
        }
      });
      std::this_thread::sleep_for(abort_after);
      mailbox.abort();
      producer.join();
      consumer.join();
      EXPECT_LE(taken, put);
      EXPECT_GE(taken + 1, put) << "at most the one item the abort found can be dropped";
      EXPECT_EQ(taken_twice, 0);
      EXPECT_EQ(Tracked::alive(), 0) << "the abort destroys a held item at once";
    }
    EXPECT_EQ(Tracked::alive(), 0) << "an item leaked";
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
