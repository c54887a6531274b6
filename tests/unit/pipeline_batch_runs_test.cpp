// Batches that stay runs take whole-batch paths: a pulled source fills each batch in one loop, and
// a stage that maps each input to one output maps a whole run in one loop (in place when the item
// type does not change). These tests check that those paths keep every promise of the per-item
// path: every item once, the source's order where an in-order stage restores it, runs mixed with
// tagged batches on one port, untagged and broadcast edges, the ordering window and stop requests.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/stage.hpp"
#include "pipeline_support.hpp"
#include "tracked.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Channel;
using conveyor::Dispatch;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::testing::count_to;
using conveyor::testing::expected_tally;
using conveyor::testing::SharedTally;
using conveyor::testing::Tally;
using conveyor::testing::Tracked;
using conveyor::testing::unchanged;
using conveyor::testing::Watchdog;

constexpr std::uint64_t items = 50'000;

struct RunCase {
  std::size_t workers;
  std::size_t batch_in;   // into the mapping stages
  std::size_t batch_out;  // into the sink
};

// A parallel mapping stage of the case's workers, fed in batches of `batch`.
conveyor::StageOptions mapping(const RunCase& c, std::size_t batch) {
  return {.mode = Mode::parallel, .workers = c.workers, .batch = batch};
}

// An in-order sink's check: each value is the one after the previous one.
struct Consecutive {
  std::uint64_t expected = 0;
  std::uint64_t wrong = 0;
  void operator()(std::uint64_t x) {
    if (x != expected) ++wrong;
    expected = x + 1;
  }
};

class BatchRunsTest : public ::testing::TestWithParam<RunCase> {};

// In place (same type), then to another type and back: each value is checked, in order.
TEST_P(BatchRunsTest, MappedRunsArriveOnceAndInOrder) {
  Watchdog watchdog;
  const RunCase c = GetParam();
  Pipeline p;
  Consecutive check;
  p.source(count_to(items)) |
      stage([](std::uint64_t x) { return 3 * x + 1; }, mapping(c, c.batch_in)) |
      stage([](std::uint64_t x) { return std::to_string(x); }, mapping(c, c.batch_in)) |
      stage([](const std::string& s) { return (std::stoull(s) - 1) / 3; },
            mapping(c, c.batch_out)) |
      sink([&](std::uint64_t x) { check(x); },
           {.mode = Mode::serial_in_order, .batch = c.batch_out});
  p.run();
  EXPECT_EQ(check.expected, items);
  EXPECT_EQ(check.wrong, 0U);
  // Counted once per run on the whole-batch paths, as once per item elsewhere.
  const auto stats = p.stats();
  for (std::size_t i = 0; i < stats.stages.size(); ++i) {
    if (i > 0) {
      EXPECT_EQ(stats.stages[i].items_in, items) << stats.stages[i].name;
    }
    if (i + 1 < stats.stages.size()) {
      EXPECT_EQ(stats.stages[i].items_out, items) << stats.stages[i].name;
    }
  }
}

// A filter's gaps make some batches tagged while others stay runs, so the mapping stage after it
// sends both through one port.
TEST_P(BatchRunsTest, RunsAndGapsShareAPortAndKeepTheOrder) {
  Watchdog watchdog;
  const RunCase c = GetParam();
  Pipeline p;
  std::uint64_t next_x = 0;
  std::uint64_t wrong = 0;
  std::uint64_t received = 0;
  p.source(count_to(items)) |
      stage(
          [](std::uint64_t x) -> std::optional<std::uint64_t> {
            // Whole stretches without gaps, then a few gaps.
            if (x % 100 > 90 && x % 3 == 0) return std::nullopt;
            return x;
          },
          mapping(c, c.batch_in)) |
      stage([](std::uint64_t x) { return 2 * x; }, mapping(c, c.batch_in)) |
      sink(
          [&](std::uint64_t y) {
            while (next_x % 100 > 90 && next_x % 3 == 0)
              ++next_x;
            if (y != 2 * next_x) ++wrong;
            ++next_x;
            ++received;
          },
          {.mode = Mode::serial_in_order, .batch = c.batch_out});
  p.run();
  std::uint64_t kept = 0;
  for (std::uint64_t x = 0; x < items; ++x) {
    if (!(x % 100 > 90 && x % 3 == 0)) ++kept;
  }
  EXPECT_EQ(received, kept);
  EXPECT_EQ(wrong, 0U);
}

