// AckLedger and AckToken: tokens settle in any order, copies share one token, a failure holds the
// ledger back, and in a pipeline the source hears of an item only once every branch is done.
#include "conveyor/framework/ack.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "allocation_hooks.hpp"
#include "conveyor/framework/async.hpp"
#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/tee.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::AckLedger;
using conveyor::AckToken;
using conveyor::testing::fail_allocation_after;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

TEST(AckLedger, NothingIsAcknowledgedBeforeTheFirstTokenSettles) {
  AckLedger ledger;
  EXPECT_FALSE(ledger.acknowledged().has_value());
  AckToken token = ledger.issue(10);
  EXPECT_FALSE(token.empty());
  EXPECT_EQ(ledger.outstanding(), 1U);
  EXPECT_FALSE(ledger.acknowledged().has_value());
  token.release();
  EXPECT_TRUE(token.empty());
  EXPECT_EQ(ledger.acknowledged(), 10U);
  EXPECT_EQ(ledger.outstanding(), 0U);
  EXPECT_FALSE(ledger.failed());
}

TEST(AckLedger, TheAcknowledgedPositionAdvancesOverTheSettledPrefixOnly) {
  AckLedger ledger;
  AckToken first = ledger.issue(1);
  AckToken second = ledger.issue(2);
  AckToken third = ledger.issue(3);
  third.release();
  second.release();
  EXPECT_FALSE(ledger.acknowledged().has_value());  // the first is still out
  first.release();
  EXPECT_EQ(ledger.acknowledged(), 3U);
}

TEST(AckLedger, CopiesShareOneTokenThatSettlesWithTheLastCopy) {
  AckLedger ledger;
  AckToken token = ledger.issue(7);
  AckToken copy = token;
  std::optional<AckToken> another = copy;
  token.release();
  copy.release();
  EXPECT_FALSE(ledger.acknowledged().has_value());
  another.reset();  // destroying a copy lets it go as well
  EXPECT_EQ(ledger.acknowledged(), 7U);
}

TEST(AckLedger, AFailedCopyHoldsTheLedgerBackForGood) {
  AckLedger ledger;
  AckToken first = ledger.issue(1);
  AckToken second = ledger.issue(2);
  AckToken second_copy = second;
  AckToken third = ledger.issue(3);
  first.release();
  second.fail();  // one branch could not deliver it
  second_copy.release();
  third.release();
  EXPECT_EQ(ledger.acknowledged(), 1U);
  EXPECT_TRUE(ledger.failed());
  EXPECT_FALSE(ledger.wait_acknowledged(3, 10s));  // at once: it can never get there
}

// A stage that throws while it holds an item drops it: its token's last copy, destroyed by the
// exception, fails. A copy destroyed that way while another lives on settles nothing yet.
TEST(AckLedger, ALastCopyDestroyedByAnExceptionFails) {
  AckLedger ledger;
  AckToken first = ledger.issue(1);
  AckToken kept;
  try {
    AckToken second = ledger.issue(2);
    kept = second;
    AckToken third = ledger.issue(3);
    throw std::runtime_error("the stage failed");
  } catch (const std::runtime_error&) {
  }
  first.release();
  EXPECT_EQ(ledger.acknowledged(), 1U);
  EXPECT_TRUE(ledger.failed());         // the third: dropped by the exception
  EXPECT_EQ(ledger.outstanding(), 1U);  // the second, still held
  kept.release();  // released outside the exception: settled, but the third holds the ledger
  EXPECT_EQ(ledger.acknowledged(), 2U);
  EXPECT_EQ(ledger.outstanding(), 0U);
}

TEST(AckLedger, FailOutstandingStopsTheLedgerWhereItIs) {
  AckLedger ledger;
  AckToken first = ledger.issue(1);
  AckToken second = ledger.issue(2);
  AckToken third = ledger.issue(3);
  second.release();
  first.release();
  EXPECT_EQ(ledger.acknowledged(), 2U);
  ledger.fail_outstanding();
  EXPECT_TRUE(ledger.failed());
  third.release();  // settled after the stop: still failed
  AckToken later = ledger.issue(4);
  later.release();  // issued after the stop: failed at once
  EXPECT_EQ(ledger.acknowledged(), 2U);
  EXPECT_FALSE(ledger.wait_acknowledged(4, 10s));  // at once, not after the timeout
}

