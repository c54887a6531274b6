// serial_in_order restores the source's order exactly, whatever the parallel stages before it do:
// random delays, filters, several outputs per input, batching, mailboxes, keyed dispatch, and
// several in-order stages in a row.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "conveyor/framework/emit.hpp"
#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/stage.hpp"
#include "pipeline_support.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Channel;
using conveyor::Dispatch;
using conveyor::Emit;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::testing::add_to;
using conveyor::testing::append_to;
using conveyor::testing::count_to;
using conveyor::testing::Watchdog;

// Sleeps a pseudo-random few microseconds (0-40) derived from the item, so workers finish out of
// order.
void jitter(std::uint64_t item) {
  const std::uint64_t spread = conveyor::testing::fingerprint(item) % 41;
  if (spread > 30) std::this_thread::sleep_for(std::chrono::microseconds(spread));
}

std::vector<std::uint64_t> iota(std::uint64_t count) {
  std::vector<std::uint64_t> result(count);
  for (std::uint64_t i = 0; i < count; ++i)
    result[i] = i;
  return result;
}

struct OrderCase {
  std::size_t workers;
  std::size_t capacity;
  std::size_t batch;       // into the workers
  std::size_t sink_batch;  // out of them
};

class OrderingTest : public ::testing::TestWithParam<OrderCase> {};

// Move-only items, so that a batch the in-order sink keeps whole until its turn must be moved,
// never copied. With batches of 7 into the workers and 5 out of them, every output batch ends
// where a worker's run of numbers breaks.
TEST_P(OrderingTest, RestoresTheSourceOrderAfterRandomDelays) {
  Watchdog watchdog;
  const OrderCase c = GetParam();
  constexpr std::uint64_t count = 20000;
  Pipeline p;
  std::vector<std::uint64_t> out;
  p.source(count_to(count)) |
      stage(
          [](std::uint64_t x) {
            jitter(x);
            return std::make_unique<std::uint64_t>(x);
          },
          {.mode = Mode::parallel,
           .workers = c.workers,
           .channel = Channel::queue(c.capacity),
           .batch = c.batch}) |
      sink([&](std::unique_ptr<std::uint64_t> x) { out.push_back(*x); },
           {.mode = Mode::serial_in_order,
            .channel = Channel::queue(c.capacity),
            .batch = c.sink_batch});
  p.run();
  EXPECT_EQ(out, iota(count));
}

INSTANTIATE_TEST_SUITE_P(Shapes, OrderingTest,
                         ::testing::Values(OrderCase{2, 1, 1, 1}, OrderCase{4, 1, 1, 1},
                                           OrderCase{3, 16, 1, 1}, OrderCase{4, 64, 8, 8},
                                           OrderCase{2, 2, 32, 32}, OrderCase{3, 4, 7, 5}));

TEST(PipelineOrderingTest, FiltersLeaveGapsThatDoNotStallTheOrder) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::uint64_t> out;
  p.source(count_to(10000)) |
      stage(
          [](std::uint64_t x) -> std::optional<std::uint64_t> {
            jitter(x);
            if (x % 3 == 0) return std::nullopt;
            return x;
          },
          {.mode = Mode::parallel, .workers = 4}) |
      sink(append_to(out), {.mode = Mode::serial_in_order});
  p.run();
  std::vector<std::uint64_t> expected;
  for (std::uint64_t i = 0; i < 10000; ++i) {
    if (i % 3 != 0) expected.push_back(i);
  }
  EXPECT_EQ(out, expected);
}

TEST(PipelineOrderingTest, SeveralOutputsOfOneInputStayTogetherAndInOrder) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::uint64_t> out;
  // x -> x*10, x*10+1, ..., x*10+(x%4): then a second parallel split of every item in two.
  p.source(count_to(3000)) |
      stage(
          [](std::uint64_t x, Emit<std::uint64_t>& emit) {
            jitter(x);
            for (std::uint64_t i = 0; i <= x % 4; ++i)
              emit(x * 10 + i);
          },
          {.mode = Mode::parallel, .workers = 3}) |
      stage(
          [](std::uint64_t y, Emit<std::uint64_t>& emit) {
            jitter(y);
            emit(y * 2);
            emit(y * 2 + 1);
          },
          {.mode = Mode::parallel, .workers = 2, .batch = 4}) |
      sink([&](std::uint64_t z) { out.push_back(z); }, {.mode = Mode::serial_in_order});
  p.run();
  std::vector<std::uint64_t> expected;
  for (std::uint64_t x = 0; x < 3000; ++x) {
    for (std::uint64_t i = 0; i <= x % 4; ++i) {
      expected.push_back((x * 10 + i) * 2);
      expected.push_back((x * 10 + i) * 2 + 1);
    }
  }
  EXPECT_EQ(out, expected);
}

