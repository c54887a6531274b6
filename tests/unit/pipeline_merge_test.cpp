// Unit tests for merge (merge.hpp): a stage at a merge takes every input's items exactly once and
// ends once every input has ended; a serial_in_order stage there numbers the merged stream for the
// in-order stages after it; each input keeps its own order through a serial stage; a throw in any
// input cancels the others; request_stop ends every source; misuse is rejected.
#include "conveyor/framework/merge.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/framework.hpp"
#include "pipeline_support.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::merge;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::testing::count_to;
using conveyor::testing::expected_tally;
using conveyor::testing::SharedTally;
using conveyor::testing::Tally;
using conveyor::testing::Watchdog;

// Numbers from `first` to `first + count - 1`.
auto count_from(std::uint64_t first, std::uint64_t count) {
  return [next = first, end = first + count]() mutable -> std::optional<std::uint64_t> {
    if (next == end) return std::nullopt;
    return next++;
  };
}

TEST(PipelineMergeTest, TheStageAtAMergeTakesEveryInputsItemsOnce) {
  Watchdog watchdog;
  for (const std::size_t batch : {std::size_t{1}, std::size_t{16}}) {
    Pipeline p;
    SharedTally tally;
    auto a = p.source(count_from(0, 10'000));
    auto b = p.source(count_from(10'000, 5'000)) |
             stage([](std::uint64_t x) { return x; }, {.mode = Mode::parallel, .workers = 2});
    auto c = p.source(count_from(15'000, 1));
    merge(a, b, c) |
        stage([](std::uint64_t x) { return x; },
              {.mode = Mode::parallel, .workers = 3, .batch = batch}) |
        sink([&](std::uint64_t x) { tally.add(x); }, {.mode = Mode::parallel, .workers = 2});
    p.run();
    EXPECT_EQ(tally.get(), expected_tally(15'001)) << "batch " << batch;
  }
}

// Each input's items reach a serial stage at the merge in that input's order; the in-order sink
// after it sees exactly the order that stage saw.
TEST(PipelineMergeTest, ASerialInOrderStageAtTheMergeNumbersTheMergedStream) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::uint64_t> seen_at_merge;
  std::vector<std::uint64_t> seen_at_end;
  auto evens = p.source([next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
    if (next >= 20'000) return std::nullopt;
    next += 2;
    return next - 2;
  });
  auto odds = p.source([next = std::uint64_t{1}]() mutable -> std::optional<std::uint64_t> {
    if (next >= 20'000) return std::nullopt;
    next += 2;
    return next - 2;
  });
  merge(evens, odds) |
      stage(
          [&](std::uint64_t x) {
            seen_at_merge.push_back(x);
            return x;
          },
          {.mode = Mode::serial_in_order}) |
      stage([](std::uint64_t x) { return x; }, {.mode = Mode::parallel, .workers = 3}) |
      sink([&](std::uint64_t x) { seen_at_end.push_back(x); }, {.mode = Mode::serial_in_order});
  p.run();
  ASSERT_EQ(seen_at_merge.size(), 20'000U);
  EXPECT_EQ(seen_at_end, seen_at_merge);
  // Each source's items in its own order.
  std::uint64_t next_even = 0;
  std::uint64_t next_odd = 1;
  for (const std::uint64_t x : seen_at_merge) {
    if (x % 2 == 0) {
      EXPECT_EQ(x, next_even);
      next_even += 2;
    } else {
      EXPECT_EQ(x, next_odd);
      next_odd += 2;
    }
  }
}

TEST(PipelineMergeTest, TheStreamEndsOnceEveryInputHasEnded) {
  Watchdog watchdog;
  Pipeline p;
  std::atomic<bool> release{false};
  std::atomic<int> flushes{0};
  std::atomic<std::uint64_t> count{0};
  struct Counting {
    std::atomic<std::uint64_t>* count;
    std::atomic<int>* flushes;
    void process(std::uint64_t) { count->fetch_add(1, std::memory_order_relaxed); }
    void flush() { flushes->fetch_add(1, std::memory_order_relaxed); }
  };
  auto quick = p.source(count_to(10));
  auto slow = p.source([&, next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
    while (!release.load(std::memory_order_relaxed))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (next == 5) return std::nullopt;
    return next++;
  });
  merge(quick, slow) | sink(Counting{&count, &flushes});
  p.start();
  // The quick source ends; its items arrive, and the sink does not end.
  while (count.load(std::memory_order_relaxed) < 10)
    std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(flushes.load(), 0);
  release.store(true, std::memory_order_relaxed);
  p.wait();
  EXPECT_EQ(count.load(), 15U);
  EXPECT_EQ(flushes.load(), 1);
}

TEST(PipelineMergeTest, AThrowInOneInputCancelsTheOthers) {
  Watchdog watchdog;
  Pipeline p;
  auto endless = p.source(
      [next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> { return next++; });
  auto failing = p.source(count_to(1000)) | stage([](std::uint64_t x) {
                   if (x == 500) throw std::runtime_error("boom");
                   return x;
                 });
  merge(endless, failing) | sink([](std::uint64_t) {}, {.mode = Mode::parallel, .workers = 2});
  EXPECT_THROW(p.run(), std::runtime_error);
  EXPECT_EQ(p.state(), conveyor::PipelineState::failed);
}

TEST(PipelineMergeTest, RequestStopEndsEverySource) {
  Watchdog watchdog;
  Pipeline p;
  std::atomic<std::uint64_t> emitted{0};
  std::atomic<std::uint64_t> received{0};
  auto endless = [&] {
    return [&, next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
      emitted.fetch_add(1, std::memory_order_relaxed);
      return next++;
    };
  };
  auto a = p.source(endless());
  auto b = p.source(endless());
  merge(a, b) | sink([&](std::uint64_t) { received.fetch_add(1, std::memory_order_relaxed); });
  p.start();
  while (emitted.load(std::memory_order_relaxed) < 1000)
    std::this_thread::yield();
  p.request_stop();
  p.wait();
  EXPECT_EQ(p.state(), conveyor::PipelineState::finished);
  EXPECT_EQ(received.load(), emitted.load());
}

TEST(PipelineMergeTest, EachSourceHasItsOwnStatistics) {
  Watchdog watchdog;
  Pipeline p;
  auto a = p.source(count_to(100), {.name = "a"});
  auto b = p.source(count_to(50), {.name = "b"});
  merge(a, b) | sink([](std::uint64_t) {}, {.name = "all"});
  p.run();
  const conveyor::PipelineStats stats = p.stats();
  EXPECT_EQ(stats.stage("a")->items_out, 100U);
  EXPECT_EQ(stats.stage("b")->items_out, 50U);
  EXPECT_EQ(stats.stage("all")->items_in, 150U);
  EXPECT_GT(stats.stage("all")->channel_capacity, 0U);
}

TEST(PipelineMergeTest, AnInOrderStageAfterAMergeNeedsOneAtTheMerge) {
  Pipeline p;
  auto a = p.source(count_to(10));
  auto b = p.source(count_to(10));
  merge(a, b) | stage([](std::uint64_t x) { return x; }, {.mode = Mode::parallel, .workers = 2}) |
      sink([](std::uint64_t) {}, {.mode = Mode::serial_in_order});
  EXPECT_THROW(p.start(), std::invalid_argument);
}

TEST(PipelineMergeTest, AnInputOfAMergeCannotGoElsewhere) {
  Pipeline p;
  auto a = p.source(count_to(10));
  auto b = p.source(count_to(10));
  merge(a, b) | sink([](std::uint64_t) {});
  EXPECT_THROW(a | sink([](std::uint64_t) {}), std::logic_error);
  Pipeline q;
  auto c = q.source(count_to(10));
  auto d = q.source(count_to(10));
  EXPECT_THROW((void)(merge(c, d) |
                      conveyor::tee(conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {}),
                                    conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {}))),
               std::logic_error);
}

TEST(PipelineMergeTest, ABranchOfATeeCanBeMergedAgainOnlyThroughAStage) {
  Pipeline p;
  auto source = p.source(count_to(10));
  source | conveyor::tee(conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {}),
                         conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {}));
  auto other = p.source(count_to(10));
  // The tee's point is continued a third way, into a merge.
  merge(source, other) | sink([](std::uint64_t) {});
  EXPECT_THROW(p.start(), std::logic_error);
}

}  // namespace