// A ledger stuck behind a failed token goes on counting what is outstanding as it keeps issuing
// (a source that carries on after a failed write), and its position never moves again.
TEST(AckLedger, ALedgerStuckBehindAFailureKeepsCounting) {
  AckLedger ledger;
  ledger.issue(1).release();
  ledger.issue(2).fail();
  std::vector<AckToken> held;
  for (std::uint64_t position = 3; position < 10'003; ++position) {
    AckToken token = ledger.issue(position);
    if (position % 2 == 0) held.push_back(std::move(token));  // the others settle at once
  }
  EXPECT_EQ(ledger.outstanding(), held.size());
  held.resize(10);
  EXPECT_EQ(ledger.outstanding(), 10U);
  held.clear();
  EXPECT_EQ(ledger.outstanding(), 0U);
  EXPECT_EQ(ledger.acknowledged(), 1U);
  EXPECT_TRUE(ledger.failed());
}

// Outstanding counts what an abort has not failed yet: nothing, once fail_outstanding() ran.
TEST(AckLedger, FailOutstandingLeavesNothingOutstanding) {
  AckLedger ledger;
  AckToken held = ledger.issue(1);
  AckToken later_held;
  EXPECT_EQ(ledger.outstanding(), 1U);
  ledger.fail_outstanding();
  EXPECT_EQ(ledger.outstanding(), 0U);
  later_held = ledger.issue(2);
  EXPECT_EQ(ledger.outstanding(), 0U);  // failed at once
  held.release();
  later_held.release();
  EXPECT_EQ(ledger.outstanding(), 0U);
  EXPECT_FALSE(ledger.acknowledged().has_value());
}

// Two items joined into one carry both tokens: neither settles before the joined item goes, and
// a failure fails both.
TEST(AckLedger, JoinedTokensSettleTogetherAndFailTogether) {
  AckLedger ledger;
  AckToken first = ledger.issue(1);
  first.join(ledger.issue(2));
  AckToken copy = first;
  first.release();
  EXPECT_FALSE(ledger.acknowledged().has_value());
  copy.release();
  EXPECT_EQ(ledger.acknowledged(), 2U);

  AckToken third = ledger.issue(3);
  third.join(ledger.issue(4));
  third.join(AckToken{});  // an empty one changes nothing
  third.fail();
  EXPECT_EQ(ledger.acknowledged(), 2U);
  EXPECT_TRUE(ledger.failed());

  AckToken empty;
  AckLedger other;
  empty.join(other.issue(9));  // an empty token takes the other as it is
  EXPECT_FALSE(empty.empty());
  empty.release();
  EXPECT_EQ(other.acknowledged(), 9U);
}

// An issue() whose token cannot be allocated throws, and the ledger counts that token as failed:
// its item is not delivered. (Its slot used to wait, pending, for good.)
TEST(AckLedger, AnIssueThatCannotAllocateItsTokenFailsIt) {
  AckLedger ledger;
  AckToken first = ledger.issue(1);
  fail_allocation_after = 1;  // the token's own allocation
  EXPECT_THROW((void)ledger.issue(2), std::bad_alloc);
  fail_allocation_after = -1;
  AckToken third = ledger.issue(3);
  first.release();
  third.release();
  EXPECT_EQ(ledger.acknowledged(), 1U);
  EXPECT_TRUE(ledger.failed());
  EXPECT_EQ(ledger.outstanding(), 0U);
}

TEST(AckLedger, AnEmptyTokenSettlesNothing) {
  AckToken token;
  EXPECT_TRUE(token.empty());
  token.release();
  token.fail();
  EXPECT_TRUE(token.empty());
}

TEST(AckLedger, TokensMayOutliveTheLedger) {
  AckToken token;
  {
    AckLedger ledger;
    token = ledger.issue(1);
  }
  token.release();  // settles into the state it shares, not into a destroyed ledger
}

