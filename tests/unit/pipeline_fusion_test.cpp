// Stage fusion (StageOptions::fuse): when a stage runs on the workers of the stage before it,
// every item still arrives once, in order where an in-order stage asks for it, flush hooks run in
// stage order, statistics stay per stage, failures fail the pipeline, and fusions that would change
// what a stage sees are refused.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/framework.hpp"
#include "pipeline_support.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Dispatch;
using conveyor::Emit;
using conveyor::Fuse;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::PipelineStats;
using conveyor::sink;
using conveyor::stage;
using conveyor::StageStats;
using conveyor::testing::add_to;
using conveyor::testing::append_to;
using conveyor::testing::count_to;
using conveyor::testing::discard;
using conveyor::testing::expected_tally;
using conveyor::testing::SharedTally;
using conveyor::testing::Tally;
using conveyor::testing::unchanged;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

constexpr std::uint64_t items = 20'000;

std::size_t hardware_threads() {
  return std::max(1U, std::thread::hardware_concurrency());
}

// source -> "first" (parallel) -> "second" (parallel) -> sink, each parallel stage with `workers`
// workers; returns the statistics after checking that every item arrived once.
PipelineStats run_two_parallel_stages(std::size_t first_workers, std::size_t second_workers,
                                      Fuse fuse) {
  Pipeline p;
  SharedTally tally;
  p.source(count_to(items)) |
      stage(unchanged, {.name = "first", .mode = Mode::parallel, .workers = first_workers}) |
      stage(unchanged,
            {.name = "second", .mode = Mode::parallel, .workers = second_workers, .fuse = fuse}) |
      sink(add_to(tally), {.mode = Mode::parallel, .workers = 2});
  p.run();
  EXPECT_EQ(tally.get(), expected_tally(items));
  return p.stats();
}

TEST(PipelineFusionTest, ParallelStagesOfOneWidthFuseWhenWorkersOutnumberTheCores) {
  Watchdog watchdog;
  // 2 * hardware + 3 workers in all: more than the machine has threads.
  const std::size_t width = hardware_threads();
  const PipelineStats stats = run_two_parallel_stages(width, width, Fuse::automatic);
  const StageStats* second = stats.stage("second");
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->fused_into, "first");
  EXPECT_EQ(second->workers, width);
  EXPECT_EQ(second->channel_capacity, 0U);
  // Statistics stay per stage.
  EXPECT_EQ(second->items_in, items);
  EXPECT_EQ(second->items_out, items);
  EXPECT_EQ(stats.stage("first")->items_out, items);
  EXPECT_EQ(stats.stage("first")->fused_into, "");
}

TEST(PipelineFusionTest, FuseNeverKeepsAStageOnItsOwnWorkers) {
  Watchdog watchdog;
  const std::size_t width = hardware_threads();
  const PipelineStats stats = run_two_parallel_stages(width, width, Fuse::never);
  EXPECT_EQ(stats.stage("second")->fused_into, "");
  EXPECT_GT(stats.stage("second")->channel_capacity, 0U);
}

TEST(PipelineFusionTest, StagesOfDifferentWidthsStayApart) {
  Watchdog watchdog;
  const std::size_t width = hardware_threads();
  const PipelineStats stats = run_two_parallel_stages(width, width + 1, Fuse::automatic);
  EXPECT_EQ(stats.stage("second")->fused_into, "");
}

TEST(PipelineFusionTest, AForcedParallelStageTakesTheWidthOfItsGroup) {
  Watchdog watchdog;
  const PipelineStats stats = run_two_parallel_stages(2, 5, Fuse::always);
  EXPECT_EQ(stats.stage("second")->fused_into, "first");
  EXPECT_EQ(stats.stage("second")->workers, 2U);
}

