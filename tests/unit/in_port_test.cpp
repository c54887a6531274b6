// Unit tests for InPort (in_port.hpp) on real lanes, one worker, no threads: where an emptied batch
// goes back. Home first, to the producer whose parcel came last (or the lane named); on to the next
// producer with room when that ring is full; dropped only when every ring is full.
#include <gtest/gtest.h>

#include <cstddef>
#include <optional>

#include "conveyor/framework/detail/in_port.hpp"
#include "conveyor/framework/detail/parcel.hpp"
#include "lone_worker.hpp"

namespace {

using conveyor::detail::Batch;
using conveyor::detail::InPort;
using conveyor::detail::Parcel;
using conveyor::sync::SpscRing;
using conveyor::testing::LoneWorker;
using conveyor::testing::TestLanes;

constexpr std::size_t return_capacity = 2;

// A consumer worker with one lane (and one return ring) from each of `producers` producers.
class Consumer {
 public:
  explicit Consumer(std::size_t producers) : lanes_(producers, 4, return_capacity) {
    InPort<int>::Lanes side;
    for (std::size_t i = 0; i < producers; ++i) {
      side.lanes.push_back(lanes_.lanes[i].get());
      side.returns.push_back(lanes_.returns[i].get());
      side.producers.push_back(lanes_.bells[i].get());
    }
    port_.emplace(worker_.context, std::move(side));
  }

  InPort<int>& port() { return *port_; }
  SpscRing<Parcel<int>>& lane(std::size_t producer) { return *lanes_.lanes[producer]; }
  // How many batches wait in producer `producer`'s return ring.
  [[nodiscard]] std::size_t returned(std::size_t producer) const {
    return return_capacity - lanes_.returns[producer]->free_slots();
  }
  // The batch that waits first in producer `producer`'s return ring.
  std::optional<Batch<int>> take_returned(std::size_t producer) {
    return lanes_.returns[producer]->try_pop();
  }
  // Fills producer `producer`'s return ring.
  void fill_returns(std::size_t producer) {
    while (lanes_.returns[producer]->free_slots() > 0) {
      Batch<int> batch = filled(1);
      ASSERT_TRUE(lanes_.returns[producer]->try_push(batch));
    }
  }

  // A batch holding `count` items, with their storage.
  static Batch<int> filled(std::size_t count) {
    Batch<int> batch;
    for (std::size_t i = 0; i < count; ++i)
      batch.append_value(i, static_cast<int>(i));
    return batch;
  }

 private:
  TestLanes<int> lanes_;
  LoneWorker worker_;
  std::optional<InPort<int>> port_;
};

TEST(InPortTest, ABatchGoesBackToTheProducerWhoseParcelCameLast) {
  Consumer consumer(3);
  Parcel<int> parcel(Consumer::filled(8));
  ASSERT_TRUE(consumer.lane(1).try_push(parcel));
  std::optional<Parcel<int>> popped = consumer.port().try_pop();
  ASSERT_TRUE(popped.has_value());
  consumer.port().recycle(std::move(std::get<Batch<int>>(*popped)));
  EXPECT_EQ(consumer.returned(0), 0U);
  EXPECT_EQ(consumer.returned(1), 1U);
  EXPECT_EQ(consumer.returned(2), 0U);
}

TEST(InPortTest, ABatchForAFullRingGoesToTheNextProducerWithRoom) {
  Consumer consumer(3);
  consumer.fill_returns(1);
  consumer.fill_returns(2);
  consumer.port().recycle(Consumer::filled(8), 1);
  // Past the end of the producers, on from the first.
  EXPECT_EQ(consumer.returned(0), 1U);
  EXPECT_EQ(consumer.returned(1), return_capacity);
  EXPECT_EQ(consumer.returned(2), return_capacity);
}

TEST(InPortTest, ARecycledBatchComesBackEmptyWithItsStorage) {
  Consumer consumer(2);
  consumer.fill_returns(0);
  consumer.port().recycle(Consumer::filled(8), 0);
  std::optional<Batch<int>> back = consumer.take_returned(1);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->empty());
  EXPECT_GE(back->capacity(), 8U);
}

TEST(InPortTest, WhenEveryRingIsFullTheBatchIsDropped) {
  Consumer consumer(2);
  consumer.fill_returns(0);
  consumer.fill_returns(1);
  consumer.port().recycle(Consumer::filled(8), 0);
  EXPECT_EQ(consumer.returned(0), return_capacity);
  EXPECT_EQ(consumer.returned(1), return_capacity);
}

}  // namespace
