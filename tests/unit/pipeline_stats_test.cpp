// Statistics and observers: the counts are exact once the pipeline has finished, the histogram
// counts every item, and observers hear of the start, samples and the end.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>

#include "conveyor/framework/emit.hpp"
#include "conveyor/framework/observer.hpp"
#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/shared.hpp"
#include "conveyor/framework/stage.hpp"
#include "pipeline_support.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Channel;
using conveyor::Emit;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::PipelineState;
using conveyor::PipelineStats;
using conveyor::sink;
using conveyor::stage;
using conveyor::testing::count_to;
using conveyor::testing::discard;
using conveyor::testing::unchanged;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

TEST(PipelineStatsTest, CountsAreExactAfterTheRun) {
  Watchdog watchdog;
  Pipeline p;
  p.source(count_to(10'000)) |
      stage(
          [](std::uint64_t x, Emit<std::uint64_t>& emit) {
            if (x % 10 == 0) {
              emit.count_error();
              return;
            }
            emit(x);
            if (x % 2 == 0) emit(x);
          },
          {.name = "split", .mode = Mode::parallel, .workers = 3, .batch = 16}) |
      sink(discard, {.name = "drop", .channel = Channel::queue(8)});
  const PipelineStats before = p.stats();
  EXPECT_EQ(before.state, PipelineState::idle);
  EXPECT_EQ(before.stages.size(), 3U);
  p.run();
  const PipelineStats stats = p.stats();
  EXPECT_EQ(stats.state, PipelineState::finished);
  EXPECT_GT(stats.elapsed_seconds, 0.0);
  const auto* source = stats.stage("source");
  const auto* split = stats.stage("split");
  const auto* drop = stats.stage("drop");
  ASSERT_TRUE(source && split && drop);
  EXPECT_EQ(source->items_in, 0U);
  EXPECT_EQ(source->items_out, 10'000U);
  EXPECT_EQ(source->channel_capacity, 0U);
  EXPECT_EQ(split->workers, 3U);
  EXPECT_EQ(split->items_in, 10'000U);
  EXPECT_EQ(split->errors, 1'000U);
  // 9000 pass; the 4000 even ones among them twice.
  EXPECT_EQ(split->items_out, 13'000U);
  EXPECT_EQ(split->item_duration.count, split->items_in);
  EXPECT_EQ(split->channel_capacity, 3U * 128U);
  EXPECT_EQ(split->channel_depth, 0U);
  EXPECT_EQ(drop->items_in, 13'000U);
  EXPECT_EQ(drop->item_duration.count, 13'000U);
  EXPECT_EQ(drop->channel_capacity, 3U * 8U);
  std::uint64_t bucketed = 0;
  for (auto count : drop->item_duration.counts)
    bucketed += count;
  EXPECT_EQ(bucketed, drop->item_duration.count);
  EXPECT_GE(drop->item_duration.sum_seconds, 0.0);
}

TEST(PipelineStatsTest, BlockedTimeShowsWhereTheWorkersWait) {
  Watchdog watchdog;
  Pipeline p;
  p.source(count_to(200)) | sink([](std::uint64_t) { std::this_thread::sleep_for(200us); },
                                 {.channel = Channel::mailbox()});
  p.run();
  const PipelineStats stats = p.stats();
  // The source spends its time waiting for the slow sink, which is busy.
  EXPECT_GT(stats.stages[0].blocked_push_seconds, 0.01);
  EXPECT_GT(stats.stages[1].busy_seconds, 0.02);
  EXPECT_GE(stats.stages[1].item_duration.sum_seconds, 0.02);
}

class Recorder : public conveyor::Observer {
 public:
  void on_start(const Pipeline& pipeline) override {
    started.store(true);
    during_start = pipeline.stats().state;
  }
  void on_sample(const Pipeline&, const PipelineStats&) override { samples.fetch_add(1); }
  void on_finish(const Pipeline&, const PipelineStats& stats,
                 const std::exception_ptr& error) override {
    finished_items = stats.stages.back().items_in;
    failed = error != nullptr;
  }

  std::atomic<bool> started{false};
  PipelineState during_start = PipelineState::idle;
  std::atomic<int> samples{0};
  std::uint64_t finished_items = 0;
  bool failed = true;
};

TEST(PipelineStatsTest, ObserversHearOfStartSamplesAndFinish) {
  Watchdog watchdog;
  auto recorder = std::make_shared<Recorder>();
  Pipeline p({.sample_interval = 5ms});
  p.add_observer(recorder);
  p.source(count_to(50)) | sink([](std::uint64_t) { std::this_thread::sleep_for(1ms); });
  p.run();
  EXPECT_TRUE(recorder->started.load());
  EXPECT_EQ(recorder->during_start, PipelineState::running);
  EXPECT_GE(recorder->samples.load(), 2);
  EXPECT_EQ(recorder->finished_items, 50U);
  EXPECT_FALSE(recorder->failed);
  EXPECT_THROW(p.add_observer(recorder), std::logic_error);
}

TEST(PipelineStatsTest, StatsMayBeReadWhileThePipelineRuns) {
  Watchdog watchdog;
  Pipeline p;
  p.source(count_to(200'000)) | stage(unchanged, {.mode = Mode::parallel, .workers = 2}) |
      sink(discard);
  p.start();
  std::uint64_t last = 0;
  for (int i = 0; i < 100; ++i) {
    const auto stats = p.stats();
    EXPECT_GE(stats.stages[2].items_in, last);
    last = stats.stages[2].items_in;
  }
  p.wait();
  EXPECT_EQ(p.stats().stages[2].items_in, 200'000U);
}

// stats() from another thread while start() names the stages left unnamed (ThreadSanitizer
// reports a race between the two).
TEST(PipelineStatsTest, StatsMayBeReadWhileThePipelineStarts) {
  Watchdog watchdog;
  for (int round = 0; round < 20; ++round) {
    Pipeline p;
    p.source(count_to(100)) | stage(unchanged) | sink(discard);
    std::atomic<bool> done{false};
    std::thread reader([&] {
      while (!done.load(std::memory_order_acquire))
        (void)p.stats();
    });
    p.run();
    done.store(true, std::memory_order_release);
    reader.join();
    EXPECT_EQ(p.stats().stages[1].name, "stage-1");
  }
}

// A worker that waits for items while its output is full (it pushes what it holds before it
// sleeps) counts that time once, as time blocked pushing: its two blocked times add up to no more
// than the run took.
TEST(PipelineStatsTest, TimeBlockedPushingBeforeASleepIsNotCountedAgain) {
  Watchdog watchdog;
  Pipeline p;
  p.source([next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
    if (next == 60) return std::nullopt;
    std::this_thread::sleep_for(4ms);
    return next++;
  }) | stage(unchanged, {.name = "middle"}) |
      sink([](std::uint64_t) { std::this_thread::sleep_for(5ms); },
           {.channel = Channel::queue(1), .batch = 4});
  p.run();
  const PipelineStats stats = p.stats();
  const auto* middle = stats.stage("middle");
  ASSERT_NE(middle, nullptr);
  EXPECT_GT(middle->blocked_push_seconds, 0.05);
  EXPECT_LE(middle->blocked_push_seconds + middle->blocked_pop_seconds,
            stats.elapsed_seconds * 1.05)
      << "push " << middle->blocked_push_seconds << " s, pop " << middle->blocked_pop_seconds
      << " s, elapsed " << stats.elapsed_seconds << " s";
}

TEST(PipelineStatsTest, TrackedResourcesAppearInTheStats) {
  Watchdog watchdog;
  conveyor::Shared<std::uint64_t> total("total", {"add", "read"});
  Pipeline p;
  p.track(total);
  p.source(count_to(1000)) |
      stage(
          [&](std::uint64_t x) {
            total.access(0, [&](std::uint64_t& t) { __atomic_fetch_add(&t, x, __ATOMIC_RELAXED); });
            return x;
          },
          {.mode = Mode::parallel, .workers = 2}) |
      sink([&](std::uint64_t x) {
        if (x % 100 == 0) total.access(1, [](std::uint64_t& t) { return t; });
      });
  p.run();
  const auto stats = p.stats();
  ASSERT_EQ(stats.resources.size(), 1U);
  EXPECT_EQ(stats.resources[0].name, "total");
  ASSERT_EQ(stats.resources[0].groups.size(), 2U);
  EXPECT_EQ(stats.resources[0].groups[0].name, "add");
  EXPECT_EQ(stats.resources[0].groups[0].entries, 1000U);
  EXPECT_EQ(stats.resources[0].groups[1].entries, 10U);
  EXPECT_EQ(total.access(1, [](std::uint64_t& t) { return t; }), 999U * 1000U / 2);
}

}  // namespace
