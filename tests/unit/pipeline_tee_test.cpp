// Unit tests for tee (tee.hpp): every branch gets every item once, in the source's order where a
// branch restores it; every branch ends and flushes once; a throw in any branch fails the whole
// pipeline; request_stop and abort reach every branch; the stages before the tee wait for the
// slowest branch; each branch's stages have their own statistics.
#include "conveyor/framework/tee.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/framework.hpp"
#include "conveyor/framework/testing.hpp"
#include "pipeline_support.hpp"
#include "task_suspension.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Chain;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::tee;
using conveyor::testing::count_to;
using conveyor::testing::expected_tally;
using conveyor::testing::SharedTally;
using conveyor::testing::Tally;
using conveyor::testing::Watchdog;

// A sink that keeps what it gets, in arrival order.
auto collect(std::vector<std::uint64_t>& out) {
  return conveyor::chain<std::uint64_t>() |
         sink([&out](std::uint64_t x) { out.push_back(x); },
              {.name = "collect", .mode = Mode::serial_in_order});
}

TEST(PipelineTeeTest, EveryBranchGetsEveryItemOnce) {
  Watchdog watchdog;
  Pipeline p;
  SharedTally first;
  SharedTally second;
  SharedTally third;
  p.source(count_to(10'000)) |
      tee(conveyor::chain<std::uint64_t>() |
              sink([&](std::uint64_t x) { first.add(x); },
                   {.name = "first", .mode = Mode::parallel, .workers = 2}),
          conveyor::chain<std::uint64_t>() | sink([&](std::uint64_t x) { second.add(x); }),
          conveyor::chain<std::uint64_t>() |
              sink([&](std::uint64_t x) { third.add(x); },
                   {.name = "third", .mode = Mode::parallel, .workers = 3}));
  p.run();
  EXPECT_EQ(first.get(), expected_tally(10'000));
  EXPECT_EQ(second.get(), expected_tally(10'000));
  EXPECT_EQ(third.get(), expected_tally(10'000));
}

TEST(PipelineTeeTest, EachBranchHasItsOwnTypes) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::string> texts;
  std::uint64_t sum = 0;
  p.source(count_to(100)) | stage([](std::uint64_t x) { return x * 2; }) |
      tee(conveyor::chain<std::uint64_t>() |
              stage([](std::uint64_t x) { return std::to_string(x); }) |
              sink([&](std::string text) { texts.push_back(std::move(text)); },
                   {.mode = Mode::serial_in_order}),
          conveyor::chain<std::uint64_t>() | sink([&](std::uint64_t x) { sum += x; }));
  p.run();
  ASSERT_EQ(texts.size(), 100U);
  EXPECT_EQ(texts[0], "0");
  EXPECT_EQ(texts[99], "198");
  EXPECT_EQ(sum, 99U * 100U);
}

// Parallel stages with random delays in each branch, and an in-order sink at the end of each:
// each branch sees the source's order, whatever the other does.
TEST(PipelineTeeTest, EachBranchRestoresTheSourceOrderAfterParallelStages) {
  Watchdog watchdog;
  for (const std::size_t batch : {std::size_t{1}, std::size_t{16}}) {
    Pipeline p;
    std::vector<std::uint64_t> first;
    std::vector<std::uint64_t> second;
    auto jitter = [](std::uint64_t x) {
      thread_local std::minstd_rand random(std::random_device{}());
      if (random() % 64 == 0)
        std::this_thread::sleep_for(std::chrono::microseconds(random() % 200));
      return x;
    };
    p.source(count_to(20'000)) |
        stage(jitter, {.name = "trunk", .mode = Mode::parallel, .workers = 3, .batch = batch}) |
        tee(conveyor::chain<std::uint64_t>() |
                stage(jitter, {.name = "a", .mode = Mode::parallel, .workers = 2, .batch = batch}) |
                collect(first),
            conveyor::chain<std::uint64_t>() |
                stage(jitter, {.name = "b", .mode = Mode::parallel, .workers = 3}) |
                stage(jitter, {.name = "b2", .mode = Mode::parallel, .workers = 2}) |
                collect(second));
    p.run();
    ASSERT_EQ(first.size(), 20'000U) << "batch " << batch;
    ASSERT_EQ(second.size(), 20'000U) << "batch " << batch;
    for (std::uint64_t i = 0; i < 20'000; ++i) {
      ASSERT_EQ(first[i], i) << "batch " << batch;
      ASSERT_EQ(second[i], i) << "batch " << batch;
    }
  }
}

// A sink with a flush hook that counts its calls.
struct FlushCounter {
  std::atomic<int>* flushes;
  std::atomic<std::uint64_t>* items;
  void process(std::uint64_t) { items->fetch_add(1, std::memory_order_relaxed); }
  void flush() { flushes->fetch_add(1, std::memory_order_relaxed); }
};

TEST(PipelineTeeTest, EveryBranchEndsAndFlushesOnce) {
  Watchdog watchdog;
  Pipeline p;
  std::atomic<int> flushes_a{0};
  std::atomic<int> flushes_b{0};
  std::atomic<std::uint64_t> items_a{0};
  std::atomic<std::uint64_t> items_b{0};
  p.source(count_to(1000)) |
      tee(conveyor::chain<std::uint64_t>() |
              sink(FlushCounter{&flushes_a, &items_a}, {.mode = Mode::parallel, .workers = 3}),
          conveyor::chain<std::uint64_t>() | sink(FlushCounter{&flushes_b, &items_b}));
  p.run();
  EXPECT_EQ(flushes_a.load(), 3);  // once per worker
  EXPECT_EQ(flushes_b.load(), 1);
  EXPECT_EQ(items_a.load(), 1000U);
  EXPECT_EQ(items_b.load(), 1000U);
}

// Throws from the trunk, from each branch's stage and from each branch's sink: run() rethrows, and
// no worker is left waiting.
TEST(PipelineTeeTest, AThrowFromAnyPositionFailsThePipeline) {
  Watchdog watchdog;
  for (int position = 0; position < 5; ++position) {
    Pipeline p;
    auto maybe_throw = [position](int here) {
      return [position, here](std::uint64_t x) {
        if (position == here && x == 500) throw std::runtime_error("boom");
        return x;
      };
    };
    p.source(count_to(100'000)) | stage(maybe_throw(0), {.mode = Mode::parallel, .workers = 2}) |
        tee(conveyor::chain<std::uint64_t>() | stage(maybe_throw(1)) |
                sink([f = maybe_throw(2)](std::uint64_t x) { (void)f(x); },
                     {.mode = Mode::serial_in_order}),
            conveyor::chain<std::uint64_t>() |
                stage(maybe_throw(3), {.mode = Mode::parallel, .workers = 2}) |
                sink([f = maybe_throw(4)](std::uint64_t x) { (void)f(x); }));
    EXPECT_THROW(p.run(), std::runtime_error) << "position " << position;
    EXPECT_EQ(p.state(), conveyor::PipelineState::failed);
  }
}

// Both branches block in their sinks; request_stop ends the source's stream, and once the sinks
// go on, each branch gets every item the source emitted.
TEST(PipelineTeeTest, RequestStopDrainsEveryBranch) {
  Watchdog watchdog;
  Pipeline p;
  std::latch go(1);
  std::atomic<std::uint64_t> emitted{0};
  std::atomic<std::uint64_t> first{0};
  std::atomic<std::uint64_t> second{0};
  auto blocked = [&](std::atomic<std::uint64_t>& count) {
    return [&](std::uint64_t) {
      go.wait();
      count.fetch_add(1, std::memory_order_relaxed);
    };
  };
  p.source([&, next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
    emitted.fetch_add(1, std::memory_order_relaxed);
    return next++;
  }) | tee(conveyor::chain<std::uint64_t>() | sink(blocked(first)),
           conveyor::chain<std::uint64_t>() |
               sink(blocked(second), {.mode = Mode::parallel, .workers = 2}));
  p.start();
  while (emitted.load(std::memory_order_relaxed) < 100)
    std::this_thread::yield();
  p.request_stop();
  go.count_down();
  p.wait();
  EXPECT_EQ(p.state(), conveyor::PipelineState::finished);
  EXPECT_GE(first.load(), 100U);
  EXPECT_EQ(first.load(), second.load());
}

TEST(PipelineTeeTest, AbortReturnsWithEveryBranchBlocked) {
  Watchdog watchdog;
  Pipeline p;
  std::atomic<bool> release{false};
  std::atomic<std::uint64_t> emitted{0};
  auto blocked = [&](std::uint64_t) {
    while (!release.load(std::memory_order_relaxed))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  p.source([&, next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
    emitted.fetch_add(1, std::memory_order_relaxed);
    return next++;
  }) | tee(conveyor::chain<std::uint64_t>() | sink(blocked),
           conveyor::chain<std::uint64_t>() | stage([](std::uint64_t x) { return x; }) |
               sink(blocked));
  p.start();
  while (emitted.load(std::memory_order_relaxed) < 10)
    std::this_thread::yield();
  // The source fills the channels and then waits for room; the sinks wait for `release`.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  p.abort();
  release.store(true, std::memory_order_relaxed);
  p.wait();
  EXPECT_EQ(p.state(), conveyor::PipelineState::finished);
}

// One branch stops taking items: the source stops once that branch's channels and window are
// full, however fast the other branch is.
TEST(PipelineTeeTest, TheSlowestBranchBoundsWhatTheSourceRunsAhead) {
  Watchdog watchdog;
  Pipeline p;
  std::atomic<bool> release{false};
  std::atomic<std::uint64_t> emitted{0};
  std::vector<std::uint64_t> slow;
  p.source([&, next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
    if (next == 100'000) return std::nullopt;
    emitted.fetch_add(1, std::memory_order_relaxed);
    return next++;
  }) | tee(conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {}),
           conveyor::chain<std::uint64_t>() |
               stage(
                   [](std::uint64_t x) { return x; },
                   {.mode = Mode::parallel, .workers = 2, .channel = conveyor::Channel::queue(8)}) |
               sink(
                   [&](std::uint64_t x) {
                     while (!release.load(std::memory_order_relaxed))
                       std::this_thread::sleep_for(std::chrono::milliseconds(1));
                     slow.push_back(x);
                   },
                   {.mode = Mode::serial_in_order, .channel = conveyor::Channel::queue(8)}));
  p.start();
  // Until the source stalls: its count stops moving for 100 ms.
  std::uint64_t seen = 0;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::uint64_t now = emitted.load(std::memory_order_relaxed);
    if (now == seen) break;
    seen = now;
  }
  // The source's lanes into the two workers (8 each), theirs into the sink (8 each), what each
  // worker and the sink hold, and the window's slack: far below the 100,000 items.
  EXPECT_LT(seen, 200U);
  release.store(true, std::memory_order_relaxed);
  p.wait();
  ASSERT_EQ(slow.size(), 100'000U);
  for (std::uint64_t i = 0; i < slow.size(); ++i)
    ASSERT_EQ(slow[i], i);
}

TEST(PipelineTeeTest, EachBranchStageHasItsOwnStatistics) {
  Watchdog watchdog;
  Pipeline p;
  p.source(count_to(300), {.name = "numbers"}) |
      tee(conveyor::chain<std::uint64_t>() |
              stage(
                  [](std::uint64_t x) -> std::optional<std::uint64_t> {
                    if (x % 3 != 0) return std::nullopt;
                    return x;
                  },
                  {.name = "thirds"}) |
              sink([](std::uint64_t) {}, {.name = "write"}),
          conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {}, {.name = "count"}));
  p.run();
  const conveyor::PipelineStats stats = p.stats();
  ASSERT_NE(stats.stage("thirds"), nullptr);
  EXPECT_EQ(stats.stage("numbers")->items_out, 300U);
  EXPECT_EQ(stats.stage("thirds")->items_in, 300U);
  EXPECT_EQ(stats.stage("thirds")->items_out, 100U);
  EXPECT_EQ(stats.stage("write")->items_in, 100U);
  EXPECT_EQ(stats.stage("count")->items_in, 300U);
  EXPECT_GT(stats.stage("count")->channel_capacity, 0U);
}

TEST(PipelineTeeTest, AChainCanEndInATeeAndRunOnItsOwn) {
  Watchdog watchdog;
  std::atomic<std::uint64_t> evens{0};
  std::atomic<std::uint64_t> all{0};
  const Chain<std::uint64_t, void> split =
      conveyor::chain<std::uint64_t>() | stage([](std::uint64_t x) { return x + 1; }) |
      tee(conveyor::chain<std::uint64_t>() |
              sink([&](std::uint64_t x) { evens.fetch_add(x % 2 == 0 ? 1 : 0); }),
          conveyor::chain<std::uint64_t>() | sink([&](std::uint64_t) { all.fetch_add(1); }));
  std::vector<std::uint64_t> inputs(1000);
  for (std::uint64_t i = 0; i < inputs.size(); ++i)
    inputs[i] = i;
  conveyor::testing::run(split, inputs);
  EXPECT_EQ(evens.load(), 500U);
  EXPECT_EQ(all.load(), 1000U);
}

TEST(PipelineTeeTest, RunsOnTheCooperativeExecutor) {
  SKIP_IF_SUSPENSION_IS_UNCHECKABLE();
  Watchdog watchdog;
  Pipeline p({.executor = conveyor::Executor::tbb(2)});
  std::vector<std::uint64_t> first;
  SharedTally second;
  p.source(count_to(5000)) |
      stage([](std::uint64_t x) { return x; }, {.mode = Mode::parallel, .workers = 2}) |
      tee(collect(first),
          conveyor::chain<std::uint64_t>() | sink([&](std::uint64_t x) { second.add(x); },
                                                  {.mode = Mode::parallel, .workers = 2}));
  p.run();
  ASSERT_EQ(first.size(), 5000U);
  for (std::uint64_t i = 0; i < first.size(); ++i)
    ASSERT_EQ(first[i], i);
  EXPECT_EQ(second.get(), expected_tally(5000));
}

TEST(PipelineTeeTest, AKeyedDispatchAtTheHeadOfABranchIsRejected) {
  Pipeline p;
  p.source(count_to(10)) |
      tee(conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {}),
          conveyor::chain<std::uint64_t>() |
              sink([](std::uint64_t) {}, {.mode = Mode::parallel, .workers = 2},
                   conveyor::Dispatch::by_key([](std::uint64_t x) { return x; })));
  EXPECT_THROW(p.start(), std::invalid_argument);
}

TEST(PipelineTeeTest, ABranchHeadCannotBeFused) {
  Pipeline p;
  p.source(count_to(10)) | stage([](std::uint64_t x) { return x; }) |
      tee(conveyor::chain<std::uint64_t>() |
              sink([](std::uint64_t) {}, {.fuse = conveyor::Fuse::always}),
          conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {}));
  EXPECT_THROW(p.start(), std::invalid_argument);
}

TEST(PipelineTeeTest, ABranchThatDoesNotEndInASinkIsRejected) {
  Pipeline p;
  auto numbers = p.source(count_to(10));
  numbers | tee(conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {}),
                conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {}));
  // A stage from the point the tee split is one more branch, which must end in a sink.
  auto dangling = numbers | stage([](std::uint64_t x) { return x; });
  (void)dangling;
  EXPECT_THROW(p.start(), std::logic_error);
}

TEST(PipelineTeeTest, WithoutATeeAStageHasOneNext) {
  Pipeline p;
  auto numbers = p.source(count_to(10));
  numbers | sink([](std::uint64_t) {});
  EXPECT_THROW(numbers | sink([](std::uint64_t) {}), std::logic_error);
}

}  // namespace
