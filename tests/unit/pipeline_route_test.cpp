// Unit tests for route (route.hpp): each item goes to the first branch whose predicate it
// matches, or else to the default branch, exactly once; each branch that restores order sees its
// items in the source's order, also after parallel stages and with batching; every branch ends and
// flushes once; a throw from a predicate or a branch fails the pipeline; request_stop drains every
// branch; items need not be copyable.
#include "conveyor/framework/route.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/framework.hpp"
#include "conveyor/framework/testing.hpp"
#include "pipeline_support.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Chain;
using conveyor::Mode;
using conveyor::otherwise;
using conveyor::Pipeline;
using conveyor::route;
using conveyor::sink;
using conveyor::stage;
using conveyor::when;
using conveyor::testing::count_to;
using conveyor::testing::SharedTally;
using conveyor::testing::Tally;
using conveyor::testing::Watchdog;

auto collect(std::vector<std::uint64_t>& out) {
  return conveyor::chain<std::uint64_t>() |
         sink([&out](std::uint64_t x) { out.push_back(x); }, {.mode = Mode::serial_in_order});
}

bool divisible_by_3(std::uint64_t x) {
  return x % 3 == 0;
}

TEST(PipelineRouteTest, EachItemGoesToTheFirstBranchItMatchesOrToTheDefault) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::uint64_t> threes;
  std::vector<std::uint64_t> evens;
  std::vector<std::uint64_t> rest;
  p.source(count_to(1000)) | route(when(divisible_by_3, collect(threes)),
                                   when([](std::uint64_t x) { return x % 2 == 0; }, collect(evens)),
                                   otherwise(collect(rest)));
  p.run();
  std::vector<std::uint64_t> want_threes;
  std::vector<std::uint64_t> want_evens;
  std::vector<std::uint64_t> want_rest;
  for (std::uint64_t x = 0; x < 1000; ++x) {
    (x % 3 == 0 ? want_threes : x % 2 == 0 ? want_evens : want_rest).push_back(x);
  }
  EXPECT_EQ(threes, want_threes);
  EXPECT_EQ(evens, want_evens);
  EXPECT_EQ(rest, want_rest);
}

// Parallel stages with random delays before and in the branches, batching on and off, and an
// in-order sink in each branch: each sees exactly its items, in the source's order.
TEST(PipelineRouteTest, EachBranchRestoresTheSourceOrderAfterParallelStages) {
  Watchdog watchdog;
  constexpr std::uint64_t count = 20'000;
  for (const std::size_t batch : {std::size_t{1}, std::size_t{16}}) {
    Pipeline p;
    std::vector<std::uint64_t> small;
    std::vector<std::uint64_t> large;
    SharedTally unordered;
    auto jitter = [](std::uint64_t x) {
      thread_local std::minstd_rand random(std::random_device{}());
      if (random() % 64 == 0)
        std::this_thread::sleep_for(std::chrono::microseconds(random() % 200));
      return x;
    };
    p.source(count_to(count)) |
        stage(jitter, {.mode = Mode::parallel, .workers = 3, .batch = batch}) |
        route(when([](std::uint64_t x) { return x % 10 < 3; },
                   conveyor::chain<std::uint64_t>() |
                       stage(jitter, {.mode = Mode::parallel, .workers = 2, .batch = batch}) |
                       collect(small)),
              when([](std::uint64_t x) { return x % 10 < 6; },
                   conveyor::chain<std::uint64_t>() |
                       sink([&](std::uint64_t x) { unordered.add(x); },
                            {.mode = Mode::parallel, .workers = 2, .batch = batch})),
              otherwise(conveyor::chain<std::uint64_t>() |
                        stage(jitter, {.mode = Mode::parallel, .workers = 3}) | collect(large)));
    p.run();
    std::vector<std::uint64_t> want_small;
    std::vector<std::uint64_t> want_large;
    Tally want_middle;
    for (std::uint64_t x = 0; x < count; ++x) {
      if (x % 10 < 3) {
        want_small.push_back(x);
      } else if (x % 10 < 6) {
        want_middle.add(x);
      } else {
        want_large.push_back(x);
      }
    }
    EXPECT_EQ(small, want_small) << "batch " << batch;
    EXPECT_EQ(large, want_large) << "batch " << batch;
    EXPECT_EQ(unordered.get(), want_middle) << "batch " << batch;
  }
}

