// Batches that stay runs take whole-batch paths: a pulled source fills each batch in one loop, and
// a stage that maps each input to one output maps a whole run in one loop (in place when the item
// type does not change). These tests check that those paths keep every promise of the per-item
// path: every item once, the source's order where an in-order stage restores it, runs mixed with
// tagged batches on one port, untagged and broadcast edges, the ordering window and stop requests.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/stage.hpp"
#include "pipeline_support.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Channel;
using conveyor::Dispatch;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::testing::count_to;
using conveyor::testing::expected_tally;
using conveyor::testing::SharedTally;
using conveyor::testing::Tally;
using conveyor::testing::Watchdog;

constexpr std::uint64_t items = 50'000;

struct RunCase {
  std::size_t workers;
  std::size_t batch_in;   // into the mapping stages
  std::size_t batch_out;  // into the sink
};

class BatchRunsTest : public ::testing::TestWithParam<RunCase> {};

// In place (same type), then to another type and back: each value is checked, in order.
TEST_P(BatchRunsTest, MappedRunsArriveOnceAndInOrder) {
  Watchdog watchdog;
  const RunCase c = GetParam();
  Pipeline p;
  std::uint64_t expected = 0;
  std::uint64_t wrong = 0;
  p.source(count_to(items)) |
      stage([](std::uint64_t x) { return 3 * x + 1; },
            {.mode = Mode::parallel, .workers = c.workers, .batch = c.batch_in}) |
      stage([](std::uint64_t x) { return std::to_string(x); },
            {.mode = Mode::parallel, .workers = c.workers, .batch = c.batch_in}) |
      stage([](const std::string& s) { return (std::stoull(s) - 1) / 3; },
            {.mode = Mode::parallel, .workers = c.workers, .batch = c.batch_out}) |
      sink(
          [&](std::uint64_t x) {
            if (x != expected) ++wrong;
            expected = x + 1;
          },
          {.mode = Mode::serial_in_order, .batch = c.batch_out});
  p.run();
  EXPECT_EQ(expected, items);
  EXPECT_EQ(wrong, 0U);
  // Counted once per run on the whole-batch paths, as once per item elsewhere.
  const auto stats = p.stats();
  for (std::size_t i = 0; i < stats.stages.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(stats.stages[i].items_in, items) << stats.stages[i].name;
    }
    if (i + 1 < stats.stages.size()) {
      EXPECT_EQ(stats.stages[i].items_out, items) << stats.stages[i].name;
    }
  }
}

// A filter's gaps make some batches tagged while others stay runs, so the mapping stage after it
// sends both through one port.
TEST_P(BatchRunsTest, RunsAndGapsShareAPortAndKeepTheOrder) {
  Watchdog watchdog;
  const RunCase c = GetParam();
  Pipeline p;
  std::uint64_t next_x = 0;
  std::uint64_t wrong = 0;
  std::uint64_t received = 0;
  p.source(count_to(items)) |
      stage(
          [](std::uint64_t x) -> std::optional<std::uint64_t> {
            // Whole stretches without gaps, then a few gaps.
            if (x % 100 > 90 && x % 3 == 0) return std::nullopt;
            return x;
          },
          {.mode = Mode::parallel, .workers = c.workers, .batch = c.batch_in}) |
      stage([](std::uint64_t x) { return 2 * x; },
            {.mode = Mode::parallel, .workers = c.workers, .batch = c.batch_in}) |
      sink(
          [&](std::uint64_t y) {
            while (next_x % 100 > 90 && next_x % 3 == 0)
              ++next_x;
            if (y != 2 * next_x) ++wrong;
            ++next_x;
            ++received;
          },
          {.mode = Mode::serial_in_order, .batch = c.batch_out});
  p.run();
  std::uint64_t kept = 0;
  for (std::uint64_t x = 0; x < items; ++x) {
    if (!(x % 100 > 90 && x % 3 == 0)) ++kept;
  }
  EXPECT_EQ(received, kept);
  EXPECT_EQ(wrong, 0U);
}

