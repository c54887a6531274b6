// Unit tests for building and running pipelines: the forms a source, a stage and a sink may take,
// dispatch, channels, move-only items, and the errors a wrongly built pipeline gives.
#include "conveyor/framework/pipeline.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/framework/chain.hpp"
#include "conveyor/framework/emit.hpp"
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
using conveyor::testing::discard;
using conveyor::testing::unchanged;
using conveyor::testing::Watchdog;

TEST(PipelineTest, MapsEveryItemFromSourceToSink) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::uint64_t> out;
  p.source(count_to(100)) | stage([](std::uint64_t x) { return x * 3; }) | sink(append_to(out));
  p.run();
  ASSERT_EQ(out.size(), 100U);
  for (std::uint64_t i = 0; i < 100; ++i)
    EXPECT_EQ(out[i], 3 * i);
}

TEST(PipelineTest, AnOptionalResultFilters) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::uint64_t> out;
  p.source(count_to(20)) | stage([](std::uint64_t x) -> std::optional<std::uint64_t> {
    if (x % 2 == 1) return std::nullopt;
    return x;
  }) | sink(append_to(out));
  p.run();
  EXPECT_EQ(out, (std::vector<std::uint64_t>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18}));
}

TEST(PipelineTest, AStageMayEmitManyItemsPerInput) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::string> out;
  p.source(count_to(4)) | stage([](std::uint64_t x, Emit<std::string>& emit) {
    for (std::uint64_t i = 0; i < x; ++i)
      emit(std::to_string(x));
  }) | sink([&](std::string s) { out.push_back(std::move(s)); });
  p.run();
  EXPECT_EQ(out, (std::vector<std::string>{"1", "2", "2", "3", "3", "3"}));
}

// A class stage with per-worker state and a flush hook: a running total emitted at the end.
class Summer {
 public:
  std::optional<std::uint64_t> process(std::uint64_t x) {
    total_ += x;
    return std::nullopt;
  }
  void flush(Emit<std::uint64_t>& emit) { emit(total_); }

 private:
  std::uint64_t total_ = 0;
};

TEST(PipelineTest, AClassStageFlushesAtTheEndOfTheStream) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::uint64_t> out;
  p.source(count_to(101)) | stage(Summer{}) | sink(append_to(out));
  p.run();
  EXPECT_EQ(out, (std::vector<std::uint64_t>{5050}));
}

TEST(PipelineTest, EveryParallelWorkerFlushesItsOwnState) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<std::uint64_t> partials;
  p.source(count_to(1000)) | stage(Summer{}, {.mode = Mode::parallel, .workers = 3}) |
      sink(append_to(partials));
  p.run();
  ASSERT_EQ(partials.size(), 3U);
  EXPECT_EQ(partials[0] + partials[1] + partials[2], 999U * 1000U / 2);
}

// A class sink with a flush hook.
struct CountingSink {
  std::uint64_t* count;
  bool* flushed;
  void process(std::uint64_t) { ++*count; }
  void flush() { *flushed = true; }
};

TEST(PipelineTest, AClassSinkIsFlushed) {
  Watchdog watchdog;
  Pipeline p;
  std::uint64_t count = 0;
  bool flushed = false;
  p.source(count_to(10)) | sink(CountingSink{&count, &flushed});
  p.run();
  EXPECT_EQ(count, 10U);
  EXPECT_TRUE(flushed);
}

TEST(PipelineTest, APushSourceEmitsEverythingItself) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<int> out;
  p.source([](Emit<int>& emit) {
    for (int i = 0; i < 5; ++i)
      emit(i * i);
  }) | sink([&](int x) { out.push_back(x); });
  p.run();
  EXPECT_EQ(out, (std::vector<int>{0, 1, 4, 9, 16}));
}

struct Countdown {
  int left;
  std::optional<int> next() {
    if (left == 0) return std::nullopt;
    return left--;
  }
};

TEST(PipelineTest, AClassSourceIsAskedForItsNextItem) {
  Watchdog watchdog;
  Pipeline p;
  std::vector<int> out;
  p.source(Countdown{3}) | sink([&](int x) { out.push_back(x); });
  p.run();
  EXPECT_EQ(out, (std::vector<int>{3, 2, 1}));
}

