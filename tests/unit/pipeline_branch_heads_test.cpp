// The first stage of a tee's or a route's branch with a dispatch of its own: by key (each item on
// the one worker of its key, no other), or broadcast (every item on every worker of the branch).
// Each test counts and fingerprints what every worker got, checks which worker took each key, and
// checks the order where an in-order stage follows a keyed head; batched and not. The throw, stop
// and abort tests of pipeline_graph_test.cpp run with a keyed head as well, and the graph stress
// matrix starts the branches of its three-branch shapes with keyed stages.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "conveyor/framework.hpp"
#include "pipeline_support.hpp"
#include "watchdog.hpp"

namespace {

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
using conveyor::testing::expected_tally;
using conveyor::testing::SharedTally;
using conveyor::testing::Tally;
using conveyor::testing::unchanged;
using conveyor::testing::Watchdog;

// Each item by its residue modulo `modulus`.
auto keyed_by_residue(std::uint64_t modulus) {
  return conveyor::Dispatch::by_key([modulus](std::uint64_t x) { return x % modulus; });
}

// The numbers below `n` through a parallel stage of two workers that passes them on.
conveyor::Flow<std::uint64_t> numbers_through_work(Pipeline& p, std::uint64_t n,
                                                   std::size_t batch) {
  return p.source(count_to(n)) |
         stage(unchanged, {.name = "work", .mode = Mode::parallel, .workers = 2, .batch = batch});
}

// What each worker of a sink saw, gathered at its flush: a tally of its items and the keys it took.
// Each worker has its own copy of the sink.
struct WorkerShare {
  Tally tally;
  std::set<std::uint64_t> keys;
};
struct Shares {
  std::mutex mutex;
  std::vector<WorkerShare> workers;
  // How many workers took `key`.
  [[nodiscard]] std::size_t owners(std::uint64_t key) {
    std::lock_guard lock(mutex);
    std::size_t owners = 0;
    for (const WorkerShare& share : workers)
      owners += share.keys.count(key);
    return owners;
  }
  [[nodiscard]] Tally total() {
    std::lock_guard lock(mutex);
    Tally all;
    for (const WorkerShare& share : workers) {
      all.count += share.tally.count;
      all.hash += share.tally.hash;
    }
    return all;
  }
};
// `slow`: yields at each item, so that its channel fills and the producer must wait for the lane
// its dispatch chose.
struct ShareSink {
  ShareSink(Shares* into, std::uint64_t keys, bool yields = false)
      : shares(into), modulus(keys), slow(yields) {}
  Shares* shares;
  std::uint64_t modulus;  // the key of x is x % modulus
  bool slow;
  WorkerShare mine;
  void process(std::uint64_t x) {
    if (slow) std::this_thread::yield();
    mine.tally.add(x);
    mine.keys.insert(x % modulus);
  }
  void flush() {
    std::lock_guard lock(shares->mutex);
    shares->workers.push_back(mine);
  }
};

// A branch whose first stage has a keyed dispatch gets each item in the one worker of its key, and
// a branch whose first stage broadcasts gets every item in each of its workers; a keyed head
// followed by an in-order stage keeps the order, and the other branches theirs. Batched or not:
// the tee then sends its items one by one.
TEST(PipelineTeeTest, AKeyedOrBroadcastBranchHeadPlacesTheItemsAsItsDispatchSays) {
  Watchdog watchdog;
  constexpr std::uint64_t n = 6000;
  for (const std::size_t batch : {std::size_t{1}, std::size_t{16}}) {
    Pipeline p;
    Shares keyed;
    Shares broadcast;
    std::vector<std::uint64_t> after_keyed;
    std::vector<std::uint64_t> ordered;
    numbers_through_work(p, n, batch) |
        tee(conveyor::chain<std::uint64_t>() | sink(ShareSink{&keyed, 7, true},
                                                    {.name = "keyed",
                                                     .mode = Mode::parallel,
                                                     .workers = 3,
                                                     .channel = conveyor::Channel::queue(2)},
                                                    keyed_by_residue(7)),
            conveyor::chain<std::uint64_t>() |
                sink(ShareSink{&broadcast, 1}, {.name = "broadcast",
                                                .mode = Mode::parallel,
                                                .workers = 3,
                                                .dispatch = conveyor::Dispatch::broadcast()}),
            conveyor::chain<std::uint64_t>() |
                stage(unchanged, {.mode = Mode::parallel, .workers = 3, .batch = batch},
                      keyed_by_residue(5)) |
                sink(append_to(after_keyed), {.mode = Mode::serial_in_order}),
            conveyor::chain<std::uint64_t>() |
                sink(append_to(ordered), {.mode = Mode::serial_in_order, .batch = batch}));
    p.run();
    EXPECT_EQ(keyed.total(), expected_tally(n)) << "batch " << batch;
    for (std::uint64_t key = 0; key < 7; ++key)
      EXPECT_EQ(keyed.owners(key), 1U) << "key " << key << ", batch " << batch;
    ASSERT_EQ(broadcast.workers.size(), 3U);
    for (const WorkerShare& share : broadcast.workers)
      EXPECT_EQ(share.tally, expected_tally(n)) << "batch " << batch;
    ASSERT_EQ(after_keyed.size(), n) << "batch " << batch;
    ASSERT_EQ(ordered.size(), n) << "batch " << batch;
    for (std::uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(after_keyed[i], i) << "batch " << batch;
      ASSERT_EQ(ordered[i], i) << "batch " << batch;
    }
  }
}

// A stage that emits two items for each input sends them as tagged entries (two parts of one
// number): a keyed head after the tee places each by its own key, and the in-order stage after it
// gets both parts of every number, in order.
TEST(PipelineTeeTest, AKeyedBranchHeadPlacesEachItemOfAStageThatEmitsSeveral) {
  Watchdog watchdog;
  constexpr std::uint64_t n = 3000;
  Pipeline p;
  Shares keyed;
  std::vector<std::uint64_t> ordered;
  p.source(count_to(n)) |
      stage(
          [](std::uint64_t x, conveyor::Emit<std::uint64_t>& emit) {
            emit(2 * x);
            emit(2 * x + 1);
          },
          {.mode = Mode::parallel, .workers = 2}) |
      tee(conveyor::chain<std::uint64_t>() |
              sink(ShareSink{&keyed, 7}, {.mode = Mode::parallel, .workers = 3},
                   keyed_by_residue(7)),
          conveyor::chain<std::uint64_t>() |
              stage(unchanged, {.mode = Mode::parallel, .workers = 2}, keyed_by_residue(3)) |
              sink(append_to(ordered), {.mode = Mode::serial_in_order}));
  p.run();
  EXPECT_EQ(keyed.total(), expected_tally(2 * n));
  for (std::uint64_t key = 0; key < 7; ++key)
    EXPECT_EQ(keyed.owners(key), 1U) << "key " << key;
  ASSERT_EQ(ordered.size(), 2 * n);
  for (std::uint64_t i = 0; i < 2 * n; ++i)
    ASSERT_EQ(ordered[i], i);
}

// With the other branch fused into the stage before the tee, the keyed branch is the only one that
// takes the tee's channel, batches and all.
TEST(PipelineTeeTest, AKeyedBranchHeadBesideAFusedBranchGetsEachKeyInOneWorker) {
  Watchdog watchdog;
  constexpr std::uint64_t n = 6000;
  for (const std::size_t batch : {std::size_t{1}, std::size_t{16}}) {
    Pipeline p;
    Shares keyed;
    SharedTally fused;
    numbers_through_work(p, n, batch) |
        tee(conveyor::chain<std::uint64_t>() |
                sink(add_to(fused), {.mode = Mode::parallel, .fuse = conveyor::Fuse::always}),
            conveyor::chain<std::uint64_t>() |
                sink(ShareSink{&keyed, 11}, {.mode = Mode::parallel, .workers = 3, .batch = batch},
                     keyed_by_residue(11)));
    p.run();
    EXPECT_EQ(fused.get(), expected_tally(n)) << "batch " << batch;
    EXPECT_EQ(keyed.total(), expected_tally(n)) << "batch " << batch;
    for (std::uint64_t key = 0; key < 11; ++key)
      EXPECT_EQ(keyed.owners(key), 1U) << "key " << key << ", batch " << batch;
  }
}

// As for a tee: a keyed head gets each of its branch's items in the one worker of its key, a
// broadcasting head every item of its branch in each worker, and a branch whose keyed head leads to
// an in-order stage gets its items, and the gaps for the others, in order.
TEST(PipelineRouteTest, AKeyedOrBroadcastBranchHeadPlacesTheItemsAsItsDispatchSays) {
  Watchdog watchdog;
  constexpr std::uint64_t n = 6000;
  const auto divisible_by_3 = [](std::uint64_t x) { return x % 3 == 0; };
  const auto one_mod_3 = [](std::uint64_t x) { return x % 3 == 1; };
  // What each branch should get: multiples of 3, then 1 mod 3, then the rest (in order).
  Tally want_threes;
  Tally want_ones;
  std::vector<std::uint64_t> want_rest;
  for (std::uint64_t x = 0; x < n; ++x) {
    if (divisible_by_3(x)) {
      want_threes.add(x);
    } else if (one_mod_3(x)) {
      want_ones.add(x);
    } else {
      want_rest.push_back(x);
    }
  }
  for (const std::size_t batch : {std::size_t{1}, std::size_t{16}}) {
    Pipeline p;
    Shares keyed;
    Shares broadcast;
    std::vector<std::uint64_t> rest;
    numbers_through_work(p, n, batch) |
        route(when(divisible_by_3,
                   conveyor::chain<std::uint64_t>() | sink(ShareSink{&keyed, 5, true},
                                                           {.mode = Mode::parallel,
                                                            .workers = 3,
                                                            .channel = conveyor::Channel::queue(2)},
                                                           keyed_by_residue(5))),
              when(one_mod_3, conveyor::chain<std::uint64_t>() |
                                  sink(ShareSink{&broadcast, 1},
                                       {.mode = Mode::parallel,
                                        .workers = 2,
                                        .dispatch = conveyor::Dispatch::broadcast()})),
              otherwise(conveyor::chain<std::uint64_t>() |
                        stage(unchanged, {.mode = Mode::parallel, .workers = 3, .batch = batch},
                              keyed_by_residue(4)) |
                        sink(append_to(rest), {.mode = Mode::serial_in_order})));
    p.run();
    EXPECT_EQ(keyed.total(), want_threes) << "batch " << batch;
    for (std::uint64_t key = 0; key < 5; ++key)
      EXPECT_EQ(keyed.owners(key), 1U) << "key " << key << ", batch " << batch;
    ASSERT_EQ(broadcast.workers.size(), 2U);
    for (const WorkerShare& share : broadcast.workers)
      EXPECT_EQ(share.tally, want_ones) << "batch " << batch;
    EXPECT_EQ(rest, want_rest) << "batch " << batch;
  }
}

}  // namespace