// No in-order stage downstream: the runs are numbered by the port that sends them.
TEST_P(BatchRunsTest, UnorderedEdgesCarryEveryItemOnce) {
  Watchdog watchdog;
  const RunCase c = GetParam();
  Pipeline p;
  SharedTally tally;
  p.source(count_to(items)) |
      stage([](std::uint64_t x) { return x + 7; },
            {.mode = Mode::parallel, .workers = c.workers, .batch = c.batch_in}) |
      sink([&](std::uint64_t x) { tally.add(x - 7); },
           {.mode = Mode::parallel, .workers = 2, .batch = c.batch_out});
  p.run();
  EXPECT_EQ(tally.get(), expected_tally(items));
}

// Broadcast: every sink worker gets a copy of each mapped run.
TEST_P(BatchRunsTest, BroadcastRunsReachEveryWorker) {
  Watchdog watchdog;
  const RunCase c = GetParam();
  Pipeline p;
  SharedTally both;
  p.source(count_to(items)) |
      stage([](std::uint64_t x) { return x; },
            {.mode = Mode::parallel, .workers = c.workers, .batch = c.batch_in}) |
      sink([&](std::uint64_t x) { both.add(x); }, {.mode = Mode::parallel,
                                                   .workers = 2,
                                                   .dispatch = Dispatch::broadcast(),
                                                   .batch = c.batch_out});
  p.run();
  Tally twice = expected_tally(items);
  twice.count *= 2;
  twice.hash *= 2;
  EXPECT_EQ(both.get(), twice);
}

// A small ordering window: the source fills batches only with numbers inside it, and the
// in-order stage, slow at times, lets it go on.
TEST_P(BatchRunsTest, ThePulledSourceWaitsForTheOrderingWindow) {
  Watchdog watchdog;
  const RunCase c = GetParam();
  Pipeline p;
  std::uint64_t expected = 0;
  std::uint64_t wrong = 0;
  p.source(count_to(items)) |
      stage([](std::uint64_t x) { return x; }, {.mode = Mode::parallel,
                                                .workers = c.workers,
                                                .channel = Channel::queue(1),
                                                .batch = c.batch_in}) |
      sink(
          [&](std::uint64_t x) {
            if (x % 5'000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            if (x != expected) ++wrong;
            expected = x + 1;
          },
          {.mode = Mode::serial_in_order, .channel = Channel::queue(1), .batch = c.batch_out});
  p.run();
  EXPECT_EQ(expected, items);
  EXPECT_EQ(wrong, 0U);
}

std::string run_case_name(const ::testing::TestParamInfo<RunCase>& param) {
  return std::to_string(param.param.workers) + "workers_" + std::to_string(param.param.batch_in) +
         "in_" + std::to_string(param.param.batch_out) + "out";
}

INSTANTIATE_TEST_SUITE_P(Shapes, BatchRunsTest,
                         ::testing::Values(RunCase{1, 16, 16}, RunCase{2, 16, 16},
                                           RunCase{2, 16, 5}, RunCase{2, 5, 16}, RunCase{3, 64, 64},
                                           RunCase{2, 1, 16}, RunCase{2, 16, 1}),
                         run_case_name);

// A pulled source checks for a stop once per batch; what it took before the stop still reaches
// the sink, and the counts agree end to end.
TEST(BatchRunsStop, RequestStopDrainsWhatThePulledSourceTook) {
  Watchdog watchdog;
  std::atomic<std::uint64_t> consumed{0};
  Pipeline p;
  p.source([next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> { return next++; }) |
      stage([](std::uint64_t x) { return x; },
            {.mode = Mode::parallel, .workers = 2, .batch = 32}) |
      sink([&](std::uint64_t) { consumed.fetch_add(1, std::memory_order_relaxed); },
           {.mode = Mode::serial_in_order, .batch = 32});
  p.start();
  while (consumed.load(std::memory_order_relaxed) < 10'000)
    std::this_thread::yield();
  p.request_stop();
  p.wait();
  const auto stats = p.stats();
  EXPECT_GT(stats.stages.front().items_out, 0U);
  EXPECT_EQ(stats.stages.front().items_out, consumed.load());
  EXPECT_EQ(stats.stages.back().items_in, consumed.load());
}

}  // namespace