TEST(AckLedger, WaitAcknowledgedWakesWhenTheLastTokenSettles) {
  Watchdog watchdog;
  AckLedger ledger;
  AckToken token = ledger.issue(5);
  std::thread releaser([&token] {
    std::this_thread::sleep_for(20ms);
    token.release();
  });
  EXPECT_TRUE(ledger.wait_acknowledged(5, 60s));
  releaser.join();
  EXPECT_FALSE(ledger.wait_acknowledged(6, 1ms));
  // The longest timeout is no limit, not a deadline that overflowed into the past.
  AckToken later = ledger.issue(7);
  std::thread settler([&later] {
    std::this_thread::sleep_for(20ms);
    later.release();
  });
  EXPECT_TRUE(ledger.wait_acknowledged(7, std::chrono::milliseconds::max()));
  settler.join();
}

// Threads settle tokens in any order: the acknowledged position never goes back, never passes
// a token still out, and ends at the last one.
TEST(AckLedger, ManyThreadsSettleInAnyOrder) {
  Watchdog watchdog;
  constexpr std::uint64_t tokens = 20'000;
  constexpr int threads = 4;
  AckLedger ledger;
  std::vector<AckToken> issued;
  issued.reserve(tokens);
  for (std::uint64_t i = 1; i <= tokens; ++i)
    issued.push_back(ledger.issue(i));
  std::atomic<bool> regressed{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::uint64_t last = 0;
      // Thread t settles tokens t, t + threads, ... from the end, so that settles interleave.
      for (std::uint64_t i = tokens - 1 - static_cast<std::uint64_t>(t);; i -= threads) {
        issued[i].release();
        const std::uint64_t now = ledger.acknowledged().value_or(0);
        if (now < last) regressed.store(true, std::memory_order_relaxed);
        last = now;
        if (i < threads) break;
      }
    });
  }
  for (std::thread& worker : workers)
    worker.join();
  EXPECT_FALSE(regressed.load());
  EXPECT_EQ(ledger.acknowledged(), tokens);
  EXPECT_EQ(ledger.outstanding(), 0U);
}

// In a pipeline: the token travels inside the item through a parallel stage, a filter and a
// broadcast to three sink workers. The source's ledger reaches an item's position only once every
// worker that got a copy is done with it, and reaches the last one when the pipeline ends.
struct Item {
  std::uint64_t number = 0;
  AckToken ack;
};

TEST(AckPipeline, TheSourceHearsOfAnItemOnlyOnceEveryBranchIsDone) {
  Watchdog watchdog;
  constexpr std::uint64_t items = 5'000;
  auto ledger = std::make_shared<AckLedger>();
  std::atomic<std::uint64_t> early{0};  // sink copies that saw their item acknowledged already
  std::atomic<std::uint64_t> delivered{0};
  conveyor::Pipeline p;
  p.source([ledger, next = std::uint64_t{1}]() mutable -> std::optional<Item> {
    if (next > items) return std::nullopt;
    const std::uint64_t number = next++;
    return Item{number, ledger->issue(number)};
  }) |
      conveyor::stage(
          [](Item item, conveyor::Emit<Item>& emit) {
            if (item.number % 10 != 0) emit(std::move(item));  // every tenth is filtered out
          },
          {.mode = conveyor::Mode::parallel, .workers = 3}) |
      conveyor::sink(
          [&](Item item) {
            // This copy is held: the ledger cannot have passed this item.
            if (ledger->acknowledged().value_or(0) >= item.number) {
              early.fetch_add(1, std::memory_order_relaxed);
            }
            delivered.fetch_add(1, std::memory_order_relaxed);
          },
          {.mode = conveyor::Mode::parallel,
           .workers = 3,
           .dispatch = conveyor::Dispatch::broadcast()});
  p.run();
  EXPECT_EQ(early.load(), 0U);
  EXPECT_EQ(delivered.load(), 3 * (items - items / 10));
  EXPECT_EQ(ledger->acknowledged(), items);
  EXPECT_EQ(ledger->outstanding(), 0U);
}

