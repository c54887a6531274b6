// The oneTBB executor: workers are tasks that suspend when they wait, so a pipeline with far more
// workers than the arena has threads still runs to the end.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/stage.hpp"
#include "pipeline_support.hpp"
#include "task_suspension.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Channel;
using conveyor::Dispatch;
using conveyor::Executor;
using conveyor::Flow;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::StageOptions;
using conveyor::testing::add_to;
using conveyor::testing::append_to;
using conveyor::testing::count_to;
using conveyor::testing::Watchdog;

// Twelve stages (sixteen workers) on an arena of two threads.
TEST(PipelineExecutorTest, TwelveStagesRunOnAnArenaOfTwo) {
  SKIP_IF_SUSPENSION_IS_UNCHECKABLE();
  Watchdog watchdog;
  constexpr std::uint64_t count = 50'000;
  Pipeline p({.executor = Executor::tbb(2)});
  const std::vector<StageOptions> shapes = {
      {},
      {.mode = Mode::parallel, .workers = 3},
      {.channel = Channel::mailbox()},
      {.mode = Mode::serial_in_order},
      {.mode = Mode::parallel, .workers = 2, .batch = 8},
      {.mode = Mode::parallel,
       .workers = 2,
       .dispatch = Dispatch::by_key([](const std::uint64_t& x) { return x % 7; })},
      {.channel = Channel::queue(2)},
      {.mode = Mode::serial_in_order, .batch = 4},
      {},
      {.mode = Mode::parallel, .workers = 2, .channel = Channel::mailbox()},
  };
  Flow<std::uint64_t> flow = p.source(count_to(count));
  for (const auto& shape : shapes)
    flow = flow | stage([](std::uint64_t x) { return x + 1; }, shape);
  std::vector<std::uint64_t> out;
  flow | sink(append_to(out), {.mode = Mode::serial_in_order});
  p.run();
  ASSERT_EQ(out.size(), count);
  for (std::uint64_t i = 0; i < count; ++i)
    ASSERT_EQ(out[i], i + shapes.size());
}

TEST(PipelineExecutorTest, AnArenaOfOneThreadIsEnough) {
  SKIP_IF_SUSPENSION_IS_UNCHECKABLE();
  Watchdog watchdog;
  Pipeline p({.executor = Executor::tbb(1)});
  conveyor::testing::Tally tally;
  p.source(count_to(20'000)) |
      stage([](std::uint64_t x) { return x; },
            {.mode = Mode::parallel, .workers = 4, .channel = Channel::mailbox()}) |
      sink(add_to(tally), {.mode = Mode::serial_in_order});
  p.run();
  EXPECT_EQ(tally, conveyor::testing::expected_tally(20'000));
}

}  // namespace