TEST(PipelineTest, MoveOnlyItemsTravelThroughEveryKindOfEdge) {
  Watchdog watchdog;
  for (std::size_t batch : {1U, 4U}) {
    Pipeline p;
    std::uint64_t sum = 0;
    p.source(count_to(1000)) |
        stage([](std::uint64_t x) { return std::make_unique<std::uint64_t>(x); },
              {.mode = Mode::parallel, .workers = 2, .batch = batch}) |
        stage([](std::unique_ptr<std::uint64_t> item) { return item; },
              {.mode = Mode::serial_in_order, .channel = Channel::mailbox()}) |
        sink([&](std::unique_ptr<std::uint64_t> item) { sum += *item; },
             {.mode = Mode::serial_in_order, .batch = batch});
    p.run();
    EXPECT_EQ(sum, 999U * 1000U / 2);
  }
}

struct Keyed {
  std::uint64_t key;
  std::uint64_t value;
};

TEST(PipelineTest, ByKeyDispatchSendsEachKeyToOneWorker) {
  Watchdog watchdog;
  Pipeline p;
  std::mutex mutex;
  std::set<std::pair<std::uint64_t, std::size_t>> seen;  // (key, worker)
  std::atomic<std::uint64_t> total{0};
  p.source(count_to(5000)) | stage([](std::uint64_t x) {
    return Keyed{x % 17, x};
  }) |
      stage(
          [&](Keyed k, Emit<std::uint64_t>& emit) {
            {
              std::lock_guard lock(mutex);
              seen.emplace(k.key, emit.worker());
            }
            emit(k.value);
          },
          {.mode = Mode::parallel, .workers = 4, .dispatch = Dispatch::by_key(&Keyed::key)}) |
      sink([&](std::uint64_t x) { total.fetch_add(x, std::memory_order_relaxed); });
  p.run();
  EXPECT_EQ(total.load(), 4999U * 5000U / 2);
  std::set<std::uint64_t> keys;
  for (const auto& [key, worker] : seen)
    EXPECT_TRUE(keys.insert(key).second) << "key " << key;
  EXPECT_EQ(keys.size(), 17U);
}

// The keyed dispatch as stage()'s and sink()'s third argument, where its key function's item type
// is checked at compile time: the same placement as in the options.
TEST(PipelineTest, AKeyedDispatchGivenToStageAndSinkSendsEachKeyToOneWorker) {
  Watchdog watchdog;
  Pipeline p;
  std::mutex mutex;
  std::set<std::pair<std::uint64_t, std::size_t>> stage_seen;     // (key, worker)
  std::set<std::pair<std::uint64_t, std::thread::id>> sink_seen;  // (partition, worker's thread)
  std::atomic<std::uint64_t> total{0};
  const auto keyed = conveyor::chain<std::uint64_t>() | stage([](std::uint64_t x) {
                       return Keyed{x % 17, x};
                     }) |
                     stage(
                         [&](Keyed k, Emit<Keyed>& emit) {
                           {
                             std::lock_guard lock(mutex);
                             stage_seen.emplace(k.key, emit.worker());
                           }
                           emit(Keyed{k.value % 5, k.value});
                         },
                         {.mode = Mode::parallel, .workers = 3}, Dispatch::by_key(&Keyed::key));
  p.source(count_to(3000)) | keyed |
      sink(
          [&](const Keyed& k) {
            {
              std::lock_guard lock(mutex);
              sink_seen.emplace(k.key, std::this_thread::get_id());
            }
            total.fetch_add(k.value, std::memory_order_relaxed);
          },
          {.mode = Mode::parallel, .workers = 2},
          Dispatch::by_partition([](const Keyed& k) { return k.key; }));
  p.run();
  EXPECT_EQ(total.load(), 2999U * 3000U / 2);
  const auto one_worker_each = [](const auto& seen) {
    std::set<std::uint64_t> keys;
    for (const auto& [key, worker] : seen)
      EXPECT_TRUE(keys.insert(key).second) << "key " << key;
  };
  one_worker_each(stage_seen);
  one_worker_each(sink_seen);
  EXPECT_EQ(stage_seen.size(), 17U);
  EXPECT_EQ(sink_seen.size(), 5U);
}