// Every stage, the sink included, fused into the source: one thread runs them all, in order.
TEST(PipelineFusionTest, AForcedSerialChainRunsOnTheSourcesWorkerInOrder) {
  Watchdog watchdog;
  std::mutex mutex;
  std::set<std::thread::id> threads;
  auto note_thread = [&] {
    const std::lock_guard lock(mutex);
    threads.insert(std::this_thread::get_id());
  };
  std::vector<std::uint64_t> seen;
  Pipeline p;
  p.source(count_to(items)) |
      stage(
          [&](std::uint64_t x) {
            note_thread();
            return 2 * x;
          },
          {.name = "double", .fuse = Fuse::always}) |
      stage(
          [&](std::uint64_t x) -> std::optional<std::uint64_t> {
            note_thread();
            if (x % 3 == 0) return std::nullopt;
            return x;
          },
          {.name = "filter", .mode = Mode::serial_in_order, .fuse = Fuse::always}) |
      sink(
          [&](std::uint64_t x) {
            note_thread();
            seen.push_back(x);
          },
          {.name = "collect", .mode = Mode::serial_in_order, .fuse = Fuse::always});
  p.run();
  EXPECT_EQ(threads.size(), 1U);
  std::vector<std::uint64_t> expected;
  for (std::uint64_t i = 0; i < items; ++i) {
    if ((2 * i) % 3 != 0) expected.push_back(2 * i);
  }
  EXPECT_EQ(seen, expected);
  const PipelineStats stats = p.stats();
  EXPECT_EQ(stats.stage("filter")->items_in, items);
  EXPECT_EQ(stats.stage("filter")->items_out, expected.size());
  EXPECT_EQ(stats.stage("collect")->items_in, expected.size());
  EXPECT_EQ(stats.stage("collect")->fused_into, "source");
}

// A fused group between parallel workers and an in-order sink: what the group emits for one input
// (none, one or several items, across both stages) keeps that input's place in the order.
TEST(PipelineFusionTest, AFusedGroupKeepsTheOrderForAnInOrderStageAfterIt) {
  Watchdog watchdog;
  for (const std::size_t batch : {std::size_t{1}, std::size_t{8}}) {
    std::vector<std::uint64_t> seen;
    Pipeline p;
    p.source(count_to(items)) |
        stage(
            [](std::uint64_t x, Emit<std::uint64_t>& emit) {
              for (std::uint64_t k = 0; k < x % 3; ++k)
                emit(3 * x + k);
            },
            {.name = "split", .mode = Mode::parallel, .workers = 2}) |
        stage(
            [](std::uint64_t x, Emit<std::uint64_t>& emit) {
              if (x % 7 == 0) return;
              emit(2 * x);
              if (x % 5 == 0) emit(2 * x + 1);
            },
            {.name = "spread", .mode = Mode::parallel, .fuse = Fuse::always}) |
        sink(append_to(seen), {.mode = Mode::serial_in_order, .batch = batch});
    p.run();
    std::vector<std::uint64_t> expected;
    for (std::uint64_t x = 0; x < items; ++x) {
      for (std::uint64_t k = 0; k < x % 3; ++k) {
        const std::uint64_t y = 3 * x + k;
        if (y % 7 == 0) continue;
        expected.push_back(2 * y);
        if (y % 5 == 0) expected.push_back(2 * y + 1);
      }
    }
    EXPECT_EQ(seen, expected) << "batch " << batch;
    EXPECT_EQ(p.stats().stage("spread")->fused_into, "split");
  }
}

// A stage whose flush hook emits: a fused sink takes that item before its own flush hook runs.
class Flushing {
 public:
  void process(std::uint64_t x, Emit<std::uint64_t>& emit) { emit(x); }
  void flush(Emit<std::uint64_t>& emit) { emit(flushed); }
  static constexpr std::uint64_t flushed = 1'000'000;
};

class Recording {
 public:
  explicit Recording(std::vector<std::uint64_t>& log) : log_(&log) {}
  void process(std::uint64_t x) { log_->push_back(x); }
  void flush() { log_->push_back(flushed_mark); }
  static constexpr std::uint64_t flushed_mark = 2'000'000;

