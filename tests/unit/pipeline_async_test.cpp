// Asynchronous stages and sinks (<conveyor/framework/async.hpp>): order restored after random
// await delays, at most in_flight items per worker, a throw or an abort that leaves no coroutine
// frame behind, request_stop with operations pending, filters, in-order asynchronous stages (also
// at a merge), the oneTBB executor, and the options' checks.
#include "conveyor/framework/async.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "conveyor/framework/merge.hpp"
#include "pipeline_support.hpp"
#include "task_suspension.hpp"
#include "watchdog.hpp"

namespace {

namespace asio = boost::asio;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::testing::append_to;
using conveyor::testing::count_to;
using conveyor::testing::discard;
using conveyor::testing::unchanged;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

// Suspends the calling coroutine for `delay` on a timer of its own executor.
asio::awaitable<void> pause(std::chrono::microseconds delay) {
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(asio::use_awaitable);
}

// Suspends the calling coroutine until `ready()` holds, looking every millisecond.
template <class Ready>
asio::awaitable<void> until(Ready ready) {
  while (!ready())
    co_await pause(std::chrono::milliseconds(1));
}

// Blocks the calling thread until `ready()` holds, or for 10 s at most.
template <class Ready>
void block_until(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!ready() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
}

// A delay in [0, 300) us that depends on the item only, so that neighbours finish out of order.
std::chrono::microseconds delay_of(std::uint64_t item) {
  return std::chrono::microseconds((item * 2654435761ULL >> 7) % 300);
}

// Counts the coroutine frames alive, and the most alive at once.
struct FrameCount {
  std::atomic<int> live{0};
  std::atomic<int> peak{0};
};

class Frame {
 public:
  explicit Frame(FrameCount& count) : count_(count) {
    const int now = count_.live.fetch_add(1, std::memory_order_relaxed) + 1;
    int peak = count_.peak.load(std::memory_order_relaxed);
    while (now > peak && !count_.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  ~Frame() { count_.live.fetch_sub(1, std::memory_order_relaxed); }
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;

 private:
  FrameCount& count_;
};

TEST(PipelineAsyncTest, InOrderSinkSeesTheSourceOrderAfterRandomDelays) {
  Watchdog watchdog;
  constexpr std::uint64_t count = 5'000;
  std::vector<std::uint64_t> seen;
  Pipeline p({.io_threads = 2});
  p.source(count_to(count)) |
      stage(
          [](std::uint64_t x) -> asio::awaitable<std::uint64_t> {
            co_await pause(delay_of(x));
            co_return x * 3;
          },
          {.mode = Mode::parallel, .workers = 2, .in_flight = 16}) |
      sink(append_to(seen), {.mode = Mode::serial_in_order});
  p.run();
  ASSERT_EQ(seen.size(), count);
  for (std::uint64_t i = 0; i < count; ++i)
    ASSERT_EQ(seen[i], i * 3) << "at " << i;
  const auto stats = p.stats();
  EXPECT_EQ(stats.stages[1].items_in, count);
  EXPECT_EQ(stats.stages[1].items_out, count);
}

TEST(PipelineAsyncTest, AtMostInFlightItemsPerWorkerAwaitAtOnce) {
  Watchdog watchdog;
  for (const std::size_t workers : {std::size_t{1}, std::size_t{3}}) {
    FrameCount frames;
    std::atomic<std::uint64_t> sum{0};
    Pipeline p({.io_threads = 2});
    p.source(count_to(2'000)) |
        stage(
            [&](std::uint64_t x) -> asio::awaitable<std::uint64_t> {
              const Frame frame(frames);
              co_await pause(100us + delay_of(x));
              co_return x;
            },
            {.mode = Mode::parallel, .workers = workers, .in_flight = 5}) |
        sink([&](std::uint64_t x) { sum.fetch_add(x, std::memory_order_relaxed); });
    p.run();
    EXPECT_EQ(sum.load(), 2'000ULL * 1'999 / 2);
    EXPECT_LE(frames.peak.load(), static_cast<int>(5 * workers));
    // With 2,000 items of 100 us or more, each worker fills its slots.
    EXPECT_GE(frames.peak.load(), 5);
    EXPECT_EQ(frames.live.load(), 0);
  }
}

TEST(PipelineAsyncTest, AsyncSinkTakesEveryItemOnce) {
  Watchdog watchdog;
  constexpr std::uint64_t count = 3'000;
  std::mutex mutex;
  std::vector<int> hits(count, 0);
  Pipeline p({.io_threads = 3});
  p.source(count_to(count)) |
      sink(
          [&](std::uint64_t x) -> asio::awaitable<void> {
            co_await pause(delay_of(x));
            const std::lock_guard lock(mutex);
            ++hits[x];
          },
          {.mode = Mode::parallel, .workers = 2, .batch = 8, .in_flight = 32});
  p.run();
  EXPECT_TRUE(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
  EXPECT_EQ(p.stats().stages[1].items_in, count);
}

TEST(PipelineAsyncTest, FilteredItemsBecomeGapsAndTheOrderHolds) {
  Watchdog watchdog;
  std::vector<std::uint64_t> seen;
  Pipeline p;
  p.source(count_to(4'000)) |
      stage(
          [](std::uint64_t x) -> asio::awaitable<std::optional<std::uint64_t>> {
            co_await pause(delay_of(x));
            if (x % 3 == 0) co_return std::nullopt;
            co_return x;
          },
          {.mode = Mode::parallel, .workers = 2, .batch = 4, .in_flight = 8}) |
      sink(append_to(seen), {.mode = Mode::serial_in_order});
  p.run();
  std::vector<std::uint64_t> expected;
  for (std::uint64_t x = 0; x < 4'000; ++x) {
    if (x % 3 != 0) expected.push_back(x);
  }
  EXPECT_EQ(seen, expected);
}

TEST(PipelineAsyncTest, InOrderAsyncStageEmitsInLaunchOrder) {
  Watchdog watchdog;
  std::vector<std::uint64_t> seen;
  Pipeline p({.io_threads = 2});
  p.source(count_to(3'000)) |
      stage([](std::uint64_t x) { return x + 1; }, {.mode = Mode::parallel, .workers = 2}) |
      stage(
          [](std::uint64_t x) -> asio::awaitable<std::uint64_t> {
            co_await pause(delay_of(x));
            co_return x;
          },
          {.mode = Mode::serial_in_order, .in_flight = 20}) |
      // Not in order itself: it sees the order the asynchronous stage emits in.
      sink(append_to(seen));
  p.run();
  ASSERT_EQ(seen.size(), 3'000U);
  for (std::uint64_t i = 0; i < 3'000; ++i)
    ASSERT_EQ(seen[i], i + 1) << "at " << i;
}

// At a merge, an in-order asynchronous stage launches items as they arrive and emits in launch
// order: each source's items reach the in-order sink after it in that source's order.
TEST(PipelineAsyncTest, InOrderAsyncStageAtAMergeKeepsEachInputsOrder) {
  Watchdog watchdog;
  std::vector<std::uint64_t> seen;
  Pipeline p({.io_threads = 2});
  auto evens = p.source([next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
    if (next >= 4'000) return std::nullopt;
    next += 2;
    return next - 2;
  });
  auto odds = p.source([next = std::uint64_t{1}]() mutable -> std::optional<std::uint64_t> {
    if (next >= 4'000) return std::nullopt;
    next += 2;
    return next - 2;
  });
  conveyor::merge(evens, odds) |
      stage(
          [](std::uint64_t x) -> asio::awaitable<std::uint64_t> {
            co_await pause(delay_of(x));
            co_return x;
          },
          {.mode = Mode::serial_in_order, .in_flight = 20}) |
      stage(unchanged, {.mode = Mode::parallel, .workers = 2}) |
      sink(append_to(seen), {.mode = Mode::serial_in_order});
  p.run();
  ASSERT_EQ(seen.size(), 4'000U);
  std::uint64_t next_even = 0;
  std::uint64_t next_odd = 1;
  for (const std::uint64_t x : seen) {
    std::uint64_t& next = x % 2 == 0 ? next_even : next_odd;
    ASSERT_EQ(x, next);
    next += 2;
  }
}

TEST(PipelineAsyncTest, AThrowMidFlightFailsTheRunAndLeavesNoFrame) {
  Watchdog watchdog;
  FrameCount frames;
  Pipeline p({.io_threads = 2});
  p.source(count_to(1'000'000)) |
      stage(
          [&](std::uint64_t x) -> asio::awaitable<std::uint64_t> {
            const Frame frame(frames);
            if (x == 100) {
              co_await pause(2ms);
              throw std::runtime_error("item 100");
            }
            // The others would wait far longer than the test's watchdog.
            co_await pause(std::chrono::hours(1));
            co_return x;
          },
          {.mode = Mode::parallel, .workers = 2, .in_flight = 64}) |
      sink(discard);
  const auto started = std::chrono::steady_clock::now();
  EXPECT_THROW(
      {
        try {
          p.run();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "item 100");
          throw;
        }
      },
      std::runtime_error);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60));
  EXPECT_GT(frames.peak.load(), 1);
  EXPECT_EQ(frames.live.load(), 0);
  EXPECT_EQ(p.stats().stages[1].errors, 1U);
}

// Two workers, one item each, both failing: worker 1's coroutine fails well after the first
// failure cancelled the run, so its worker has left by then; its error still counts.
TEST(PipelineAsyncTest, AFailureAfterItsWorkerLeftIsCounted) {
  Watchdog watchdog;
  std::latch both_running(2);
  Pipeline p({.io_threads = 2});
  p.source(count_to(2)) |
      stage(
          [&](std::uint64_t x) -> asio::awaitable<std::uint64_t> {
            // Blocks its I/O thread: the two coroutines run on different threads at once.
            both_running.arrive_and_wait();
            if (x == 1) std::this_thread::sleep_for(300ms);
            throw std::runtime_error("item " + std::to_string(x));
            co_return x;
          },
          {.mode = Mode::parallel,
           .workers = 2,
           .dispatch = conveyor::Dispatch::by_partition<std::uint64_t>(
               [](std::uint64_t x) { return x; })}) |
      sink(discard);
  EXPECT_THROW(p.run(), std::runtime_error);
  EXPECT_EQ(p.stats().stages[1].errors, 2U);
}

// Three items go through and two fail while the worker is blocked handing the third to a sink
// that holds the first: the worker takes both failures at once (or, if it gets there first, one
// and then the other as it leaves). Each counts once.
TEST(PipelineAsyncTest, FailuresTakenTogetherAreEachCounted) {
  Watchdog watchdog;
  std::atomic<int> launched{0};
  std::atomic<bool> sink_holds_one{false};
  std::atomic<int> thrown{0};
  Pipeline p;
  p.source(count_to(5)) |
      stage(
          [&](std::uint64_t x) -> asio::awaitable<std::uint64_t> {
            launched.fetch_add(1, std::memory_order_relaxed);
            co_await until([&] { return launched.load(std::memory_order_relaxed) >= 5; });
            if (x < 3) co_return x;
            co_await until([&] { return sink_holds_one.load(std::memory_order_relaxed); });
            co_await pause(200ms);  // the worker is blocked pushing item 2 by then
            thrown.fetch_add(1, std::memory_order_relaxed);
            throw std::runtime_error("item " + std::to_string(x));
          },
          {.in_flight = 5}) |
      sink(
          [&](std::uint64_t) {
            if (sink_holds_one.exchange(true, std::memory_order_relaxed)) return;
            block_until([&] { return thrown.load(std::memory_order_relaxed) >= 2; });
          },
          {.channel = conveyor::Channel::mailbox()});
  EXPECT_THROW(p.run(), std::runtime_error);
  EXPECT_EQ(thrown.load(), 2);
  EXPECT_EQ(p.stats().stages[1].errors, 2U);
}

// The worker fails while handing on a result (the next stage's key function throws) with two
// failed results behind it in the batch it took: those two count too.
TEST(PipelineAsyncTest, FailuresBehindAThrowingHandOverAreCounted) {
  Watchdog watchdog;
  std::atomic<int> launched{0};
  std::atomic<int> sink_holds{0};
  std::atomic<int> step{0};  // 1: item 5 returned, 2: item 6 threw, 3: item 7 threw
  Pipeline p;
  p.source(count_to(8)) |
      stage(
          [&](std::uint64_t x) -> asio::awaitable<std::uint64_t> {
            launched.fetch_add(1, std::memory_order_relaxed);
            co_await until([&] { return launched.load(std::memory_order_relaxed) >= 8; });
            if (x < 5) co_return x;
            // One strand: these three end (and add their results) in this order.
            co_await until([&] { return sink_holds.load(std::memory_order_relaxed) >= 2; });
            co_await pause(200ms);  // the worker is blocked handing item 4 on by then
            co_await until(
                [&] { return step.load(std::memory_order_relaxed) == static_cast<int>(x) - 5; });
            step.fetch_add(1, std::memory_order_relaxed);
            if (x == 5) co_return x;
            throw std::runtime_error("item " + std::to_string(x));
          },
          {.in_flight = 8}) |
      sink(
          [&](std::uint64_t) {
            sink_holds.fetch_add(1, std::memory_order_relaxed);
            block_until([&] { return step.load(std::memory_order_relaxed) >= 3; });
          },
          {.mode = Mode::parallel,
           .workers = 2,
           .channel = conveyor::Channel::mailbox(),
           .dispatch = conveyor::Dispatch::by_partition<std::uint64_t>([](std::uint64_t x) {
             if (x == 5) throw std::logic_error("no partition for item 5");
             return x;
           })});
  EXPECT_THROW(p.run(), std::logic_error);
  // The key function's throw, and items 6 and 7.
  EXPECT_EQ(p.stats().stages[1].errors, 3U);
}

TEST(PipelineAsyncTest, AbortDestroysTheCoroutinesInFlight) {
  Watchdog watchdog;
  FrameCount frames;
  std::atomic<int> started{0};
  Pipeline p;
  p.source(count_to(1'000'000)) | sink(
                                      [&](std::uint64_t) -> asio::awaitable<void> {
                                        const Frame frame(frames);
                                        started.fetch_add(1, std::memory_order_relaxed);
                                        co_await pause(std::chrono::hours(1));
                                      },
                                      {.in_flight = 16});
  p.start();
  while (started.load(std::memory_order_relaxed) < 16)
    std::this_thread::sleep_for(1ms);
  p.abort();
  p.wait();
  EXPECT_EQ(started.load(), 16);
  EXPECT_EQ(frames.live.load(), 0);
}

TEST(PipelineAsyncTest, RequestStopWaitsForTheOperationsInFlight) {
  Watchdog watchdog;
  std::atomic<std::uint64_t> launched{0};
  std::atomic<std::uint64_t> finished{0};
  std::atomic<std::uint64_t> delivered{0};
  Pipeline p({.io_threads = 2});
  p.source(count_to(1'000'000'000)) |
      stage(
          [&](std::uint64_t x) -> asio::awaitable<std::uint64_t> {
            launched.fetch_add(1, std::memory_order_relaxed);
            co_await pause(2ms);
            finished.fetch_add(1, std::memory_order_relaxed);
            co_return x;
          },
          {.mode = Mode::parallel, .workers = 2, .in_flight = 32}) |
      sink([&](std::uint64_t) { delivered.fetch_add(1, std::memory_order_relaxed); },
           {.mode = Mode::serial_in_order});
  p.start();
  while (delivered.load(std::memory_order_relaxed) < 500)
    std::this_thread::sleep_for(1ms);
  p.request_stop();
  p.wait();
  const auto stats = p.stats();
  // Everything the source emitted went through, every coroutine finished and was delivered.
  EXPECT_EQ(launched.load(), finished.load());
  EXPECT_EQ(finished.load(), delivered.load());
  EXPECT_EQ(stats.stages[0].items_out, delivered.load());
  EXPECT_EQ(stats.state, conveyor::PipelineState::finished);
}

TEST(PipelineAsyncTest, RunsOnTheTbbExecutorToo) {
  SKIP_IF_SUSPENSION_IS_UNCHECKABLE();
  Watchdog watchdog;
  std::vector<std::uint64_t> seen;
  Pipeline p({.executor = conveyor::Executor::tbb(2), .io_threads = 1});
  p.source(count_to(2'000)) |
      stage(
          [](std::uint64_t x) -> asio::awaitable<std::uint64_t> {
            co_await pause(delay_of(x) / 4);
            co_return x;
          },
          {.mode = Mode::parallel, .workers = 3, .in_flight = 8}) |
      sink(append_to(seen), {.mode = Mode::serial_in_order});
  p.run();
  ASSERT_EQ(seen.size(), 2'000U);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}

// A class with process() returning an awaitable, holding state that its coroutines share: one
// worker's coroutines run on one strand, so the state needs no lock.
class Tally {
 public:
  asio::awaitable<std::uint64_t> process(std::uint64_t x) {
    ++started_;
    co_await pause(delay_of(x) / 8);
    ++finished_;
    co_return started_ - finished_;  // how many of this copy's coroutines were still out
  }

 private:
  std::uint64_t started_ = 0;
  std::uint64_t finished_ = 0;
};

TEST(PipelineAsyncTest, AClassWithAnAwaitableProcessRunsOnOneStrandPerWorker) {
  Watchdog watchdog;
  std::uint64_t most = 0;
  Pipeline p({.io_threads = 4});
  p.source(count_to(3'000)) |
      stage(Tally{}, {.mode = Mode::parallel, .workers = 2, .in_flight = 6}) |
      sink([&](std::uint64_t out) { most = std::max(most, out); });
  p.run();
  EXPECT_LT(most, 6U);
}

// Stage code that keeps an I/O object of its executor: it is destroyed with the pipeline, after the
// I/O threads stopped and before their context goes.
class KeepsATimer {
 public:
  asio::awaitable<std::uint64_t> process(std::uint64_t x) {
    if (!timer_) timer_ = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
    timer_->expires_after(delay_of(x) / 8);
    co_await timer_->async_wait(asio::use_awaitable);
    co_return x;
  }

 private:
  std::shared_ptr<asio::steady_timer> timer_;
};

TEST(PipelineAsyncTest, StageCodeMayKeepIoObjectsOfItsExecutor) {
  Watchdog watchdog;
  std::uint64_t sum = 0;
  {
    Pipeline p;
    // One item at a time: the timer is the stage's own.
    p.source(count_to(500)) | stage(KeepsATimer{}) | sink([&](std::uint64_t x) { sum += x; });
    p.run();
  }
  EXPECT_EQ(sum, 500U * 499 / 2);
}

TEST(PipelineAsyncTest, InFlightIsCheckedWhenThePipelineStarts) {
  {
    Pipeline p;
    p.source(count_to(10)) | stage(unchanged, {.in_flight = 4}) | sink(discard);
    EXPECT_THROW(p.run(), std::invalid_argument);
  }
  {
    Pipeline p;
    p.source(count_to(10)) |
        sink([](std::uint64_t) -> asio::awaitable<void> { co_return; }, {.in_flight = 0});
    EXPECT_THROW(p.run(), std::invalid_argument);
  }
}

}  // namespace
