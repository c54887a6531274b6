// Unit tests for graphs: tee (tee.hpp), route (route.hpp) and merge (merge.hpp).
// - tee: every branch gets every item once, in the source's order where a branch restores it;
//   every branch ends and flushes once; a throw in any branch fails the whole pipeline;
//   request_stop and abort reach every branch; the stages before the tee wait for the slowest
//   branch; each branch's stages have their own statistics.
// - route: each item goes to the first branch whose predicate it matches, or else to the default
//   branch, exactly once; each branch that restores order sees its items in the source's order,
//   also after parallel stages and with batching; items need not be copyable.
// - merge: a stage at a merge takes every input's items exactly once and ends once every input
//   has ended; a serial_in_order stage there numbers the merged stream for the in-order stages
//   after it; a throw in any input cancels the others; request_stop ends every source.
// Misuse of each is rejected.
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
#include "task_suspension.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Chain;
using conveyor::merge;
using conveyor::Mode;
using conveyor::otherwise;
using conveyor::Pipeline;
using conveyor::route;
using conveyor::sink;
using conveyor::stage;
using conveyor::tee;
using conveyor::when;
using conveyor::testing::add_to;
using conveyor::testing::append_to;
using conveyor::testing::count_to;
using conveyor::testing::discard;
using conveyor::testing::expected_tally;
using conveyor::testing::SharedTally;
using conveyor::testing::Tally;
using conveyor::testing::unchanged;
using conveyor::testing::Watchdog;

// --- tee ---

// A sink that keeps what it gets, in arrival order.
auto collect(std::vector<std::uint64_t>& out) {
  return conveyor::chain<std::uint64_t>() |
         sink(append_to(out), {.name = "collect", .mode = Mode::serial_in_order});
}