TEST(PipelineTest, ByKeyTakesACallableKey) {
  Watchdog watchdog;
  Pipeline p;
  std::atomic<std::uint64_t> count{0};
  p.source(count_to(100)) |
      sink([&](std::uint64_t) { count.fetch_add(1, std::memory_order_relaxed); },
           {.mode = Mode::parallel,
            .workers = 2,
            .dispatch = Dispatch::by_key([](const std::uint64_t& x) { return x / 10; })});
  p.run();
  EXPECT_EQ(count.load(), 100U);
}

TEST(PipelineTest, ByPartitionSendsPartitionNModuloTheWorkerCount) {
  Watchdog watchdog;
  Pipeline p;
  constexpr std::uint64_t workers = 3;
  std::mutex mutex;
  std::map<std::uint64_t, std::set<std::size_t>> workers_of;  // partition -> workers that got it
  std::atomic<std::uint64_t> total{0};
  p.source(count_to(6000)) | stage([](std::uint64_t x) {
    return Keyed{x % 12, x};
  }) |
      stage(
          [&](Keyed k, Emit<std::uint64_t>& emit) {
            {
              std::lock_guard lock(mutex);
              workers_of[k.key].insert(emit.worker());
            }
            emit(k.value);
          },
          {.mode = Mode::parallel,
           .workers = workers,
           .dispatch = Dispatch::by_partition(&Keyed::key)}) |
      sink([&](std::uint64_t x) { total.fetch_add(x, std::memory_order_relaxed); });
  p.run();
  EXPECT_EQ(total.load(), 5999U * 6000U / 2);
  ASSERT_EQ(workers_of.size(), 12U);
  for (const auto& [partition, seen_by] : workers_of) {
    EXPECT_EQ(seen_by, std::set<std::size_t>{partition % workers}) << "partition " << partition;
  }
}

TEST(PipelineTest, BroadcastGivesEveryWorkerEveryItem) {
  Watchdog watchdog;
  Pipeline p;
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::uint64_t> total{0};
  p.source(count_to(100)) |
      sink(
          [&](std::uint64_t x) {
            count.fetch_add(1, std::memory_order_relaxed);
            total.fetch_add(x, std::memory_order_relaxed);
          },
          {.mode = Mode::parallel, .workers = 3, .dispatch = Dispatch::broadcast(), .batch = 7});
  p.run();
  EXPECT_EQ(count.load(), 300U);
  EXPECT_EQ(total.load(), 3U * 99U * 100U / 2);
}

TEST(PipelineTest, MailboxChannelsCarryEverything) {
  Watchdog watchdog;
  Pipeline p;
  conveyor::testing::SharedTally tally;
  p.source(count_to(20000)) |
      stage(unchanged, {.mode = Mode::parallel, .workers = 3, .channel = Channel::mailbox()}) |
      sink(add_to(tally), {.mode = Mode::parallel, .workers = 2, .channel = Channel::mailbox()});
  p.run();
  EXPECT_EQ(tally.get(), conveyor::testing::expected_tally(20000));
}

