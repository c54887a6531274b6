// Pipelines of every shape, pushed hard: stages {2, 3, 5} x workers {1, 2, 4} x channel {mailbox,
// queue 1, queue 64} x batching {off, on}. Every item is counted and fingerprinted, the order is
// checked where a serial_in_order stage restores it, and a watchdog turns a hang into a failure.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <string>
#include <tuple>

#include "conveyor/framework/emit.hpp"
#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/stage.hpp"
#include "pipeline_support.hpp"
#include "stress.hpp"
#include "stress_shapes.hpp"
#include "task_suspension.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Channel;
using conveyor::Dispatch;
using conveyor::Emit;
using conveyor::Executor;
using conveyor::Flow;
using conveyor::Fuse;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::testing::add_to;
using conveyor::testing::channel_of;
using conveyor::testing::ChannelKind;
using conveyor::testing::count_to;
using conveyor::testing::expected_tally;
using conveyor::testing::SharedTally;
using conveyor::testing::Tally;
using conveyor::testing::Watchdog;

// 108 shapes share the stress budget: a hundredth of it each (100,000 items in optimised builds).
std::uint64_t items_per_shape() {
  return std::max<std::uint64_t>(10'000, conveyor::testing::stress_items() / 100);
}

using Shape = std::tuple<int, std::size_t, ChannelKind, bool>;

class PipelineStress : public ::testing::TestWithParam<Shape> {};

// source -> `middle` parallel stages fed by `dispatch` -> serial_in_order sink, which checks that
// every item arrives once and in order.
void expect_in_order_through(int middle, std::size_t workers, ChannelKind channel,
                             std::size_t batch, const Dispatch& dispatch) {
  const std::uint64_t count = items_per_shape();
  Pipeline p;
  Flow<std::uint64_t> flow = p.source(count_to(count));
  for (int i = 0; i < middle; ++i) {
    // Every other stage is fused into the one before it where the dispatch allows it, so that
    // fused groups and channels between parallel stages both see every shape.
    const bool fusable = dispatch.kind() == Dispatch::Kind::round_robin ||
                         dispatch.kind() == Dispatch::Kind::least_loaded;
    flow = flow | stage([](std::uint64_t x) { return x; },
                        {.mode = Mode::parallel,
                         .workers = workers,
                         .channel = channel_of(channel),
                         .dispatch = dispatch,
                         .batch = batch,
                         .fuse = i % 2 == 1 && fusable ? Fuse::always : Fuse::never});
  }
  std::uint64_t expected_next = 0;
  std::uint64_t out_of_order = 0;
  Tally tally;
  flow | sink(
             [&](std::uint64_t x) {
               if (x != expected_next) ++out_of_order;
               expected_next = x + 1;
               tally.add(x);
             },
             {.mode = Mode::serial_in_order, .channel = channel_of(channel), .batch = batch});
  p.run();
  EXPECT_EQ(out_of_order, 0U);
  EXPECT_EQ(tally, expected_tally(count));
}

TEST_P(PipelineStress, InOrderSinkSeesEveryItemOnceAndInOrder) {
  Watchdog watchdog(std::chrono::seconds(120));
  const auto [stages, workers, channel, batching] = GetParam();
  expect_in_order_through(stages - 2, workers, channel, batching ? 16 : 1, Dispatch::round_robin());
}

// The same shapes with a parallel sink: fan-in from every worker to every worker.
TEST_P(PipelineStress, ParallelSinkSeesEveryItemOnce) {
  Watchdog watchdog(std::chrono::seconds(120));
  const auto [stages, workers, channel, batching] = GetParam();
  const std::uint64_t count = items_per_shape();
  const std::size_t batch = batching ? 16 : 1;
  Pipeline p;
  Flow<std::uint64_t> flow = p.source(count_to(count));
  for (int i = 0; i < stages - 2; ++i) {
    flow = flow | stage([](std::uint64_t x) { return x; },
                        {.mode = i % 2 == 0 ? Mode::parallel : Mode::serial_out_of_order,
                         .workers = workers,
                         .channel = channel_of(channel),
                         .batch = batch});
  }
  SharedTally tally;
  flow |
      sink(add_to(tally), {.mode = Mode::parallel,
                           .workers = workers,
                           .channel = channel_of(channel),
                           .dispatch = Dispatch::by_key([](const std::uint64_t& x) { return x; }),
                           .batch = batch});
  p.run();
  EXPECT_EQ(tally.get(), expected_tally(count));
}

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  const auto [stages, workers, channel, batching] = info.param;
  return std::to_string(stages) + "stages_" + std::to_string(workers) + "workers_" +
         conveyor::testing::channel_name(channel) + (batching ? "_batched" : "_single");
}