 private:
  std::vector<std::uint64_t>* log_;
};

TEST(PipelineFusionTest, FlushHooksRunInStageOrder) {
  Watchdog watchdog;
  std::vector<std::uint64_t> log;
  Pipeline p;
  p.source(count_to(100)) | stage(Flushing{}, {.name = "flushing"}) |
      sink(Recording(log), {.name = "recording", .fuse = Fuse::always});
  p.run();
  ASSERT_EQ(log.size(), 102U);
  EXPECT_EQ(log[99], 99U);
  EXPECT_EQ(log[100], Flushing::flushed);
  EXPECT_EQ(log[101], Recording::flushed_mark);
}

TEST(PipelineFusionTest, FusionsThatWouldChangeWhatAStageSeesAreRefused) {
  Watchdog watchdog;
  auto expect_refused = [](Pipeline& p, const std::string& words) {
    try {
      p.start();
      ADD_FAILURE() << "started";
      p.wait();
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find(words), std::string::npos) << error.what();
    }
  };
  {
    Pipeline p;
    p.source(count_to(10)) |
        stage(unchanged, {.name = "wide", .mode = Mode::parallel, .workers = 2}) |
        sink(discard, {.name = "serial", .fuse = Fuse::always});
    expect_refused(p, "'serial': cannot be fused into 'wide': a serial stage cannot run on 2");
  }
  {
    Pipeline p;
    p.source(count_to(10)) | stage(unchanged, {.mode = Mode::parallel, .workers = 2}) |
        stage(unchanged, {.name = "unordered", .fuse = Fuse::never}) |
        sink(discard, {.mode = Mode::serial_in_order, .fuse = Fuse::always});
    expect_refused(p, "would not arrive in order");
  }
  {
    Pipeline p;
    p.source(count_to(10)) |
        stage(unchanged,
              {.mode = Mode::parallel,
               .workers = 2,
               .dispatch = Dispatch::by_key<std::uint64_t>([](std::uint64_t x) { return x; }),
               .fuse = Fuse::always}) |
        sink(discard);
    expect_refused(p, "its dispatch decides");
  }
  {
    Pipeline p;
    p.source(count_to(10)) |
        stage(unchanged, {.mode = Mode::parallel,
                          .workers = 2,
                          .dispatch = Dispatch::broadcast(),
                          .fuse = Fuse::always}) |
        sink(discard);
    expect_refused(p, "its dispatch decides");
  }
}

// Runs `p`, whose stage "fused" (fused into "head") throws once: the run fails, and the error
// counts on "fused" alone.
void expect_failure_counted_on_fused(Pipeline& p) {
  EXPECT_THROW(p.run(), std::runtime_error);
  const PipelineStats stats = p.stats();
  EXPECT_EQ(stats.stage("fused")->errors, 1U);
  EXPECT_EQ(stats.stage("head")->errors, 0U);
}

