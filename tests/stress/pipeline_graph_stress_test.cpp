// Tees, routes and merges of every shape, pushed hard: topologies {after the source, after a
// parallel stage, three branches with gaps (one of a tee's fused into the stage before it, and
// the first stages of the others taking their items by key)} x
// workers {1, 2, 4} x channel {mailbox, queue 1, queue 64} x batching {off, on}. Every branch
// counts and fingerprints what it gets, in-order branches check the order, and a watchdog turns a
// hang into a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "conveyor/framework/chain.hpp"
#include "conveyor/framework/emit.hpp"
#include "conveyor/framework/merge.hpp"
#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/route.hpp"
#include "conveyor/framework/stage.hpp"
#include "conveyor/framework/tee.hpp"
#include "pipeline_support.hpp"
#include "stress.hpp"
#include "stress_shapes.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Flow;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::tee;
using conveyor::testing::add_to;
using conveyor::testing::append_to;
using conveyor::testing::ChannelKind;
using conveyor::testing::count_to;
using conveyor::testing::expected_tally;
using conveyor::testing::SharedTally;
using conveyor::testing::Tally;
using conveyor::testing::unchanged;
using conveyor::testing::Watchdog;

enum class Topology { after_source, after_parallel, three_with_gaps };

// 162 shapes share the stress budget: a four-hundredth of it each (5,000 items in optimised
// builds).
std::uint64_t items_per_shape() {
  return std::max<std::uint64_t>(5'000, conveyor::testing::stress_items() / 400);
}

using Shape = std::tuple<Topology, std::size_t, ChannelKind, bool>;

class PipelineGraphStress : public ::testing::TestWithParam<Shape> {};

// An in-order sink that checks that what it gets is exactly `expected(i)` for i = 0, 1, ...
struct InOrderCheck {
  std::uint64_t next = 0;
  std::uint64_t wrong = 0;
  Tally tally;
  template <class Expected>
  void take(std::uint64_t x, Expected&& expected) {
    if (x != expected(next)) ++wrong;
    ++next;
    tally.add(x);
  }
};

// `parallel`, taking its items by key (x % 5) in the topology with three branches: the first stage
// of a branch, whose items the tee or route then places by key.
conveyor::StageOptions keyed_with_gaps(conveyor::StageOptions parallel, Topology topology) {
  if (topology == Topology::three_with_gaps) {
    parallel.dispatch = conveyor::Dispatch::by_key([](std::uint64_t x) { return x % 5; });
  }
  return parallel;
}

TEST_P(PipelineGraphStress, TeeGivesEveryBranchEveryItemOnceAndInOrderWhereItAsks) {
  Watchdog watchdog(std::chrono::seconds(120));
  const auto [topology, workers, channel, batching] = GetParam();
  const std::uint64_t count = items_per_shape();
  const conveyor::testing::ShapeOptions shape =
      conveyor::testing::shape_options(workers, channel, batching);
  const conveyor::StageOptions& parallel = shape.parallel;
  const conveyor::StageOptions& in_order = shape.in_order;

  Pipeline p;
  Flow<std::uint64_t> flow = p.source(count_to(count));
  if (topology != Topology::after_source) flow = flow | stage(unchanged, parallel);

  InOrderCheck ordered;
  InOrderCheck evens;
  SharedTally unordered;
  // With three branches, the first stages of the branches with channels take items by key.
  const conveyor::StageOptions head = keyed_with_gaps(parallel, topology);
  auto check_all = [&](std::uint64_t x) { ordered.take(x, [](std::uint64_t i) { return i; }); };
  auto all_in_order =
      conveyor::chain<std::uint64_t>() | stage(unchanged, head) | sink(check_all, in_order);
  // With three branches, the unordered one runs on the workers before the tee (fused).
  conveyor::StageOptions unordered_options = parallel;
  if (topology == Topology::three_with_gaps) unordered_options.fuse = conveyor::Fuse::always;
  auto all_unordered =
      conveyor::chain<std::uint64_t>() | sink(add_to(unordered), unordered_options);
  if (topology == Topology::three_with_gaps) {
    // The first branch drops the odd numbers (gaps in its order) before its in-order sink.
    auto only_evens =
        conveyor::chain<std::uint64_t>() |
        stage(
            [](std::uint64_t x) -> std::optional<std::uint64_t> {
              if (x % 2 != 0) return std::nullopt;
              return x;
            },
            head) |
        sink([&](std::uint64_t x) { evens.take(x, [](std::uint64_t i) { return 2 * i; }); },
             in_order);
    flow | tee(only_evens, all_in_order, all_unordered);
  } else {
    flow | tee(all_in_order, all_unordered);
  }
  p.run();

  EXPECT_EQ(ordered.wrong, 0U);
  EXPECT_EQ(ordered.tally, expected_tally(count));
  EXPECT_EQ(unordered.get(), expected_tally(count));
  if (topology == Topology::three_with_gaps) {
    Tally expected;
    for (std::uint64_t x = 0; x < count; x += 2)
      expected.add(x);
    EXPECT_EQ(evens.wrong, 0U);
    EXPECT_EQ(evens.tally, expected);
  }
}

// The same shapes with a route into three branches: multiples of 3 to an in-order branch with a
// parallel stage, 1 mod 3 to a parallel sink, the rest to an in-order sink. With gaps, a stage
// before the route emits nothing for some inputs and two items for others.
TEST_P(PipelineGraphStress, RouteGivesEachItemToOneBranchInOrderWhereItAsks) {
  Watchdog watchdog(std::chrono::seconds(120));
  const auto [topology, workers, channel, batching] = GetParam();
  const std::uint64_t count = items_per_shape();
  const conveyor::testing::ShapeOptions shape =
      conveyor::testing::shape_options(workers, channel, batching);
  const conveyor::StageOptions& parallel = shape.parallel;
  const conveyor::StageOptions& in_order = shape.in_order;

  // What reaches the route, in order.
  std::vector<std::uint64_t> stream;
  for (std::uint64_t x = 0; x < count; ++x) {
    if (topology != Topology::three_with_gaps) {
      stream.push_back(x);
      continue;
    }
    if (x % 7 == 3) continue;
    stream.push_back(2 * x);
    if (x % 5 == 1) stream.push_back(2 * x + 1);
  }
  std::vector<std::uint64_t> want_threes;
  std::vector<std::uint64_t> want_rest;
  Tally want_ones;
  for (const std::uint64_t y : stream) {
    if (y % 3 == 0) {
      want_threes.push_back(y);
    } else if (y % 3 == 1) {
      want_ones.add(y);
    } else {
      want_rest.push_back(y);
    }
  }

  Pipeline p;
  Flow<std::uint64_t> flow = p.source(count_to(count));
  if (topology == Topology::after_parallel) flow = flow | stage(unchanged, parallel);
  if (topology == Topology::three_with_gaps) {
    flow = flow | stage(
                      [](std::uint64_t x, conveyor::Emit<std::uint64_t>& emit) {
                        if (x % 7 == 3) return;
                        emit(2 * x);
                        if (x % 5 == 1) emit(2 * x + 1);
                      },
                      parallel);
  }
  InOrderCheck threes;
  InOrderCheck rest;
  SharedTally ones;
  const conveyor::StageOptions head = keyed_with_gaps(parallel, topology);
  flow | conveyor::route(
             conveyor::when([](std::uint64_t y) { return y % 3 == 0; },
                            conveyor::chain<std::uint64_t>() | stage(unchanged, head) |
                                sink(
                                    [&](std::uint64_t y) {
                                      threes.take(y, [&](std::uint64_t i) {
                                        return i < want_threes.size() ? want_threes[i] : ~y;
                                      });
                                    },
                                    in_order)),
             conveyor::when([](std::uint64_t y) { return y % 3 == 1; },
                            conveyor::chain<std::uint64_t>() |
                                sink([&](std::uint64_t y) { ones.add(y); }, head)),
             conveyor::otherwise(conveyor::chain<std::uint64_t>() |
                                 sink(
                                     [&](std::uint64_t y) {
                                       rest.take(y, [&](std::uint64_t i) {
                                         return i < want_rest.size() ? want_rest[i] : ~y;
                                       });
                                     },
                                     in_order)));
  p.run();

  EXPECT_EQ(threes.wrong, 0U);
  EXPECT_EQ(threes.next, want_threes.size());
  EXPECT_EQ(rest.wrong, 0U);
  EXPECT_EQ(rest.next, want_rest.size());
  EXPECT_EQ(ones.get(), want_ones);
}

// The same shapes with a merge: two sources (after_source), a source through a parallel stage and
// a source into a serial_in_order stage whose order the in-order sink must keep (after_parallel),
// or three inputs, one of them filtered (three_with_gaps).
TEST_P(PipelineGraphStress, MergeTakesEveryInputsItemsOnce) {
  Watchdog watchdog(std::chrono::seconds(120));
  const auto [topology, workers, channel, batching] = GetParam();
  const std::uint64_t count = items_per_shape();
  const conveyor::testing::ShapeOptions shape =
      conveyor::testing::shape_options(workers, channel, batching);
  const conveyor::StageOptions& parallel = shape.parallel;
  const conveyor::StageOptions& in_order = shape.in_order;
  auto from = [](std::uint64_t first, std::uint64_t n) {
    return [next = first, end = first + n]() mutable -> std::optional<std::uint64_t> {
      if (next == end) return std::nullopt;
      return next++;
    };
  };

  Pipeline p;
  SharedTally tally;
  Tally expected = expected_tally(count);
  std::vector<std::uint64_t> at_merge;
  std::vector<std::uint64_t> at_end;
  if (topology == Topology::after_source) {
    conveyor::merge(p.source(from(0, count / 2)), p.source(from(count / 2, count - count / 2))) |
        sink(add_to(tally), parallel);
  } else if (topology == Topology::after_parallel) {
    conveyor::merge(p.source(from(0, count / 2)) | stage(unchanged, parallel),
                    p.source(from(count / 2, count - count / 2))) |
        stage(
            [&](std::uint64_t x) {
              at_merge.push_back(x);
              return x;
            },
            in_order) |
        stage(unchanged, parallel) | sink(append_to(at_end), in_order);
  } else {
    // The third input drops its odd numbers.
    expected = Tally{};
    for (std::uint64_t x = 0; x < 2 * count; ++x) {
      if (x < count || x % 2 == 0) expected.add(x);
    }
    conveyor::merge(
        p.source(from(0, count / 2)),
        p.source(from(count / 2, count - count / 2)) | stage(unchanged, parallel),
        p.source(from(count, count)) | stage(
                                           [](std::uint64_t x) -> std::optional<std::uint64_t> {
                                             if (x % 2 != 0) return std::nullopt;
                                             return x;
                                           },
                                           parallel)) |
        stage(unchanged, parallel) | sink(add_to(tally), parallel);
  }
  p.run();

  if (topology == Topology::after_parallel) {
    EXPECT_EQ(at_end, at_merge);
    Tally got;
    for (const std::uint64_t x : at_end)
      got.add(x);
    EXPECT_EQ(got, expected);
  } else {
    EXPECT_EQ(tally.get(), expected);
  }
}

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  const auto [topology, workers, channel, batching] = info.param;
  const char* topologies[] = {"after_source", "after_parallel", "three_with_gaps"};
  return std::string(topologies[static_cast<int>(topology)]) + "_" + std::to_string(workers) +
         "workers_" + conveyor::testing::channel_name(channel) +
         (batching ? "_batched" : "_single");
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, PipelineGraphStress,
    ::testing::Combine(::testing::Values(Topology::after_source, Topology::after_parallel,
                                         Topology::three_with_gaps),
                       ::testing::Values(1U, 2U, 4U),
                       ::testing::Values(ChannelKind::mailbox, ChannelKind::queue1,
                                         ChannelKind::queue64),
                       ::testing::Bool()),
    shape_name);

}  // namespace