// A stage before the route emits several items for some inputs and none for others: their parts
// and gaps reach the in-order branches in order.
TEST(PipelineRouteTest, SplitsAndGapsBeforeTheRouteKeepEachBranchInOrder) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::uint64_t> evens;
  std::vector<std::uint64_t> odds;
  p.source(count_to(5000)) |
      stage(
          [](std::uint64_t x, conveyor::Emit<std::uint64_t>& emit) {
            if (x % 7 == 3) return;  // nothing
            emit(2 * x);
            if (x % 5 == 1) emit(2 * x + 1);
          },
          {.mode = Mode::parallel, .workers = 3, .batch = 8}) |
      route(when([](std::uint64_t y) { return y % 2 == 0; }, collect(evens)),
            otherwise(collect(odds)));
  p.run();
  std::vector<std::uint64_t> want_evens;
  std::vector<std::uint64_t> want_odds;
  for (std::uint64_t x = 0; x < 5000; ++x) {
    if (x % 7 == 3) continue;
    want_evens.push_back(2 * x);
    if (x % 5 == 1) want_odds.push_back(2 * x + 1);
  }
  EXPECT_EQ(evens, want_evens);
  EXPECT_EQ(odds, want_odds);
}

TEST(PipelineRouteTest, ItemsNeedNotBeCopyable) {
  Watchdog watchdog;
  Pipeline p;
  std::uint64_t big = 0;
  std::uint64_t small = 0;
  std::uint64_t next = 0;
  p.source([&]() -> std::optional<std::unique_ptr<std::uint64_t>> {
    if (next == 100) return std::nullopt;
    return std::make_unique<std::uint64_t>(next++);
  }) | route(when([](const std::unique_ptr<std::uint64_t>& x) { return *x >= 50; },
                  conveyor::chain<std::unique_ptr<std::uint64_t>>() |
                      sink([&](std::unique_ptr<std::uint64_t> x) { big += *x; })),
             otherwise(conveyor::chain<std::unique_ptr<std::uint64_t>>() |
                       sink([&](std::unique_ptr<std::uint64_t> x) { small += *x; },
                            {.mode = Mode::serial_in_order})));
  p.run();
  EXPECT_EQ(big, (50U + 99U) * 50U / 2);
  EXPECT_EQ(small, 49U * 50U / 2);
}

struct FlushCounter {
  std::atomic<int>* flushes;
  void process(std::uint64_t) {}
  void flush() { flushes->fetch_add(1, std::memory_order_relaxed); }
};

TEST(PipelineRouteTest, EveryBranchEndsAndFlushesOnceEvenIfItGetsNothing) {
  Watchdog watchdog;
  Pipeline p;
  std::atomic<int> flushes{0};
  p.source(count_to(100)) |
      route(when([](std::uint64_t x) { return x > 1000; },
                 conveyor::chain<std::uint64_t>() |
                     sink(FlushCounter{&flushes}, {.mode = Mode::serial_in_order})),
            otherwise(conveyor::chain<std::uint64_t>() |
                      sink(FlushCounter{&flushes}, {.mode = Mode::parallel, .workers = 2})));
  p.run();
  EXPECT_EQ(flushes.load(), 3);
}