TEST(PipelineFusionTest, AThrowInAFusedStageFailsThePipelineAndCountsOnThatStage) {
  Watchdog watchdog;
  Pipeline p;
  p.source(count_to(items)) | stage(unchanged, {.name = "head"}) |
      stage(
          [](std::uint64_t x) {
            if (x == 1'000) throw std::runtime_error("bad item");
            return x;
          },
          {.name = "fused", .fuse = Fuse::always}) |
      sink(discard);
  expect_failure_counted_on_fused(p);
}

// Outputs held for an in-order stage leave a forwarding group when its input is done; a key
// function downstream that throws then is counted on the group's last stage, as without fusion.
TEST(PipelineFusionTest, AThrowWhenAGroupSendsHeldOutputsCountsOnItsLastStage) {
  Watchdog watchdog;
  Pipeline p;
  p.source(count_to(items)) |
      stage(unchanged, {.name = "head", .mode = Mode::parallel, .workers = 2}) |
      stage(unchanged, {.name = "fused", .mode = Mode::parallel, .fuse = Fuse::always}) |
      stage(unchanged, {.mode = Mode::parallel,
                        .workers = 2,
                        .dispatch = Dispatch::by_key<std::uint64_t>([](std::uint64_t x) {
                          if (x == 1'000) throw std::runtime_error("bad key");
                          return x;
                        })}) |
      sink(discard, {.mode = Mode::serial_in_order});
  expect_failure_counted_on_fused(p);
}

// Fused into a one-worker group, a parallel stage runs as one copy: its code need not be copyable.
TEST(PipelineFusionTest, AForcedStageWhoseCodeCannotBeCopiedRunsAsOneCopy) {
  Watchdog watchdog;
  Tally tally;
  Pipeline p;
  p.source(count_to(items)) |
      stage([offset = std::make_unique<std::uint64_t>(0)](std::uint64_t x) { return x + *offset; },
            {.name = "moved", .mode = Mode::parallel, .workers = 4, .fuse = Fuse::always}) |
      sink(add_to(tally));
  p.run();
  EXPECT_EQ(tally, expected_tally(items));
  EXPECT_EQ(p.stats().stage("moved")->workers, 1U);
}

TEST(PipelineFusionTest, CountErrorInAFusedStageCountsOnThatStage) {
  Watchdog watchdog;
  Pipeline p;
  p.source(count_to(100)) |
      stage(
          [](std::uint64_t x, Emit<std::uint64_t>& emit) {
            if (x % 10 == 0) {
              emit.count_error();
              return;
            }
            emit(x);
          },
          {.name = "checks", .fuse = Fuse::always}) |
      sink(discard);
  p.run();
  EXPECT_EQ(p.stats().stage("checks")->errors, 10U);
  EXPECT_EQ(p.stats().stage("source")->errors, 0U);
}

TEST(PipelineFusionTest, AbortEndsAPipelineWhoseFusedStageIsBusy) {
  Watchdog watchdog;
  Pipeline p;
  std::atomic<std::uint64_t> taken{0};
  p.source([next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> { return next++; }) |
      stage(unchanged, {.mode = Mode::parallel, .workers = 2}) |
      stage(
          [&](std::uint64_t x) {
            taken.fetch_add(1, std::memory_order_relaxed);
            std::this_thread::sleep_for(10us);
            return x;
          },
          {.mode = Mode::parallel, .fuse = Fuse::always}) |
      sink(discard);
  p.start();
  while (taken.load(std::memory_order_relaxed) < 100)
    std::this_thread::sleep_for(1ms);
  p.abort();
  p.wait();
  EXPECT_EQ(p.stats().state, conveyor::PipelineState::finished);
}

// request_stop(): the source stops, and every item it emitted goes through the fused group.
TEST(PipelineFusionTest, RequestStopDeliversEverythingTheSourceEmitted) {
  Watchdog watchdog;
  Pipeline p;
  std::atomic<std::uint64_t> delivered{0};
  p.source([next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> { return next++; }) |
      stage(unchanged, {.name = "first", .fuse = Fuse::always}) |
      stage(unchanged, {.name = "second", .mode = Mode::parallel, .workers = 2}) |
      sink([&](std::uint64_t) { delivered.fetch_add(1, std::memory_order_relaxed); },
           {.name = "sink", .mode = Mode::parallel, .fuse = Fuse::always});
  p.start();
  while (delivered.load(std::memory_order_relaxed) < 10'000)
    std::this_thread::sleep_for(1ms);
  p.request_stop();
  p.wait();
  const PipelineStats stats = p.stats();
  EXPECT_EQ(stats.stage("sink")->fused_into, "second");
  EXPECT_EQ(stats.stage("first")->items_in, stats.stage("source")->items_out);
  EXPECT_EQ(delivered.load(), stats.stage("source")->items_out);
}

}  // namespace
