// Unit tests for the policies an OutPort is composed of (port/make_out_port.hpp), each on real
// lanes, one worker, no threads: how the numbered and forwarded tagging policies tag what a worker
// emits, when the batching policy ships, where each dispatch policy puts a parcel, and what a
// route's port (the only one that sends gaps to other branches) does.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "conveyor/framework/detail/dispatch_policy.hpp"
#include "conveyor/framework/detail/out_port.hpp"
#include "conveyor/framework/detail/port/make_out_port.hpp"
#include "conveyor/framework/detail/worker_context.hpp"
#include "conveyor/framework/options.hpp"
#include "lone_worker.hpp"

namespace {

using conveyor::Dispatch;
using conveyor::detail::Batch;
using conveyor::detail::Entry;
using conveyor::detail::make_out_port;
using conveyor::detail::OutPort;
using conveyor::detail::Parcel;
using conveyor::detail::Tag;
using conveyor::detail::Tagging;
using conveyor::detail::WorkerCounters;
using conveyor::testing::LoneWorker;
using conveyor::testing::TestLanes;

// What one parcel held: each entry's number, offset and width (nullopt value: a gap).
struct Seen {
  std::uint64_t seq;
  std::uint64_t offset;
  std::uint64_t width;
  std::optional<int> value;
  bool operator==(const Seen&) const = default;
};

// A producer worker with `lanes` lanes of `capacity` parcels to as many consumers.
class Producer {
 public:
  Producer(std::size_t lanes, std::size_t capacity) : lanes_(lanes, capacity, capacity + 2) {}

  // `routes`: a route's port (route.hpp makes those).
  std::unique_ptr<OutPort<int>> port(const Dispatch& dispatch, std::size_t batch, Tagging tagging,
                                     bool routes = false) {
    OutPort<int>::Lanes side;
    for (std::size_t i = 0; i < lanes_.lanes.size(); ++i) {
      side.lanes.push_back(lanes_.lanes[i].get());
      side.returns.push_back(lanes_.returns[i].get());
      side.consumers.push_back(lanes_.bells[i].get());
    }
    const conveyor::detail::PortChoice choice{
        .dispatch = &dispatch, .batch = batch, .tagging = tagging};
    if (routes)
      return make_out_port<int, true, true>(worker_.context, worker_.counters, side, choice);
    return make_out_port<int>(worker_.context, worker_.counters, side, choice);
  }

  // Parcels waiting in lane `lane`, in order, each as the entries it holds.
  std::vector<std::vector<Seen>> drain(std::size_t lane) {
    std::vector<std::vector<Seen>> parcels;
    while (std::optional<Parcel<int>> parcel = lanes_.lanes[lane]->try_pop()) {
      std::vector<Seen> entries;
      auto add = [&](const Tag& tag, const int* value) {
        entries.push_back(Seen{tag.seq, tag.offset, tag.width,
                               value != nullptr ? std::optional<int>(*value) : std::nullopt});
      };
      if (auto* entry = std::get_if<Entry<int>>(&*parcel)) {
        add(entry->tag, entry->value ? &*entry->value : nullptr);
      } else {
        std::get<Batch<int>>(*parcel).for_each(add);
      }
      parcels.push_back(std::move(entries));
    }
    return parcels;
  }

  [[nodiscard]] bool closed(std::size_t lane) const { return lanes_.lanes[lane]->closed(); }
  [[nodiscard]] const WorkerCounters& counters() const { return worker_.counters; }

