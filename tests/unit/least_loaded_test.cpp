// Unit tests for Dispatch::least_loaded(): the lane it picks (the fewest parcels, ties taking
// turns, full lanes skipped), and pipelines that use it delivering every item once, in order
// after an in-order stage, while one worker is stuck on an item.
#include "conveyor/framework/detail/least_loaded.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "conveyor/framework.hpp"
#include "pipeline_support.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Channel;
using conveyor::Dispatch;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::detail::least_loaded_lane;
using conveyor::sync::SpscRing;
using conveyor::testing::add_to;
using conveyor::testing::count_to;
using conveyor::testing::expected_tally;
using conveyor::testing::SharedTally;
using conveyor::testing::Tally;
using conveyor::testing::Watchdog;

class Lanes {
 public:
  Lanes(std::size_t count, std::size_t capacity) {
    for (std::size_t i = 0; i < count; ++i) {
      owned_.push_back(std::make_unique<SpscRing<int>>(capacity));
      indices_.push_back(owned_.back().get());
    }
  }
  void fill(std::size_t lane, int parcels) {
    for (int i = 0; i < parcels; ++i) {
      int value = i;
      ASSERT_TRUE(owned_[lane]->try_push(value));
    }
  }
  [[nodiscard]] const std::vector<conveyor::sync::detail::RingIndices*>& lanes() const {
    return indices_;
  }

 private:
  std::vector<std::unique_ptr<SpscRing<int>>> owned_;
  std::vector<conveyor::sync::detail::RingIndices*> indices_;
};

TEST(LeastLoadedLaneTest, PicksTheLaneWithTheFewestParcels) {
  Lanes lanes(3, 8);
  lanes.fill(0, 3);
  lanes.fill(1, 1);
  lanes.fill(2, 2);
  EXPECT_EQ(least_loaded_lane(lanes.lanes(), 0), 1U);
  EXPECT_EQ(least_loaded_lane(lanes.lanes(), 2), 1U);
}

TEST(LeastLoadedLaneTest, TiesGoToTheFirstAtOrAfterTheFinger) {
  Lanes lanes(3, 8);
  EXPECT_EQ(least_loaded_lane(lanes.lanes(), 0), 0U);
  EXPECT_EQ(least_loaded_lane(lanes.lanes(), 1), 1U);
  EXPECT_EQ(least_loaded_lane(lanes.lanes(), 2), 2U);
  lanes.fill(0, 1);
  lanes.fill(2, 1);
  lanes.fill(1, 2);
  EXPECT_EQ(least_loaded_lane(lanes.lanes(), 1), 2U);  // 2 and 0 tie; 2 comes first from 1
}

TEST(LeastLoadedLaneTest, SkipsFullLanesAndReportsWhenAllAreFull) {
  Lanes lanes(2, 2);
  lanes.fill(0, 2);
  lanes.fill(1, 1);
  EXPECT_EQ(least_loaded_lane(lanes.lanes(), 0), 1U);
  lanes.fill(1, 1);
  EXPECT_EQ(least_loaded_lane(lanes.lanes(), 0), 2U);  // none has room
}

struct Shape {
  Channel channel;
  std::size_t batch;
};

class LeastLoadedPipelineTest : public ::testing::TestWithParam<Shape> {};

TEST_P(LeastLoadedPipelineTest, EveryItemOnceAndInOrderAfterAnInOrderSink) {
  Watchdog watchdog;
  const auto [channel, batch] = GetParam();
  constexpr std::uint64_t count = 20'000;
  Pipeline p;
  std::uint64_t expected_next = 0;
  std::uint64_t out_of_order = 0;
  Tally tally;
  p.source(count_to(count)) |
      stage([](std::uint64_t x) { return x; }, {.mode = Mode::parallel,
                                                .workers = 3,
                                                .channel = channel,
                                                .dispatch = Dispatch::least_loaded(),
                                                .batch = batch}) |
      sink(
          [&](std::uint64_t x) {
            if (x != expected_next) ++out_of_order;
            expected_next = x + 1;
            tally.add(x);
          },
          {.mode = Mode::serial_in_order, .channel = channel, .batch = batch});
  p.run();
  EXPECT_EQ(out_of_order, 0U);
  EXPECT_EQ(tally, expected_tally(count));
}

TEST_P(LeastLoadedPipelineTest, EveryItemOnceIntoAParallelSink) {
  Watchdog watchdog;
  const auto [channel, batch] = GetParam();
  constexpr std::uint64_t count = 20'000;
  Pipeline p;
  SharedTally tally;
  p.source(count_to(count)) | sink(add_to(tally), {.mode = Mode::parallel,
                                                   .workers = 2,
                                                   .channel = channel,
                                                   .dispatch = Dispatch::least_loaded(),
                                                   .batch = batch});
  p.run();
  EXPECT_EQ(tally.get(), expected_tally(count));
}

INSTANTIATE_TEST_SUITE_P(Shapes, LeastLoadedPipelineTest,
                         ::testing::Values(Shape{Channel::mailbox(), 1},
                                           Shape{Channel::queue(4), 1},
                                           Shape{Channel::queue(64), 1},
                                           Shape{Channel::queue(4), 16}));

// One worker is stuck on its first item until the other has taken the rest: the source keeps
// going (the stuck worker's lane is never the least loaded once it holds a parcel), and nothing
// is lost or waits for ever.
TEST(LeastLoadedPipelineTest, AStuckWorkerDoesNotHoldUpTheOthers) {
  Watchdog watchdog;
  constexpr std::uint64_t count = 2'000;
  std::atomic<bool> stuck_claimed{false};
  std::atomic<std::uint64_t> taken_by_others{0};
  std::latch release(1);
  SharedTally tally;
  Pipeline p;
  p.source(count_to(count)) | sink(
                                  [&](std::uint64_t x) {
                                    thread_local bool stuck = false;
                                    if (!stuck_claimed.exchange(true, std::memory_order_relaxed)) {
                                      stuck = true;
                                      release.wait();
                                    }
                                    if (!stuck) taken_by_others.fetch_add(1);
                                    tally.add(x);
                                  },
                                  {.mode = Mode::parallel,
                                   .workers = 2,
                                   .channel = Channel::queue(8),
                                   .dispatch = Dispatch::least_loaded()});
  std::thread releaser([&] {
    // The other worker takes all but the stuck item and what waits in the stuck worker's lane.
    while (taken_by_others.load() + 1 + 8 < count)
      std::this_thread::yield();
    release.count_down();
  });
  p.run();
  releaser.join();
  EXPECT_EQ(tally.get(), expected_tally(count));
}

}  // namespace