// No in-order stage downstream: the runs are numbered by the port that sends them.
TEST_P(BatchRunsTest, UnorderedEdgesCarryEveryItemOnce) {
  Watchdog watchdog;
  const RunCase c = GetParam();
  Pipeline p;
  SharedTally tally;
  p.source(count_to(items)) | stage([](std::uint64_t x) { return x + 7; }, mapping(c, c.batch_in)) |
      sink([&](std::uint64_t x) { tally.add(x - 7); },
           {.mode = Mode::parallel, .workers = 2, .batch = c.batch_out});
  p.run();
  EXPECT_EQ(tally.get(), expected_tally(items));
  // Runs the sink takes whole are counted as the items they hold.
  EXPECT_EQ(p.stats().stages.back().items_in, items);
}

// Broadcast: every sink worker gets its own copy of each mapped run.
TEST_P(BatchRunsTest, BroadcastRunsReachEveryWorker) {
  Watchdog watchdog;
  const RunCase c = GetParam();
  Pipeline p;
  std::mutex mutex;
  std::map<std::thread::id, Tally> per_worker;
  p.source(count_to(items)) | stage(unchanged, mapping(c, c.batch_in)) |
      sink(
          [&](std::uint64_t x) {
            const std::scoped_lock lock(mutex);
            per_worker[std::this_thread::get_id()].add(x);
          },
          {.mode = Mode::parallel,
           .workers = 2,
           .dispatch = Dispatch::broadcast(),
           .batch = c.batch_out});
  p.run();
  ASSERT_EQ(per_worker.size(), 2U);
  for (const auto& [worker, tally] : per_worker)
    EXPECT_EQ(tally, expected_tally(items));
}