// A fused sink or stage that throws while it holds its item by reference fails the item's token,
// as an unfused one does: the framework's copy of the item goes while the exception propagates,
// also when the ledger is not tied to the pipeline. (The copy used to go after the fused step
// caught the exception, and the token settled as done.)
TEST(AckPipeline, AFusedStepThatThrowsFailsItsItemsToken) {
  Watchdog watchdog;
  for (const bool stage : {false, true}) {
    auto ledger = std::make_shared<AckLedger>();
    conveyor::Pipeline p;
    auto source = [ledger, next = std::uint64_t{1}]() mutable -> std::optional<Item> {
      if (next > 1) return std::nullopt;
      const std::uint64_t number = next++;
      return Item{number, ledger->issue(number)};
    };
    auto refuse = [](const Item& /*item*/) { throw std::runtime_error("refused"); };
    if (stage) {
      p.source(source) |
          conveyor::stage(
              [&](const Item& item) -> Item {
                refuse(item);
                return {};
              },
              {.fuse = conveyor::Fuse::always}) |
          conveyor::sink([](Item /*item*/) {});
    } else {
      p.source(source) | conveyor::sink(refuse, {.fuse = conveyor::Fuse::always});
    }
    EXPECT_THROW(p.run(), std::runtime_error) << (stage ? "stage" : "sink");
    EXPECT_FALSE(ledger->acknowledged().has_value()) << (stage ? "stage" : "sink");
  }
}

// Asynchronous code that throws while it holds its item by reference fails the item's token too
// (the framework's copy used to go with the coroutine's frame, after the catch).
TEST(AckPipeline, AnAsynchronousStepThatThrowsFailsItsItemsToken) {
  Watchdog watchdog;
  auto ledger = std::make_shared<AckLedger>();
  conveyor::Pipeline p({.io_threads = 1});
  p.source([ledger, next = std::uint64_t{1}]() mutable -> std::optional<Item> {
    if (next > 1) return std::nullopt;
    const std::uint64_t number = next++;
    return Item{number, ledger->issue(number)};
  }) |
      conveyor::sink(
          [](const Item& /*item*/) -> boost::asio::awaitable<void> {
            co_await boost::asio::post(boost::asio::use_awaitable);
            throw std::runtime_error("refused");
          },
          {.mode = conveyor::Mode::parallel, .workers = 1});
  EXPECT_THROW(p.run(), std::runtime_error);
  EXPECT_FALSE(ledger->acknowledged().has_value());
}

// An abort, or a failure in one branch, drops what the pipeline holds. With the ledger tied to the
// pipeline, the source never hears of a dropped item as done: its position stays at or below the
// last item every branch delivered (items are numbered from 1, and each branch is in order).
std::uint64_t delivered_prefix(const std::vector<std::uint64_t>& delivered) {
  std::uint64_t prefix = 0;
  for (const std::uint64_t number : delivered) {
    if (number != prefix + 1) break;
    prefix = number;
  }
  return prefix;
}

TEST(AckPipeline, AnAbortFailsWhatWasInFlight) {
  Watchdog watchdog;
  auto ledger = std::make_shared<AckLedger>();
  std::vector<std::uint64_t> delivered;
  std::atomic<bool> held{false};
  std::atomic<bool> aborted{false};
  {
    conveyor::Pipeline p;
    p.fail_on_cancel(ledger);
    p.source([ledger, next = std::uint64_t{1}]() mutable -> std::optional<Item> {
      if (next > 1'000'000) return std::nullopt;
      const std::uint64_t number = next++;
      return Item{number, ledger->issue(number)};
    }) |
        conveyor::stage([](Item item) { return item; },
                        {.mode = conveyor::Mode::parallel, .workers = 2}) |
        conveyor::sink(
            [&](const Item& item) {
              delivered.push_back(item.number);
              if (delivered.size() == 100) {
                held.store(true, std::memory_order_release);
                while (!aborted.load(std::memory_order_acquire))
                  std::this_thread::sleep_for(1ms);
              }
            },
            {.mode = conveyor::Mode::serial_in_order});
    p.start();
    while (!held.load(std::memory_order_acquire))
      std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(20ms);  // the channels fill up behind the held sink
    p.abort();
    aborted.store(true, std::memory_order_release);
    p.wait();
  }  // what the channels held is dropped here at the latest
  EXPECT_TRUE(ledger->failed());
  EXPECT_LE(ledger->acknowledged().value_or(0), delivered_prefix(delivered));
  EXPECT_GE(delivered.size(), 100U);
}