TEST(PipelineOrderingTest, AnInOrderStageRenumbersForTheNextOne) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::uint64_t> middle;
  std::vector<std::uint64_t> out;
  p.source(count_to(5000)) |
      stage(
          [](std::uint64_t x) {
            jitter(x);
            return x;
          },
          {.mode = Mode::parallel, .workers = 3}) |
      stage(
          [&](std::uint64_t x, Emit<std::uint64_t>& emit) {
            middle.push_back(x);
            if (x % 2 == 0) emit(x / 2);  // half the numbers, renumbered densely
          },
          {.mode = Mode::serial_in_order}) |
      stage(
          [](std::uint64_t x) {
            jitter(x);
            return x;
          },
          {.mode = Mode::parallel, .workers = 2, .channel = Channel::mailbox()}) |
      sink(append_to(out), {.mode = Mode::serial_in_order});
  p.run();
  EXPECT_EQ(middle, iota(5000));
  EXPECT_EQ(out, iota(2500));
}

TEST(PipelineOrderingTest, KeyedDispatchKeepsTheOrder) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::uint64_t> out;
  p.source(count_to(8000)) |
      stage(
          [](std::uint64_t x) {
            jitter(x);
            return x;
          },
          {.mode = Mode::parallel,
           .workers = 4,
           .dispatch = Dispatch::by_key([](const std::uint64_t& x) { return x % 5; }),
           .batch = 3}) |
      sink(append_to(out), {.mode = Mode::serial_in_order});
  p.run();
  EXPECT_EQ(out, iota(8000));
}

// Emits a marker from its flush hook: such items have no place in the source's order and come
// after the stream.
struct EndMarker {
  std::uint64_t process(std::uint64_t x) { return x; }
  void flush(Emit<std::uint64_t>& emit) { emit(1'000'000 + 1); }
};

class FlushOrderingTest : public ::testing::TestWithParam<std::size_t> {};

// With batching too: an item from a flush hook may travel alone in a batch, which must not pass
// for a run of numbered items.
TEST_P(FlushOrderingTest, ItemsFromFlushHooksFollowTheStream) {
  Watchdog watchdog;
  const std::size_t batch = GetParam();
  for (const std::size_t workers : {std::size_t{1}, std::size_t{2}}) {
    Pipeline p;
    std::vector<std::uint64_t> out;
    p.source(count_to(1000)) |
        stage(EndMarker{}, {.mode = Mode::parallel, .workers = workers, .batch = batch}) |
        sink(append_to(out), {.mode = Mode::serial_in_order, .batch = batch});
    p.run();
    ASSERT_EQ(out.size(), 1000U + workers);
    for (std::uint64_t i = 0; i < 1000; ++i)
      ASSERT_EQ(out[i], i);
    for (std::size_t w = 0; w < workers; ++w)
      EXPECT_EQ(out[1000 + w], 1'000'001U);
  }
}

INSTANTIATE_TEST_SUITE_P(Batches, FlushOrderingTest, ::testing::Values(1, 4, 64));

TEST(PipelineOrderingTest, OutOfOrderStagesSeeEveryItemOnce) {
  Watchdog watchdog;
  Pipeline p;
  conveyor::testing::Tally tally;
  p.source(count_to(10000)) |
      stage(
          [](std::uint64_t x) {
            jitter(x);
            return x;
          },
          {.mode = Mode::parallel, .workers = 3}) |
      sink(add_to(tally), {.mode = Mode::serial_out_of_order});
  p.run();
  EXPECT_EQ(tally, conveyor::testing::expected_tally(10000));
}

}  // namespace