TEST(PipelineTeeTest, EveryBranchGetsEveryItemOnce) {
  Watchdog watchdog;
  Pipeline p;
  SharedTally first;
  SharedTally second;
  SharedTally third;
  p.source(count_to(10'000)) |
      tee(conveyor::chain<std::uint64_t>() |
              sink(add_to(first), {.name = "first", .mode = Mode::parallel, .workers = 2}),
          conveyor::chain<std::uint64_t>() | sink(add_to(second)),
          conveyor::chain<std::uint64_t>() |
              sink(add_to(third), {.name = "third", .mode = Mode::parallel, .workers = 3}));
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

auto by_residue(std::uint64_t modulus) {
  return conveyor::Dispatch::by_key([modulus](std::uint64_t x) { return x % modulus; });
}

// The dispatch of a branch's first stage: round-robin, or keyed by x % 3.
conveyor::Dispatch branch_head(bool keyed) {
  return keyed ? conveyor::Dispatch(by_residue(3)) : conveyor::Dispatch::round_robin();
}

// Passes items on; throws at item 500 when `position` is `here`.
auto pass_or_throw_at(int position, int here) {
  return [position, here](std::uint64_t x) {
    if (position == here && x == 500) throw std::runtime_error("boom");
    return x;
  };
}

// Throws from the trunk, from each branch's stage and from each branch's sink: run() rethrows, and
// no worker is left waiting; also where the second branch's first stage has a keyed dispatch.
TEST(PipelineTeeTest, AThrowFromAnyPositionFailsThePipeline) {
  Watchdog watchdog;
  for (const bool keyed : {false, true}) {
    for (int position = 0; position < 5; ++position) {
      Pipeline p;
      auto maybe_throw = [position](int here) { return pass_or_throw_at(position, here); };
      p.source(count_to(100'000)) | stage(maybe_throw(0), {.mode = Mode::parallel, .workers = 2}) |
          tee(conveyor::chain<std::uint64_t>() | stage(maybe_throw(1)) |
                  sink([f = maybe_throw(2)](std::uint64_t x) { (void)f(x); },
                       {.mode = Mode::serial_in_order}),
              conveyor::chain<std::uint64_t>() |
                  stage(maybe_throw(3),
                        {.mode = Mode::parallel, .workers = 2, .dispatch = branch_head(keyed)}) |
                  sink([f = maybe_throw(4)](std::uint64_t x) { (void)f(x); }));
      EXPECT_THROW(p.run(), std::runtime_error) << "position " << position << ", keyed " << keyed;
      EXPECT_EQ(p.state(), conveyor::PipelineState::failed);
    }
  }
}

// Both branches block in their sinks; request_stop ends the source's stream, and once the sinks
// go on, each branch gets every item the source emitted. The second branch's sink takes its items
// round-robin, or by key.
TEST(PipelineTeeTest, RequestStopDrainsEveryBranch) {
  Watchdog watchdog;
  for (const bool keyed : {false, true}) {
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
                 sink(blocked(second),
                      {.mode = Mode::parallel, .workers = 2, .dispatch = branch_head(keyed)}));
    p.start();
    while (emitted.load(std::memory_order_relaxed) < 100)
      std::this_thread::yield();
    p.request_stop();
    go.count_down();
    p.wait();
    EXPECT_EQ(p.state(), conveyor::PipelineState::finished) << "keyed " << keyed;
    EXPECT_GE(first.load(), 100U) << "keyed " << keyed;
    EXPECT_EQ(first.load(), second.load()) << "keyed " << keyed;
  }
}

TEST(PipelineTeeTest, AbortReturnsWithEveryBranchBlocked) {
  Watchdog watchdog;
  for (const bool keyed : {false, true}) {
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
             conveyor::chain<std::uint64_t>() |
                 stage(unchanged,
                       {.mode = Mode::parallel, .workers = 2, .dispatch = branch_head(keyed)}) |
                 sink(blocked));
    p.start();
    while (emitted.load(std::memory_order_relaxed) < 10)
      std::this_thread::yield();
    // The source fills the channels and then waits for room; the sinks wait for `release`.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    p.abort();
    release.store(true, std::memory_order_relaxed);
    p.wait();
    EXPECT_EQ(p.state(), conveyor::PipelineState::finished) << "keyed " << keyed;
  }
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
  }) | tee(conveyor::chain<std::uint64_t>() | sink(discard),
           conveyor::chain<std::uint64_t>() |
               stage(
                   unchanged,
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

// A sink's code for a branch of two workers, one of which gets stuck: the first call, on whichever
// worker, stays there until the other branch has `target` items (20 s at most, then it notes the
// time-out); every call adds its item to `tally`. Copied per worker, so its state is shared.
struct StuckOnce {
  std::atomic<bool>* stuck;
  const std::atomic<std::uint64_t>* other;
  std::uint64_t target;
  std::atomic<bool>* timed_out;
  SharedTally* tally;

  void operator()(std::uint64_t x) const {
    if (!stuck->exchange(true, std::memory_order_relaxed)) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (other->load(std::memory_order_relaxed) < target) {
        if (std::chrono::steady_clock::now() > deadline) {
          timed_out->store(true, std::memory_order_relaxed);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    tally->add(x);
  }
};

// The state of a test with a StuckOnce branch: what the other branch got, and what it saw.
struct StuckBranch {
  std::atomic<std::uint64_t> other{0};
  std::atomic<bool> stuck{false};
  std::atomic<bool> timed_out{false};
  SharedTally tally;

  // The stuck branch's code, stuck until the other branch has `target` items.
  StuckOnce code(std::uint64_t target) {
    return StuckOnce{&stuck, &other, target, &timed_out, &tally};
  }
  auto count_other() {
    return [this](std::uint64_t) { other.fetch_add(1, std::memory_order_relaxed); };
  }
};

// While the stuck worker's one-slot lane is full, the tee sends that branch's items to the other
// worker, and the other branch goes on.
TEST(PipelineTeeTest, AStuckWorkerOfABranchDoesNotHoldTheTeeWhileItsOtherLaneHasRoom) {
  Watchdog watchdog;
  Pipeline p;
  constexpr std::uint64_t items = 1'000;
  StuckBranch branch;
  p.source(count_to(items)) |
      tee(conveyor::chain<std::uint64_t>() | sink(branch.count_other()),
          conveyor::chain<std::uint64_t>() |
              sink(branch.code(items),
                   {.mode = Mode::parallel, .workers = 2, .channel = conveyor::Channel::queue(1)}));
  p.run();
  EXPECT_FALSE(branch.timed_out.load(std::memory_order_relaxed));
  EXPECT_EQ(branch.other.load(std::memory_order_relaxed), items);
  EXPECT_EQ(branch.tally.get(), expected_tally(items));
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
              sink(discard, {.name = "write"}),
          conveyor::chain<std::uint64_t>() | sink(discard, {.name = "count"}));
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
  p.source(count_to(5000)) | stage(unchanged, {.mode = Mode::parallel, .workers = 2}) |
      tee(collect(first), conveyor::chain<std::uint64_t>() |
                              sink(add_to(second), {.mode = Mode::parallel, .workers = 2}));
  p.run();
  ASSERT_EQ(first.size(), 5000U);
  for (std::uint64_t i = 0; i < first.size(); ++i)
    ASSERT_EQ(first[i], i);
  EXPECT_EQ(second.get(), expected_tally(5000));
}

// --- a tee branch fused into the stage before it ---

// Whether the stage before the tee has run on this thread.
thread_local bool work_ran_here = false;

// start() throws std::invalid_argument whose message contains `expected`.
void expect_rejected(Pipeline& p, const std::string& expected) {
  try {
    p.start();
    ADD_FAILURE() << "start() accepted the pipeline";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
  }
}

// A branch with Fuse::always gets a copy of every item on the workers that emitted it; the other
// branch takes its items through the tee's channel and restores their order, batched or not
// (batched, the stage before the tee sends whole runs, and the fused branch gets a copy of each
// item of a run). A channel after the fused branch carries its output on.
TEST(PipelineTeeTest, AFusedBranchRunsOnTheWorkersBeforeTheTee) {
  Watchdog watchdog;
  constexpr std::uint64_t n = 20'000;
  for (const std::size_t batch : {std::size_t{1}, std::size_t{16}}) {
    Pipeline p;
    SharedTally fused;
    std::atomic<std::uint64_t> elsewhere{0};
    std::vector<std::uint64_t> ordered;
    p.source(count_to(n)) |
        stage(
            [](std::uint64_t x) {
              work_ran_here = true;
              return x;
            },
            {.name = "work", .mode = Mode::parallel, .workers = 2, .batch = batch}) |
        tee(conveyor::chain<std::uint64_t>() |
                stage(
                    [&](std::uint64_t x) {
                      if (!work_ran_here) elsewhere.fetch_add(1, std::memory_order_relaxed);
                      return x;
                    },
                    {.name = "fused", .mode = Mode::parallel, .fuse = conveyor::Fuse::always}) |
                sink(add_to(fused), {.name = "after", .mode = Mode::parallel, .workers = 2}),
            conveyor::chain<std::uint64_t>() |
                sink(append_to(ordered),
                     {.name = "ordered", .mode = Mode::serial_in_order, .batch = batch}));
    p.run();
    EXPECT_EQ(fused.get(), expected_tally(n)) << "batch " << batch;
    EXPECT_EQ(elsewhere.load(), 0U) << "batch " << batch;
    ASSERT_EQ(ordered.size(), n) << "batch " << batch;
    for (std::uint64_t i = 0; i < n; ++i)
      ASSERT_EQ(ordered[i], i) << "batch " << batch;
    const conveyor::PipelineStats stats = p.stats();
    for (const conveyor::StageStats& stage : stats.stages) {
      if (stage.name == "fused") {
        EXPECT_EQ(stage.fused_into, "work");
        EXPECT_EQ(stage.items_in, n);
      }
      if (stage.name == "work") {
        EXPECT_EQ(stage.items_out, n);  // once, for both branches
      }
    }
  }
}

TEST(PipelineTeeTest, AFusedBranchFlushesOncePerWorkerOfItsGroup) {
  Watchdog watchdog;
  Pipeline p;
  std::atomic<int> flushes_fused{0};
  std::atomic<int> flushes_other{0};
  std::atomic<std::uint64_t> items_fused{0};
  std::atomic<std::uint64_t> items_other{0};
  p.source(count_to(1000)) | stage(unchanged, {.mode = Mode::parallel, .workers = 3}) |
      tee(conveyor::chain<std::uint64_t>() |
              sink(FlushCounter{&flushes_fused, &items_fused},
                   {.mode = Mode::parallel, .fuse = conveyor::Fuse::always}),
          conveyor::chain<std::uint64_t>() | sink(FlushCounter{&flushes_other, &items_other}));
  p.run();
  EXPECT_EQ(flushes_fused.load(), 3);
  EXPECT_EQ(flushes_other.load(), 1);
  EXPECT_EQ(items_fused.load(), 1000U);
  EXPECT_EQ(items_other.load(), 1000U);
}

// A throw in the fused branch, or in the other branch while the fused one goes on, fails the
// pipeline, and the workers blocked behind the other branch's full channel wake.
TEST(PipelineTeeTest, AThrowInOrBesideAFusedBranchFailsThePipeline) {
  Watchdog watchdog;
  for (int position = 0; position < 3; ++position) {
    Pipeline p;
    auto maybe_throw = [position](int here) { return pass_or_throw_at(position, here); };
    p.source(count_to(100'000)) | stage(unchanged, {.mode = Mode::parallel, .workers = 2}) |
        tee(conveyor::chain<std::uint64_t>() |
                stage(maybe_throw(0), {.mode = Mode::parallel, .fuse = conveyor::Fuse::always}) |
                sink([f = maybe_throw(1)](std::uint64_t x) { (void)f(x); },
                     {.mode = Mode::parallel, .fuse = conveyor::Fuse::always}),
            conveyor::chain<std::uint64_t>() |
                sink([f = maybe_throw(2)](std::uint64_t x) { (void)f(x); },
                     {.mode = Mode::serial_in_order, .channel = conveyor::Channel::queue(4)}));
    EXPECT_THROW(p.run(), std::runtime_error) << "position " << position;
    EXPECT_EQ(p.state(), conveyor::PipelineState::failed);
  }
}

// An in-order stage before the tee: its worker reads its input lanes and its window gate, and
// writes the tee's channel and, from the fused branch, that branch's own channel.
TEST(PipelineTeeTest, AFusedBranchAfterAnInOrderStageWithChannelsOnBothSides) {
  Watchdog watchdog;
  constexpr std::uint64_t n = 5'000;
  Pipeline p;
  SharedTally fused;
  std::vector<std::uint64_t> ordered;
  p.source(count_to(n)) | stage(unchanged, {.mode = Mode::parallel, .workers = 2}) |
      stage(unchanged, {.mode = Mode::serial_in_order}) |
      tee(conveyor::chain<std::uint64_t>() | stage(unchanged, {.fuse = conveyor::Fuse::always}) |
              sink(add_to(fused), {.mode = Mode::parallel, .workers = 2}),
          collect(ordered));
  p.run();
  EXPECT_EQ(fused.get(), expected_tally(n));
  ASSERT_EQ(ordered.size(), n);
  for (std::uint64_t i = 0; i < n; ++i)
    ASSERT_EQ(ordered[i], i);
}

TEST(PipelineTeeTest, OneBranchAtMostIsFused) {
  Pipeline p;
  p.source(count_to(10)) | stage(unchanged) |
      tee(conveyor::chain<std::uint64_t>() | sink(discard, {.fuse = conveyor::Fuse::always}),
          conveyor::chain<std::uint64_t>() |
              sink(discard, {.name = "second", .fuse = conveyor::Fuse::always}));
  expect_rejected(p, "stage 'second': cannot be fused into 'stage-1': another branch of the tee");
}

TEST(PipelineTeeTest, OneFusedBranchPerGroupOfFusedStages) {
  Pipeline p;
  auto inner = conveyor::chain<std::uint64_t>() |
               stage(unchanged, {.name = "inner", .fuse = conveyor::Fuse::always}) |
               tee(conveyor::chain<std::uint64_t>() |
                       sink(discard, {.name = "nested", .fuse = conveyor::Fuse::always}),
                   conveyor::chain<std::uint64_t>() | sink(discard));
  p.source(count_to(10)) | stage(unchanged) |
      tee(std::move(inner), conveyor::chain<std::uint64_t>() | sink(discard));
  expect_rejected(p,
                  "stage 'nested': cannot be fused into 'inner': a branch of an earlier tee is "
                  "fused into the same workers");
}

TEST(PipelineTeeTest, AFusedBranchCannotLeadToAnInOrderStage) {
  Pipeline p;
  p.source(count_to(10)) | stage(unchanged, {.mode = Mode::parallel, .workers = 2}) |
      tee(conveyor::chain<std::uint64_t>() |
              stage(unchanged,
                    {.name = "fused", .mode = Mode::parallel, .fuse = conveyor::Fuse::always}) |
              sink(discard, {.mode = Mode::serial_in_order}),
          conveyor::chain<std::uint64_t>() | sink(discard));
  expect_rejected(p,
                  "stage 'fused': a tee branch fused into 'stage-1' cannot lead to a "
                  "serial_in_order stage");
}

TEST(PipelineTeeTest, ASerialBranchCannotBeFusedAfterSeveralWorkers) {
  Pipeline p;
  p.source(count_to(10)) | stage(unchanged, {.mode = Mode::parallel, .workers = 2}) |
      tee(conveyor::chain<std::uint64_t>() |
              sink(discard, {.name = "serial", .fuse = conveyor::Fuse::always}),
          conveyor::chain<std::uint64_t>() | sink(discard));
  expect_rejected(p,
                  "stage 'serial': cannot be fused into 'stage-1': a serial stage cannot run "
                  "on 2 workers");
}

TEST(PipelineTeeTest, ABranchThatDoesNotEndInASinkIsRejected) {
  Pipeline p;
  auto numbers = p.source(count_to(10));
  numbers | tee(conveyor::chain<std::uint64_t>() | sink(discard),
                conveyor::chain<std::uint64_t>() | sink(discard));
  // A stage from the point the tee split is one more branch, which must end in a sink.
  auto dangling = numbers | stage(unchanged);
  (void)dangling;
  EXPECT_THROW(p.start(), std::logic_error);
}

TEST(PipelineTeeTest, WithoutATeeAStageHasOneNext) {
  Pipeline p;
  auto numbers = p.source(count_to(10));
  numbers | sink(discard);
  EXPECT_THROW(numbers | sink(discard), std::logic_error);
}

// A branch that shares the tee's edge cannot take its items least loaded; with one worker, its
// dispatch has nothing to choose, and the pipeline runs.
TEST(PipelineTeeTest, ALeastLoadedDispatchAtTheHeadOfABranchIsRejected) {
  const auto least_loaded = [](std::size_t workers) {
    return conveyor::chain<std::uint64_t>() |
           sink(discard, {.mode = Mode::parallel,
                          .workers = workers,
                          .dispatch = conveyor::Dispatch::least_loaded()});
  };
  Pipeline rejected;
  rejected.source(count_to(10)) |
      tee(conveyor::chain<std::uint64_t>() | sink(discard), least_loaded(2));
  expect_rejected(rejected, "least loaded");
  Pipeline one_worker;
  one_worker.source(count_to(10)) |
      tee(conveyor::chain<std::uint64_t>() | sink(discard), least_loaded(1));
  EXPECT_NO_THROW(one_worker.run());
}

// --- route ---

auto collect_in_order(std::vector<std::uint64_t>& out, std::size_t batch = 1) {
  return conveyor::chain<std::uint64_t>() |
         sink(append_to(out), {.mode = Mode::serial_in_order, .batch = batch});
}

bool divisible_by_3(std::uint64_t x) {
  return x % 3 == 0;
}

// The numbers below `count` as a route of two cases and a default splits them.
struct ThreeWays {
  std::vector<std::uint64_t> first;
  std::vector<std::uint64_t> second;
  std::vector<std::uint64_t> rest;
};
template <class First, class Second>
ThreeWays split_three_ways(std::uint64_t count, First first, Second second) {
  ThreeWays split;
  for (std::uint64_t x = 0; x < count; ++x) {
    (first(x) ? split.first : second(x) ? split.second : split.rest).push_back(x);
  }
  return split;
}

TEST(PipelineRouteTest, EachItemGoesToTheFirstBranchItMatchesOrToTheDefault) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::uint64_t> threes;
  std::vector<std::uint64_t> evens;
  std::vector<std::uint64_t> rest;
  p.source(count_to(1000)) |
      route(when(divisible_by_3, collect_in_order(threes)),
            when([](std::uint64_t x) { return x % 2 == 0; }, collect_in_order(evens)),
            otherwise(collect_in_order(rest)));
  p.run();
  const ThreeWays want =
      split_three_ways(1000, divisible_by_3, [](std::uint64_t x) { return x % 2 == 0; });
  EXPECT_EQ(threes, want.first);
  EXPECT_EQ(evens, want.second);
  EXPECT_EQ(rest, want.rest);
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
                       collect_in_order(small)),
              when([](std::uint64_t x) { return x % 10 < 6; },
                   conveyor::chain<std::uint64_t>() |
                       sink(add_to(unordered),
                            {.mode = Mode::parallel, .workers = 2, .batch = batch})),
              otherwise(conveyor::chain<std::uint64_t>() |
                        stage(jitter, {.mode = Mode::parallel, .workers = 3}) |
                        collect_in_order(large)));
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

// Batched, a mapping stage before a route sends each run split by branch. Items go in stretches
// of 100 to one branch, so that many runs give a branch nothing at all (its in-order stage still
// needs their numbers); one in-order branch has a parallel stage first, which passes each number
// it did not get on as a gap; a third branch does not restore order. Small windows keep early
// batches waiting in the reorder buffers. Batches of 200 split each run in stretches of 64, 64,
// 64 and 8 numbers. Each branch gets exactly its items, once, in order.
TEST(PipelineRouteTest, BatchedRunsSplitByBranchKeepEveryBranchExact) {
  Watchdog watchdog;
  constexpr std::uint64_t count = 30'000;
  auto jitter = [](std::uint64_t x) {
    thread_local std::minstd_rand random(std::random_device{}());
    if (random() % 128 == 0) std::this_thread::sleep_for(std::chrono::microseconds(random() % 100));
    return x;
  };
  for (const std::size_t batch : {std::size_t{8}, std::size_t{64}, std::size_t{200}}) {
    Pipeline p;
    std::vector<std::uint64_t> direct;
    std::vector<std::uint64_t> behind;
    SharedTally unordered;
    p.source(count_to(count)) |
        stage(jitter, {.mode = Mode::parallel,
                       .workers = 2,
                       .channel = conveyor::Channel::queue(4),
                       .batch = batch}) |
        route(
            when([](std::uint64_t x) { return x / 100 % 3 == 0; }, collect_in_order(direct, batch)),
            when([](std::uint64_t x) { return x / 100 % 3 == 1; },
                 conveyor::chain<std::uint64_t>() |
                     stage(
                         jitter,
                         {.name = "behind", .mode = Mode::parallel, .workers = 2, .batch = batch}) |
                     collect_in_order(behind, batch)),
            otherwise(
                conveyor::chain<std::uint64_t>() |
                sink(add_to(unordered),
                     {.name = "unordered", .mode = Mode::parallel, .workers = 2, .batch = batch})));
    p.run();
    std::vector<std::uint64_t> want_direct;
    std::vector<std::uint64_t> want_behind;
    Tally want_unordered;
    for (std::uint64_t x = 0; x < count; ++x) {
      if (x / 100 % 3 == 0) {
        want_direct.push_back(x);
      } else if (x / 100 % 3 == 1) {
        want_behind.push_back(x);
      } else {
        want_unordered.add(x);
      }
    }
    EXPECT_EQ(direct, want_direct) << "batch " << batch;
    EXPECT_EQ(behind, want_behind) << "batch " << batch;
    EXPECT_EQ(unordered.get(), want_unordered) << "batch " << batch;
    const conveyor::PipelineStats stats = p.stats();
    EXPECT_EQ(stats.stage("behind")->items_in, want_behind.size()) << "batch " << batch;
    EXPECT_EQ(stats.stage("unordered")->items_in, want_unordered.count) << "batch " << batch;
  }
}

// Unbatched, the gaps a worker owes a branch wait in a gap set until the set is full or the worker
// flushes. With one-slot channels the ordering window is small, so the source stops while a
// branch still waits for a gap: the workers must send their sets when they run dry, not hang.
TEST(PipelineRouteTest, OwedGapsGoOutWhenTheWindowIsSmall) {
  Watchdog watchdog;
  constexpr std::uint64_t count = 20'000;
  const conveyor::StageOptions one_slot{.mode = Mode::serial_in_order,
                                        .channel = conveyor::Channel::queue(1)};
  std::vector<std::uint64_t> rare;
  std::vector<std::uint64_t> most;
  Pipeline p;
  p.source(count_to(count)) |
      stage(unchanged,
            {.mode = Mode::parallel, .workers = 2, .channel = conveyor::Channel::queue(1)}) |
      route(when([](std::uint64_t x) { return x % 97 == 0; },
                 conveyor::chain<std::uint64_t>() | sink(append_to(rare), one_slot)),
            otherwise(conveyor::chain<std::uint64_t>() | sink(append_to(most), one_slot)));
  p.run();
  std::vector<std::uint64_t> want_rare;
  std::vector<std::uint64_t> want_most;
  for (std::uint64_t x = 0; x < count; ++x)
    (x % 97 == 0 ? want_rare : want_most).push_back(x);
  EXPECT_EQ(rare, want_rare);
  EXPECT_EQ(most, want_most);
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
      route(when([](std::uint64_t y) { return y % 2 == 0; }, collect_in_order(evens)),
            otherwise(collect_in_order(odds)));
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

// The same for a route: an item whose number picks the stuck worker's full lane goes to the
// branch's other worker, and the other branch goes on.
TEST(PipelineRouteTest, AStuckWorkerOfABranchDoesNotHoldTheRouteWhileItsOtherLaneHasRoom) {
  Watchdog watchdog;
  for (const std::size_t batch : {std::size_t{1}, std::size_t{8}}) {
    Pipeline p;
    constexpr std::uint64_t items = 2'000;
    StuckBranch branch;
    p.source(count_to(items)) | stage(unchanged, {.batch = batch}) |
        route(when([](std::uint64_t x) { return x % 2 == 0; },
                   conveyor::chain<std::uint64_t>() | sink(branch.count_other())),
              otherwise(conveyor::chain<std::uint64_t>() |
                        sink(branch.code(items / 2), {.mode = Mode::parallel,
                                                      .workers = 2,
                                                      .channel = conveyor::Channel::queue(1),
                                                      .batch = batch})));
    p.run();
    EXPECT_FALSE(branch.timed_out.load(std::memory_order_relaxed)) << "batch " << batch;
    EXPECT_EQ(branch.other.load(std::memory_order_relaxed), items / 2);
    Tally odds;
    for (std::uint64_t x = 1; x < items; x += 2)
      odds.add(x);
    EXPECT_EQ(branch.tally.get(), odds);
  }
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

// A predicate may be a member pointer, as std::invoke takes it: a data member that converts to
// bool, or a const member function. Batched too, where a run is classified in one loop.
struct Order {
  std::uint64_t id = 0;
  bool urgent = false;
  [[nodiscard]] bool large() const { return id % 10 == 0; }
};

TEST(PipelineRouteTest, APredicateMayBeAMemberPointer) {
  Watchdog watchdog;
  for (const std::size_t batch : {std::size_t{1}, std::size_t{16}}) {
    Pipeline p;
    std::vector<std::uint64_t> urgent;
    std::vector<std::uint64_t> large;
    std::vector<std::uint64_t> rest;
    auto collect = [batch](std::vector<std::uint64_t>& out) {
      return conveyor::chain<Order>() | sink([&out](const Order& o) { out.push_back(o.id); },
                                             {.mode = Mode::serial_in_order, .batch = batch});
    };
    p.source(count_to(1000)) |
        stage(
            [](std::uint64_t x) {
              return Order{x, x % 7 == 0};
            },
            {.mode = Mode::parallel, .workers = 2, .batch = batch}) |
        route(when(&Order::urgent, collect(urgent)), when(&Order::large, collect(large)),
              otherwise(collect(rest)));
    p.run();
    const ThreeWays want = split_three_ways(
        1000, [](std::uint64_t x) { return x % 7 == 0; },
        [](std::uint64_t x) { return x % 10 == 0; });
    EXPECT_EQ(urgent, want.first) << "batch " << batch;
    EXPECT_EQ(large, want.second) << "batch " << batch;
    EXPECT_EQ(rest, want.rest) << "batch " << batch;
  }
}

struct FlushTally {
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
                     sink(FlushTally{&flushes}, {.mode = Mode::serial_in_order})),
            otherwise(conveyor::chain<std::uint64_t>() |
                      sink(FlushTally{&flushes}, {.mode = Mode::parallel, .workers = 2})));
  p.run();
  EXPECT_EQ(flushes.load(), 3);
}

TEST(PipelineRouteTest, AThrowFromAPredicateOrABranchFailsThePipeline) {
  Watchdog watchdog;
  for (int position = 0; position < 3; ++position) {
    Pipeline p;
    p.source(count_to(100'000)) |
        stage(unchanged, {.mode = Mode::parallel, .workers = 2, .batch = 4}) |
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
                        sink(discard)));
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
                 conveyor::chain<std::uint64_t>() | sink(discard, {.name = "threes"})),
            otherwise(conveyor::chain<std::uint64_t>() | sink(discard, {.name = "others"})));
  p.run();
  const conveyor::PipelineStats stats = p.stats();
  EXPECT_EQ(stats.stage("threes")->items_in, 100U);
  EXPECT_EQ(stats.stage("others")->items_in, 200U);
}

TEST(PipelineRouteTest, ALeastLoadedDispatchAtTheHeadOfABranchIsRejected) {
  Pipeline p;
  p.source(count_to(10)) |
      route(
          when(divisible_by_3, conveyor::chain<std::uint64_t>() |
                                   sink(discard, {.mode = Mode::parallel,
                                                  .workers = 2,
                                                  .dispatch = conveyor::Dispatch::least_loaded()})),
          otherwise(conveyor::chain<std::uint64_t>() | sink(discard)));
  expect_rejected(p, "least loaded");
}

TEST(PipelineRouteTest, ABranchOfARouteCannotBeFused) {
  Pipeline p;
  p.source(count_to(10)) | stage(unchanged) |
      route(when(divisible_by_3,
                 conveyor::chain<std::uint64_t>() |
                     sink(discard, {.name = "threes", .fuse = conveyor::Fuse::always})),
            otherwise(conveyor::chain<std::uint64_t>() | sink(discard)));
  expect_rejected(p, "stage 'threes': cannot be fused into 'stage-1': it is a branch of a route");
}

TEST(PipelineRouteTest, NothingElseContinuesFromARoute) {
  Pipeline p;
  auto numbers = p.source(count_to(10));
  numbers | route(when(divisible_by_3, conveyor::chain<std::uint64_t>() | sink(discard)),
                  otherwise(conveyor::chain<std::uint64_t>() | sink(discard)));
  numbers | sink(discard);
  EXPECT_THROW(p.start(), std::logic_error);
}

// --- merge ---

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
             stage(unchanged, {.mode = Mode::parallel, .workers = 2});
    auto c = p.source(count_from(15'000, 1));
    merge(a, b, c) | stage(unchanged, {.mode = Mode::parallel, .workers = 3, .batch = batch}) |
        sink(add_to(tally), {.mode = Mode::parallel, .workers = 2});
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
      stage(unchanged, {.mode = Mode::parallel, .workers = 3}) |
      sink(append_to(seen_at_end), {.mode = Mode::serial_in_order});
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
  merge(endless, failing) | sink(discard, {.mode = Mode::parallel, .workers = 2});
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
  merge(a, b) | sink(discard, {.name = "all"});
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
  merge(a, b) | stage(unchanged, {.mode = Mode::parallel, .workers = 2}) |
      sink(discard, {.mode = Mode::serial_in_order});
  EXPECT_THROW(p.start(), std::invalid_argument);
}

TEST(PipelineMergeTest, AnInputOfAMergeCannotGoElsewhere) {
  Pipeline p;
  auto a = p.source(count_to(10));
  auto b = p.source(count_to(10));
  merge(a, b) | sink(discard);
  EXPECT_THROW(a | sink(discard), std::logic_error);
  Pipeline q;
  auto c = q.source(count_to(10));
  auto d = q.source(count_to(10));
  EXPECT_THROW(
      (void)(merge(c, d) | conveyor::tee(conveyor::chain<std::uint64_t>() | sink(discard),
                                         conveyor::chain<std::uint64_t>() | sink(discard))),
      std::logic_error);
}

TEST(PipelineMergeTest, ABranchOfATeeCanBeMergedAgainOnlyThroughAStage) {
  Pipeline p;
  auto source = p.source(count_to(10));
  source | conveyor::tee(conveyor::chain<std::uint64_t>() | sink(discard),
                         conveyor::chain<std::uint64_t>() | sink(discard));
  auto other = p.source(count_to(10));
  // The tee's point is continued a third way, into a merge.
  merge(source, other) | sink(discard);
  EXPECT_THROW(p.start(), std::logic_error);
}

}  // namespace