TEST(AckPipeline, AFailureInOneBranchFailsWhatTheOtherStillHeld) {
  Watchdog watchdog;
  constexpr std::uint64_t items = 20'000;
  auto ledger = std::make_shared<AckLedger>();
  std::vector<std::uint64_t> slow_delivered;
  {
    conveyor::Pipeline p;
    p.fail_on_cancel(ledger);
    p.source([ledger, next = std::uint64_t{1}]() mutable -> std::optional<Item> {
      if (next > items) return std::nullopt;
      const std::uint64_t number = next++;
      return Item{number, ledger->issue(number)};
    }) | conveyor::tee(conveyor::chain<Item>() | conveyor::sink([](const Item& item) {
                         if (item.number == 2'000)
                           throw std::runtime_error("the fast branch failed");
                       }),
                       conveyor::chain<Item>() | conveyor::sink([&](const Item& item) {
                         slow_delivered.push_back(item.number);
                         std::this_thread::sleep_for(50us);
                       }));
    EXPECT_THROW(p.run(), std::runtime_error);
  }
  EXPECT_TRUE(ledger->failed());
  // The slow branch lags the fast one: it dropped items below the one that failed.
  EXPECT_LT(slow_delivered.size(), items);
  EXPECT_LE(ledger->acknowledged().value_or(0), delivered_prefix(slow_delivered));
}

// A source that emits after an abort was requested, once the sink has settled everything before:
// the item is either delivered, or dropped by the cancellation after the ledger was failed. It
// is never dropped as if it were done, even when the pipeline has nothing else left to drain.
TEST(AckPipeline, AnItemEmittedAfterAnAbortIsNeverAcknowledgedUndelivered) {
  Watchdog watchdog;
  constexpr std::uint64_t before = 50;
  for (int round = 0; round < 20; ++round) {
    auto ledger = std::make_shared<AckLedger>();
    std::atomic<std::uint64_t> delivered{0};
    conveyor::Pipeline p;
    p.fail_on_cancel(ledger);
    p.source([&](conveyor::Emit<Item>& emit) {
      for (std::uint64_t number = 1; number <= before; ++number)
        emit(Item{number, ledger->issue(number)});
      while (delivered.load(std::memory_order_acquire) < before)
        std::this_thread::yield();
      p.abort();
      emit(Item{before + 1, ledger->issue(before + 1)});
    }) | conveyor::sink([&](const Item&) { delivered.fetch_add(1, std::memory_order_release); });
    p.run();
    SCOPED_TRACE(round);
    ASSERT_LE(ledger->acknowledged().value_or(0), delivered.load());
  }
}

// `request_stop()` drains: an item a source emits after the request is delivered, not dropped
// (a checkpoint taken after the stop would otherwise skip it).
TEST(AckPipeline, AnItemEmittedAfterAStopIsDelivered) {
  Watchdog watchdog;
  auto ledger = std::make_shared<AckLedger>();
  std::vector<std::uint64_t> delivered;
  bool returned_false = false;
  conveyor::Pipeline p;
  p.fail_on_cancel(ledger);
  p.source([&](conveyor::Emit<Item>& emit) {
    emit(Item{1, ledger->issue(1)});
    p.request_stop();
    returned_false = !emit(Item{2, ledger->issue(2)});
  }) | conveyor::sink([&](const Item& item) { delivered.push_back(item.number); });
  p.run();
  EXPECT_TRUE(returned_false);  // the source is told to return
  EXPECT_EQ(delivered, (std::vector<std::uint64_t>{1, 2}));
  EXPECT_FALSE(ledger->failed());
  EXPECT_EQ(ledger->acknowledged(), 2U);
}

}  // namespace