// A consumer found asleep is woken a few parcels later; when the producer then blocks elsewhere
// (a source waiting for input), the pipeline's supervisor delivers the wake-up.
TEST(PipelineTest, AnItemReachesItsConsumerWhileTheSourceBlocksElsewhere) {
  Watchdog watchdog;
  std::atomic<int> seen{0};
  Pipeline p;
  p.source([&](Emit<int>& emit) {
    for (int i = 1; i <= 3; ++i) {
      emit(i);
      // Blocks until the sink has the item: it must not wait for this source to push again.
      while (seen.load() != i)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }) | stage([](int x) { return x; }, {.channel = Channel::queue(64)}) |
      sink([&](int x) { seen.store(x); }, {.channel = Channel::queue(64)});
  p.run();
  EXPECT_EQ(seen.load(), 3);
}

TEST(PipelineTest, StagesGetDefaultNames) {
  Pipeline p({.name = "named"});
  p.source(count_to(1)) | stage(unchanged, {.name = "double"}) | stage(unchanged) | sink(discard);
  p.run();
  const auto stats = p.stats();
  EXPECT_EQ(stats.name, "named");
  ASSERT_EQ(stats.stages.size(), 4U);
  EXPECT_EQ(stats.stages[0].name, "source");
  EXPECT_EQ(stats.stages[1].name, "double");
  EXPECT_EQ(stats.stages[2].name, "stage-2");
  EXPECT_EQ(stats.stages[3].name, "sink");
}

TEST(PipelineTest, ByKeyForAnotherItemTypeIsRejected) {
  Pipeline p;
  p.source(count_to(1)) | sink(discard, {.dispatch = Dispatch::by_key(&Keyed::key)});
  EXPECT_THROW(p.start(), std::invalid_argument);
}

TEST(PipelineTest, InOrderAfterABroadcastToSeveralWorkersIsRejected) {
  Pipeline p;
  p.source(count_to(1)) |
      stage(unchanged, {.mode = Mode::parallel, .workers = 2, .dispatch = Dispatch::broadcast()}) |
      sink(discard, {.mode = Mode::serial_in_order});
  EXPECT_THROW(p.start(), std::invalid_argument);
}

struct MoveOnlyStage {
  std::unique_ptr<int> state = std::make_unique<int>(0);
  std::uint64_t operator()(std::uint64_t x) const { return x; }
};

TEST(PipelineTest, SeveralWorkersNeedCopyableCode) {
  Pipeline p;
  p.source(count_to(1)) | stage(MoveOnlyStage{}, {.mode = Mode::parallel, .workers = 2}) |
      sink(discard);
  EXPECT_THROW(p.start(), std::invalid_argument);
}

TEST(PipelineTest, MoveOnlyCodeRunsOnOneWorker) {
  Watchdog watchdog;
  Pipeline p;
  std::uint64_t count = 0;
  p.source(count_to(10)) | stage(MoveOnlyStage{}) | sink([&](std::uint64_t) { ++count; });
  p.run();
  EXPECT_EQ(count, 10U);
}

TEST(PipelineTest, ZeroCapacityAndZeroBatchAreRejected) {
  {
    Pipeline p;
    p.source(count_to(1)) | sink(discard, {.channel = Channel::queue(0)});
    EXPECT_THROW(p.start(), std::invalid_argument);
  }
  {
    Pipeline p;
    p.source(count_to(1)) | sink(discard, {.batch = 0});
    EXPECT_THROW(p.start(), std::invalid_argument);
  }
}

TEST(PipelineTest, AChainNeedsASourceAndASink) {
  Pipeline empty;
  EXPECT_THROW(empty.start(), std::logic_error);
  Pipeline unfinished;
  auto flow = unfinished.source(count_to(1));
  (void)flow;
  EXPECT_THROW(unfinished.start(), std::logic_error);
}

TEST(PipelineTest, AChainCannotBranch) {
  Pipeline p;
  auto flow = p.source(count_to(1));
  auto first = flow | stage(unchanged);
  (void)first;
  EXPECT_THROW(flow | stage(unchanged), std::logic_error);
}

// A second source is for a merge (merge.hpp): on its own it leaves the pipeline unfinished.
TEST(PipelineTest, ASecondSourceMustJoinTheChain) {
  Pipeline p;
  p.source(count_to(1)) | sink(discard);
  auto second = p.source(count_to(1));
  (void)second;
  EXPECT_THROW(p.start(), std::logic_error);
}

TEST(PipelineTest, APipelineRunsOnce) {
  Watchdog watchdog;
  Pipeline p;
  p.source(count_to(1)) | sink(discard);
  p.run();
  EXPECT_THROW(p.start(), std::logic_error);
  EXPECT_NO_THROW(p.wait());
}

TEST(PipelineTest, WaitBeforeStartIsAnError) {
  Pipeline p;
  EXPECT_THROW(p.wait(), std::logic_error);
}

}  // namespace