TEST(PipelineRouteTest, AThrowFromAPredicateOrABranchFailsThePipeline) {
  Watchdog watchdog;
  for (int position = 0; position < 3; ++position) {
    Pipeline p;
    p.source(count_to(100'000)) |
        stage([](std::uint64_t x) { return x; },
              {.mode = Mode::parallel, .workers = 2, .batch = 4}) |
        route(when(
                  [position](std::uint64_t x) {
                    if (position == 0 && x == 500) throw std::runtime_error("predicate");
                    return x % 2 == 0;
                  },
                  conveyor::chain<std::uint64_t>() | sink(
                                                         [position](std::uint64_t x) {
                                                           if (position == 1 && x == 600) {
                                                             throw std::runtime_error("sink");
                                                           }
                                                         },
                                                         {.mode = Mode::serial_in_order})),
              otherwise(conveyor::chain<std::uint64_t>() |
                        stage(
                            [position](std::uint64_t x) {
                              if (position == 2 && x == 701) throw std::runtime_error("stage");
                              return x;
                            },
                            {.mode = Mode::parallel, .workers = 2}) |
                        sink([](std::uint64_t) {})));
    EXPECT_THROW(p.run(), std::runtime_error) << "position " << position;
    EXPECT_EQ(p.state(), conveyor::PipelineState::failed);
  }
}

TEST(PipelineRouteTest, RequestStopDrainsEveryBranch) {
  Watchdog watchdog;
  Pipeline p;
  std::latch go(1);
  std::atomic<std::uint64_t> emitted{0};
  std::atomic<std::uint64_t> received{0};
  auto blocked = [&](std::uint64_t) {
    go.wait();
    received.fetch_add(1, std::memory_order_relaxed);
  };
  p.source([&, next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
    emitted.fetch_add(1, std::memory_order_relaxed);
    return next++;
  }) |
      route(when([](std::uint64_t x) { return x % 2 == 0; },
                 conveyor::chain<std::uint64_t>() | sink(blocked, {.mode = Mode::serial_in_order})),
            otherwise(conveyor::chain<std::uint64_t>() | sink(blocked)));
  p.start();
  while (emitted.load(std::memory_order_relaxed) < 100)
    std::this_thread::yield();
  p.request_stop();
  go.count_down();
  p.wait();
  EXPECT_EQ(p.state(), conveyor::PipelineState::finished);
  // The source's last call returned an item too, delivered after the stop.
  EXPECT_EQ(received.load(), emitted.load());
}

TEST(PipelineRouteTest, AChainCanEndInARouteAndRunOnItsOwn) {
  Watchdog watchdog;
  std::atomic<std::uint64_t> threes{0};
  std::atomic<std::uint64_t> others{0};
  const Chain<std::uint64_t, void> split =
      conveyor::chain<std::uint64_t>() |
      route(when(divisible_by_3, conveyor::chain<std::uint64_t>() |
                                     sink([&](std::uint64_t) { threes.fetch_add(1); })),
            otherwise(conveyor::chain<std::uint64_t>() |
                      sink([&](std::uint64_t) { others.fetch_add(1); })));
  std::vector<std::uint64_t> inputs(300);
  for (std::uint64_t i = 0; i < inputs.size(); ++i)
    inputs[i] = i;
  conveyor::testing::run(split, inputs);
  EXPECT_EQ(threes.load(), 100U);
  EXPECT_EQ(others.load(), 200U);
}

TEST(PipelineRouteTest, EachBranchStageHasItsOwnStatistics) {
  Watchdog watchdog;
  Pipeline p;
  p.source(count_to(300)) |
      route(when(divisible_by_3,
                 conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {}, {.name = "threes"})),
            otherwise(conveyor::chain<std::uint64_t>() |
                      sink([](std::uint64_t) {}, {.name = "others"})));
  p.run();
  const conveyor::PipelineStats stats = p.stats();
  EXPECT_EQ(stats.stage("threes")->items_in, 100U);
  EXPECT_EQ(stats.stage("others")->items_in, 200U);
}

TEST(PipelineRouteTest, AKeyedDispatchAtTheHeadOfABranchIsRejected) {
  Pipeline p;
  p.source(count_to(10)) |
      route(when(divisible_by_3,
                 conveyor::chain<std::uint64_t>() |
                     sink([](std::uint64_t) {}, {.mode = Mode::parallel, .workers = 2},
                          conveyor::Dispatch::by_key([](std::uint64_t x) { return x; }))),
            otherwise(conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {})));
  EXPECT_THROW(p.start(), std::invalid_argument);
}

TEST(PipelineRouteTest, NothingElseContinuesFromARoute) {
  Pipeline p;
  auto numbers = p.source(count_to(10));
  numbers |
      route(when(divisible_by_3, conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {})),
            otherwise(conveyor::chain<std::uint64_t>() | sink([](std::uint64_t) {})));
  numbers | sink([](std::uint64_t) {});
  EXPECT_THROW(p.start(), std::logic_error);
}

}  // namespace