// A small ordering window: the source fills batches only with numbers inside it, and the
// in-order stage, slow at times, lets it go on.
TEST_P(BatchRunsTest, ThePulledSourceWaitsForTheOrderingWindow) {
  Watchdog watchdog;
  const RunCase c = GetParam();
  Pipeline p;
  Consecutive check;
  p.source(count_to(items)) |
      stage(unchanged, {.mode = Mode::parallel,
                        .workers = c.workers,
                        .channel = Channel::queue(1),
                        .batch = c.batch_in}) |
      sink(
          [&](std::uint64_t x) {
            if (x % 5'000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            check(x);
          },
          {.mode = Mode::serial_in_order, .channel = Channel::queue(1), .batch = c.batch_out});
  p.run();
  EXPECT_EQ(check.expected, items);
  EXPECT_EQ(check.wrong, 0U);
}

std::string run_case_name(const ::testing::TestParamInfo<RunCase>& param) {
  return std::to_string(param.param.workers) + "workers_" + std::to_string(param.param.batch_in) +
         "in_" + std::to_string(param.param.batch_out) + "out";
}

INSTANTIATE_TEST_SUITE_P(Shapes, BatchRunsTest,
                         ::testing::Values(RunCase{1, 16, 16}, RunCase{2, 16, 16},
                                           RunCase{2, 16, 5}, RunCase{2, 5, 16}, RunCase{3, 64, 64},
                                           RunCase{2, 1, 16}, RunCase{2, 16, 1}),
                         run_case_name);

// A pulled source is not called again once a stop is requested, and everything it returned
// before reaches the sink, batched (whole batches) or not (item by item): nothing it took is
// dropped, and the counts agree end to end.
TEST(BatchRunsStop, RequestStopDeliversEverythingThePulledSourceReturned) {
  Watchdog watchdog;
  for (std::size_t batch : {std::size_t{1}, std::size_t{32}}) {
    std::atomic<std::uint64_t> returned{0};
    std::atomic<std::uint64_t> consumed{0};
    Pipeline p;
    p.source([&returned, next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
      returned.fetch_add(1, std::memory_order_relaxed);
      return next++;
    }) | stage(unchanged, {.mode = Mode::parallel, .workers = 2, .batch = batch}) |
        sink([&](std::uint64_t) { consumed.fetch_add(1, std::memory_order_relaxed); },
             {.mode = Mode::serial_in_order, .batch = batch});
    p.start();
    while (consumed.load(std::memory_order_relaxed) < 10'000)
      std::this_thread::yield();
    p.request_stop();
    p.wait();
    const auto stats = p.stats();
    EXPECT_GT(stats.stages.front().items_out, 0U);
    EXPECT_EQ(returned.load(), consumed.load()) << "batch " << batch;
    EXPECT_EQ(stats.stages.front().items_out, consumed.load()) << "batch " << batch;
    EXPECT_EQ(stats.stages.back().items_in, consumed.load()) << "batch " << batch;
  }
}

// Items that move trivially but cannot be copied: trivially copyable in the standard's sense, yet
// not copy-constructible, so every batched append must move them.
template <class V>
struct MoveOnlyValue {
  V value;
  explicit MoveOnlyValue(V v) : value(v) {}
  MoveOnlyValue(MoveOnlyValue&&) = default;
  MoveOnlyValue& operator=(MoveOnlyValue&&) = default;
  MoveOnlyValue(const MoveOnlyValue&) = delete;
  MoveOnlyValue& operator=(const MoveOnlyValue&) = delete;
  ~MoveOnlyValue() = default;
};
static_assert(std::is_trivially_copyable_v<MoveOnlyValue<int>>);
static_assert(!std::is_copy_constructible_v<MoveOnlyValue<int>>);

// Such items take every path that appends to a run: a pulled source's loop, a stage that maps a
// run into a new type, a filter that appends its outputs one by one, and an in-order sink.
TEST(BatchRunsMoveOnly, TriviallyMovedItemsThatCannotBeCopiedArriveInOrder) {
  Watchdog watchdog;
  Pipeline p;
  std::int64_t expected = 0;
  std::uint64_t wrong = 0;
  p.source([next = 0]() mutable -> std::optional<MoveOnlyValue<int>> {
    if (next == static_cast<int>(items)) return std::nullopt;
    return MoveOnlyValue<int>(next++);
  }) |
      stage([](MoveOnlyValue<int> x) { return MoveOnlyValue<std::int64_t>(2 * x.value); },
            {.mode = Mode::parallel, .workers = 2, .batch = 16}) |
      stage(
          [](MoveOnlyValue<std::int64_t> x) -> std::optional<MoveOnlyValue<std::int64_t>> {
            return MoveOnlyValue<std::int64_t>(x.value + 1);
          },
          {.mode = Mode::parallel, .workers = 2, .batch = 16}) |
      sink(
          [&](MoveOnlyValue<std::int64_t> x) {
            if (x.value != 2 * expected + 1) ++wrong;
            ++expected;
          },
          {.mode = Mode::serial_in_order, .batch = 16});
  p.run();
  EXPECT_EQ(expected, static_cast<std::int64_t>(items));
  EXPECT_EQ(wrong, 0U);
}

// An item whose copy constructor is defaulted but whose move takes ownership, and whose destructor
// releases what it still owns: copying it into a batch and destroying the original would release
// a value that the copy still holds. The counts are relaxed: the sink's look is a quick check, and
// the exact count is read after run() has joined every worker.
class Owner {
 public:
  Owner(std::vector<std::atomic<int>>& released, int id) : released_(&released), id_(id) {}
  Owner(const Owner&) = default;
  Owner(Owner&& other) noexcept : released_(other.released_), id_(std::exchange(other.id_, -1)) {}
  Owner& operator=(const Owner&) = default;
  Owner& operator=(Owner&& other) noexcept {
    released_ = other.released_;
    id_ = std::exchange(other.id_, -1);
    return *this;
  }
  ~Owner() {
    if (id_ >= 0)
      (*released_)[static_cast<std::size_t>(id_)].fetch_add(1, std::memory_order_relaxed);
  }
  [[nodiscard]] int id() const { return id_; }
  [[nodiscard]] bool released() const {
    return (*released_)[static_cast<std::size_t>(id_)].load(std::memory_order_relaxed) != 0;
  }

 private:
  std::vector<std::atomic<int>>* released_;
  int id_;
};
static_assert(!std::is_trivially_copyable_v<Owner>);

// Such items are moved on every batched path, never copied: each reaches the sink still owning
// its value, and each value is released exactly once.
TEST(BatchRunsMoveOnly, ItemsWhoseMoveTakesOwnershipAreMovedNotCopied) {
  Watchdog watchdog;
  std::vector<std::atomic<int>> released(items);
  std::uint64_t received = 0;
  std::uint64_t wrong = 0;
  {
    Pipeline p;
    p.source([&released, next = 0]() mutable -> std::optional<Owner> {
      if (next == static_cast<int>(items)) return std::nullopt;
      return Owner(released, next++);
    }) |
        stage([](Owner x) { return std::optional<Owner>(std::move(x)); },
              {.mode = Mode::parallel, .workers = 2, .batch = 16}) |
        sink(
            [&](Owner x) {
              if (x.id() != static_cast<int>(received) || x.released()) ++wrong;
              ++received;
            },
            {.mode = Mode::serial_in_order, .batch = 16});
    p.run();
  }
  EXPECT_EQ(received, items);
  EXPECT_EQ(wrong, 0U);
  std::uint64_t once = 0;
  for (const auto& count : released)
    once += count.load(std::memory_order_relaxed) == 1 ? 1 : 0;
  EXPECT_EQ(once, items);
}

class BatchRunsTracked : public conveyor::testing::TrackedLeakCheck {};

// Move-only items, without assignment or a default constructor, are mapped in place: each output
// is built where its input was, and every one is destroyed once.
TEST_F(BatchRunsTracked, MoveOnlyItemsAreMappedInPlace) {
  Watchdog watchdog;
  Pipeline p;
  std::int64_t expected = 0;
  std::uint64_t wrong = 0;
  p.source([next = std::int64_t{0}]() mutable -> std::optional<Tracked> {
    if (next == static_cast<std::int64_t>(items)) return std::nullopt;
    return Tracked(next++);
  }) |
      stage([](Tracked t) { return Tracked(2 * t.value()); },
            {.mode = Mode::parallel, .workers = 2, .batch = 16}) |
      sink(
          [&](Tracked t) {
            if (t.value() != 2 * expected) ++wrong;
            ++expected;
          },
          {.mode = Mode::serial_in_order, .batch = 16});
  p.run();
  EXPECT_EQ(expected, static_cast<std::int64_t>(items));
  EXPECT_EQ(wrong, 0U);
}

enum class Thrower { source, in_place, typed, sink };

// A throw in the middle of a run (from the mapping code, in place or not, or from a sink that
// takes the run whole) or of a batch (from a pulled source) fails the pipeline, is rethrown, is
// counted once, and leaks nothing; the counts stop at the item that threw.
TEST_F(BatchRunsTracked, AThrowInTheMiddleOfARunFailsCleanly) {
  Watchdog watchdog;
  constexpr std::int64_t fatal = 1'000;
  for (Thrower thrower : {Thrower::source, Thrower::in_place, Thrower::typed, Thrower::sink}) {
    conveyor::PipelineStats stats;
    {
      Pipeline p;
      p.source([next = std::int64_t{0}, thrower]() mutable -> std::optional<Tracked> {
        if (thrower == Thrower::source && next == fatal) throw std::runtime_error("source failed");
        if (next == static_cast<std::int64_t>(items)) return std::nullopt;
        return Tracked(next++);
      }) |
          stage(
              [thrower](Tracked t) {
                if (thrower == Thrower::in_place && t.value() == fatal) {
                  throw std::runtime_error("in-place map failed");
                }
                return t;
              },
              {.mode = Mode::parallel, .workers = 1, .batch = 16}) |
          stage(
              [thrower](Tracked t) {
                if (thrower == Thrower::typed && t.value() == fatal) {
                  throw std::runtime_error("typed map failed");
                }
                return t.value();
              },
              {.mode = Mode::parallel, .workers = 1, .batch = 16}) |
          // Unordered, so that it takes each run whole (one path of one worker each: the items
          // still arrive in order).
          sink(
              [thrower](std::int64_t value) {
                if (thrower == Thrower::sink && value == fatal) {
                  throw std::runtime_error("sink failed");
                }
              },
              {.mode = Mode::serial_out_of_order, .batch = 16});
      EXPECT_THROW(p.run(), std::runtime_error);
      stats = p.stats();
    }  // what the channels still held is destroyed with the pipeline
    const std::size_t failed = static_cast<std::size_t>(thrower);
    EXPECT_EQ(stats.stages[failed].errors, 1U) << failed;
    if (thrower == Thrower::source) {
      // Every item the source returned before it threw, and nothing more.
      EXPECT_EQ(stats.stages[0].items_out, static_cast<std::uint64_t>(fatal));
    } else {
      // One worker, in order: every item up to the one that threw reached the code, and every
      // output before it was emitted.
      EXPECT_EQ(stats.stages[failed].items_in, static_cast<std::uint64_t>(fatal) + 1);
      if (thrower != Thrower::sink) {
        EXPECT_EQ(stats.stages[failed].items_out, static_cast<std::uint64_t>(fatal));
      }
    }
    EXPECT_EQ(Tracked::alive(), 0) << failed;
  }
}

}  // namespace