INSTANTIATE_TEST_SUITE_P(Matrix, PipelineStress,
                         ::testing::Combine(::testing::Values(2, 3, 5),
                                            ::testing::Values(1U, 2U, 4U),
                                            ::testing::Values(ChannelKind::mailbox,
                                                              ChannelKind::queue1,
                                                              ChannelKind::queue64),
                                            ::testing::Bool()),
                         shape_name);

// Least-loaded dispatch into two parallel stages and an in-order sink, over workers, channels and
// batching: every item once, in order.
TEST(PipelineStressLeastLoaded, InOrderSinkSeesEveryItemOnceAndInOrder) {
  Watchdog watchdog(std::chrono::seconds(120));
  for (std::size_t workers : {2U, 4U}) {
    for (ChannelKind channel : {ChannelKind::mailbox, ChannelKind::queue1, ChannelKind::queue64}) {
      for (std::size_t batch : {1U, 16U}) {
        SCOPED_TRACE(::testing::Message() << workers << " workers, channel "
                                          << static_cast<int>(channel) << ", batch " << batch);
        expect_in_order_through(2, workers, channel, batch, Dispatch::least_loaded());
      }
    }
  }
}

// Flat-map and filter stages inside an ordered run, on both executors.
TEST(PipelineStressMixed, SplitsAndGapsKeepTheOrder) {
  Watchdog watchdog(std::chrono::seconds(120));
  for (bool tbb : {false, true}) {
    if (tbb && !conveyor::testing::task_suspension_checkable) continue;
    const std::uint64_t count = items_per_shape();
    Pipeline p({.executor = tbb ? Executor::tbb(2) : Executor::threads()});
    // What the sink must see, in order: for each x that is not 4 mod 5, 2x, and then 2x + 1
    // when x is 1 mod 5.
    std::uint64_t next_x = 0;
    std::deque<std::uint64_t> upcoming;
    auto next_expected = [&] {
      while (upcoming.empty()) {
        const std::uint64_t x = next_x++;
        if (x % 5 == 4) continue;
        upcoming.push_back(2 * x);
        if (x % 5 == 1) upcoming.push_back(2 * x + 1);
      }
      const std::uint64_t value = upcoming.front();
      upcoming.pop_front();
      return value;
    };
    std::uint64_t wrong = 0;
    std::uint64_t received = 0;
    p.source(count_to(count)) |
        stage(
            [](std::uint64_t x, Emit<std::uint64_t>& emit) {
              if (x % 5 == 4) return;  // a gap
              emit(2 * x);
              if (x % 5 == 1) emit(2 * x + 1);
            },
            {.mode = Mode::parallel, .workers = 3, .channel = Channel::queue(4), .batch = 8}) |
        stage([](std::uint64_t y) { return y; },
              {.mode = Mode::parallel, .workers = 2, .channel = Channel::mailbox()}) |
        sink(
            [&](std::uint64_t y) {
              ++received;
              if (y != next_expected()) ++wrong;
            },
            {.mode = Mode::serial_in_order});
    p.run();
    std::uint64_t expected_count = 0;
    for (std::uint64_t x = 0; x < count; ++x) {
      if (x % 5 != 4) expected_count += x % 5 == 1 ? 2 : 1;
    }
    EXPECT_EQ(received, expected_count);
    EXPECT_EQ(wrong, 0U) << (tbb ? "tbb" : "threads");
  }
}

}  // namespace