 private:
  TestLanes<int> lanes_;
  LoneWorker worker_;
};

constexpr std::uint64_t whole = Tag::whole;

Seen item(std::uint64_t seq, int value) {
  return Seen{seq, 0, whole, value};
}

// --- Tagging ---

TEST(OutPortPoliciesTest, ANumberedPortNumbersWhatItEmits) {
  Producer producer(1, 16);
  const Dispatch dispatch = Dispatch::round_robin();
  auto port = producer.port(dispatch, 1, Tagging::sequencer);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(port->emit(10 + i));
  EXPECT_EQ(producer.drain(0),
            (std::vector<std::vector<Seen>>{{item(0, 10)}, {item(1, 11)}, {item(2, 12)}}));
  EXPECT_EQ(producer.counters().items_out.load(), 3U);
}

TEST(OutPortPoliciesTest, AForwardingPortKeepsItsInputsTagsSplitsThemAndLeavesGaps) {
  Producer producer(1, 16);
  const Dispatch dispatch = Dispatch::round_robin();
  auto port = producer.port(dispatch, 1, Tagging::forward);
  port->begin_item(Tag::fresh(7));  // one output: the input's tag
  ASSERT_TRUE(port->emit(70));
  ASSERT_TRUE(port->end_item());
  port->begin_item(Tag::fresh(8));  // none: a gap
  ASSERT_TRUE(port->end_item());
  port->begin_item(Tag::fresh(9));  // two: halves of its width
  ASSERT_TRUE(port->emit(90));
  ASSERT_TRUE(port->emit(91));
  ASSERT_TRUE(port->end_item());
  ASSERT_TRUE(port->emit(5));  // outside an input: unsequenced
  EXPECT_EQ(producer.drain(0),
            (std::vector<std::vector<Seen>>{{item(7, 70)},
                                            {Seen{8, 0, whole, std::nullopt}},
                                            {Seen{9, 0, whole / 2, 90}},
                                            {Seen{9, whole / 2, whole / 2, 91}},
                                            {Seen{Tag::unsequenced_seq, 0, whole, 5}}}));
}

// --- Batching ---

TEST(OutPortPoliciesTest, ABatchingPortShipsFullBatchesAndFlushesTheRest) {
  Producer producer(1, 16);
  const Dispatch dispatch = Dispatch::round_robin();
  auto port = producer.port(dispatch, 3, Tagging::none);
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(port->emit(int{i}));
  auto parcels = producer.drain(0);
  ASSERT_EQ(parcels.size(), 1U);  // the fourth waits for more
  EXPECT_EQ(parcels[0], (std::vector<Seen>{item(0, 0), item(1, 1), item(2, 2)}));
  ASSERT_TRUE(port->flush());
  EXPECT_EQ(producer.drain(0), (std::vector<std::vector<Seen>>{{item(3, 3)}}));
  port->close();
  EXPECT_TRUE(producer.closed(0));
}

TEST(OutPortPoliciesTest, ABatchingPortTakesARunWholeAfterWhatItCollected) {
  Producer producer(1, 16);
  const Dispatch dispatch = Dispatch::round_robin();
  auto port = producer.port(dispatch, 4, Tagging::forward);
  ASSERT_TRUE(port->takes_runs_of(4));
  EXPECT_FALSE(port->takes_runs_of(5));
  port->begin_item(Tag::fresh(0));
  ASSERT_TRUE(port->emit(100));
  ASSERT_TRUE(port->end_item());
  Batch<int> run = port->fresh_batch();
  run.extend_run(1) = {101, 102};
  ASSERT_TRUE(port->send_run(std::move(run)));
  EXPECT_EQ(producer.drain(0),
            (std::vector<std::vector<Seen>>{{item(0, 100)}, {item(1, 101), item(2, 102)}}));
}

TEST(OutPortPoliciesTest, ASequencerNeitherTakesRunsNorForwards) {
  Producer producer(1, 16);
  const Dispatch dispatch = Dispatch::round_robin();
  auto sequencer = producer.port(dispatch, 4, Tagging::sequencer);
  EXPECT_FALSE(sequencer->takes_runs_of(1));
  EXPECT_TRUE(sequencer->pulls());
  auto forwarding = producer.port(dispatch, 4, Tagging::forward);
  EXPECT_FALSE(forwarding->pulls());
  auto unbatched = producer.port(dispatch, 1, Tagging::none);
  EXPECT_FALSE(unbatched->takes_runs_of(1));
  EXPECT_FALSE(unbatched->pulls());
}

TEST(OutPortPoliciesTest, APulledSourceFillsBatchesStraightFromItsCode) {
  Producer producer(1, 16);
  const Dispatch dispatch = Dispatch::round_robin();
  auto port = producer.port(dispatch, 2, Tagging::sequencer);
  int next = 0;
  EXPECT_TRUE(port->pull([&]() -> std::optional<int> {
    if (next == 5) return std::nullopt;
    return next++;
  }));
  port->close();
  EXPECT_EQ(producer.drain(0),
            (std::vector<std::vector<Seen>>{
                {item(0, 0), item(1, 1)}, {item(2, 2), item(3, 3)}, {item(4, 4)}}));
  EXPECT_EQ(producer.counters().items_out.load(), 5U);
}

// --- Dispatch ---

TEST(OutPortPoliciesTest, RoundRobinTakesTurns) {
  Producer producer(3, 4);
  const Dispatch dispatch = Dispatch::round_robin();
  auto port = producer.port(dispatch, 1, Tagging::none);
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(port->emit(int{i}));
  for (std::size_t lane = 0; lane < 3; ++lane) {
    const int first = static_cast<int>(lane);
    EXPECT_EQ(producer.drain(lane),
              (std::vector<std::vector<Seen>>{{item(lane, first)}, {item(lane + 3, first + 3)}}));
  }
}

// The port pushes into the finger's lane itself; when that lane is full, the policy goes on to
// the next lane with room.
TEST(OutPortPoliciesTest, RoundRobinPassesOverAFullLane) {
  Producer producer(2, 2);
  const Dispatch dispatch = Dispatch::round_robin();
  auto port = producer.port(dispatch, 1, Tagging::none);
  for (int i = 0; i < 3; ++i)  // lanes 0, 1, 0: lane 0 is full
    ASSERT_TRUE(port->emit(int{i}));
  EXPECT_EQ(producer.drain(1), (std::vector<std::vector<Seen>>{{item(1, 1)}}));
  ASSERT_TRUE(port->emit(3));  // the finger is at lane 1 again, which has room
  ASSERT_TRUE(port->emit(4));  // lane 0 is full: lane 1
  EXPECT_EQ(producer.drain(0), (std::vector<std::vector<Seen>>{{item(0, 0)}, {item(2, 2)}}));
  EXPECT_EQ(producer.drain(1), (std::vector<std::vector<Seen>>{{item(3, 3)}, {item(4, 4)}}));
}

TEST(OutPortPoliciesTest, ByKeySendsEqualKeysToOneLaneAndCollectsABatchPerLane) {
  Producer producer(2, 8);
  const Dispatch dispatch = Dispatch::by_partition([](int x) { return static_cast<unsigned>(x); });
  auto port = producer.port(dispatch, 2, Tagging::none);
  for (int i : {0, 1, 2, 3, 4})
    ASSERT_TRUE(port->emit(int{i}));
  ASSERT_TRUE(port->flush());
  EXPECT_EQ(producer.drain(0),
            (std::vector<std::vector<Seen>>{{item(0, 0), item(2, 2)}, {item(4, 4)}}));
  EXPECT_EQ(producer.drain(1), (std::vector<std::vector<Seen>>{{item(1, 1), item(3, 3)}}));
}

TEST(OutPortPoliciesTest, BroadcastPutsEveryParcelIntoEveryLane) {
  Producer producer(3, 4);
  const Dispatch dispatch = Dispatch::broadcast();
  for (std::size_t batch : {1U, 2U}) {
    auto port = producer.port(dispatch, batch, Tagging::none);
    ASSERT_TRUE(port->emit(1));
    ASSERT_TRUE(port->emit(2));
    ASSERT_TRUE(port->flush());
    for (std::size_t lane = 0; lane < 3; ++lane) {
      std::vector<Seen> seen;
      for (auto& parcel : producer.drain(lane))
        seen.insert(seen.end(), parcel.begin(), parcel.end());
      EXPECT_EQ(seen, (std::vector<Seen>{item(0, 1), item(1, 2)})) << "batch " << batch;
    }
  }
}

TEST(OutPortPoliciesTest, LeastLoadedFillsTheEmptiestLane) {
  Producer producer(2, 8);
  const Dispatch dispatch = Dispatch::least_loaded();
  auto port = producer.port(dispatch, 1, Tagging::none);
  ASSERT_TRUE(port->emit(0));  // both empty: lane 0
  ASSERT_TRUE(port->emit(1));  // lane 1 holds fewer
  EXPECT_EQ(producer.drain(0).size(), 1U);
  ASSERT_TRUE(port->emit(2));  // lane 0 is empty again
  ASSERT_TRUE(port->emit(3));  // lanes hold one each: the finger's turn (lane 1)
  EXPECT_EQ(producer.drain(0), (std::vector<std::vector<Seen>>{{item(2, 2)}}));
  EXPECT_EQ(producer.drain(1), (std::vector<std::vector<Seen>>{{item(1, 1)}, {item(3, 3)}}));
}

// --- A route's port ---

// A route of two branches of one lane each: even items to branch 0, the rest to branch 1;
// `ordered`: which branches restore order.
Dispatch even_odd_route(std::vector<bool> ordered) {
  conveyor::detail::RouteCases cases{
      .predicates = 1, .classify = [](const void* items, std::size_t count, std::uint32_t* to) {
        const int* values = static_cast<const int*>(items);
        for (std::size_t i = 0; i < count; ++i)
          to[i] = values[i] % 2 == 0 ? 0 : 1;
      }};
  return conveyor::detail::branch_dispatch(conveyor::detail::route_dispatch(
      {0, 1, 2}, std::move(cases), std::move(ordered), {nullptr, nullptr}));
}

// The values a lane's parcels hold, and how many of their entries are gaps.
struct Held {
  std::vector<int> values;
  std::size_t gaps = 0;
};

Held held(const std::vector<std::vector<Seen>>& parcels) {
  Held result;
  for (const auto& parcel : parcels) {
    for (const Seen& entry : parcel) {
      if (entry.value) {
        result.values.push_back(*entry.value);
      } else {
        ++result.gaps;
      }
    }
  }
  return result;
}

TEST(OutPortPoliciesTest, ARoutesPortSendsEachItemToItsBranch) {
  Producer producer(2, 8);
  const Dispatch dispatch = even_odd_route({false, false});
  for (std::size_t batch : {1U, 4U}) {
    auto port = producer.port(dispatch, batch, Tagging::none, true);
    for (int i : {0, 1, 2, 3})
      ASSERT_TRUE(port->emit(int{i}));
    ASSERT_TRUE(port->flush());
    const Held even = held(producer.drain(0));
    const Held odd = held(producer.drain(1));
    EXPECT_EQ(even.values, (std::vector<int>{0, 2})) << "batch " << batch;
    EXPECT_EQ(odd.values, (std::vector<int>{1, 3})) << "batch " << batch;
    // No branch restores order: no gaps.
    EXPECT_EQ(even.gaps + odd.gaps, 0U) << "batch " << batch;
  }
}

// Numbered for in-order branches, each branch also hears of the numbers that went to the other,
// so that its in-order stage does not wait for them.
TEST(OutPortPoliciesTest, ARoutesPortSendsInOrderBranchesTheOthersNumbersAsGaps) {
  Producer producer(2, 8);
  const Dispatch dispatch = even_odd_route({true, true});
  auto port = producer.port(dispatch, 1, Tagging::sequencer, true);
  for (int i : {0, 1, 2, 3})
    ASSERT_TRUE(port->emit(int{i}));
  ASSERT_TRUE(port->flush());
  const Held even = held(producer.drain(0));
  const Held odd = held(producer.drain(1));
  EXPECT_EQ(even.values, (std::vector<int>{0, 2}));
  EXPECT_EQ(odd.values, (std::vector<int>{1, 3}));
  EXPECT_GT(even.gaps, 0U);
  EXPECT_GT(odd.gaps, 0U);
}

// Every other edge's port leaves the route's code out, and cannot serve a route's edge.
TEST(OutPortPoliciesDeathTest, APlainPortForARoutesEdgeIsAContractViolation) {
  EXPECT_DEATH(
      {
        Producer producer(2, 8);
        const Dispatch dispatch = even_odd_route({false, false});
        (void)producer.port(dispatch, 1, Tagging::none);
      },
      "a route's edge has a route's port");
}

}  // namespace
