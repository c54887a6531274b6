// Unit tests for InPort (in_port.hpp) on real lanes, one worker, no threads: where an emptied batch
// goes back. Home first, to the producer whose parcel came last (or the lane named); on to the next
// producer with room when that ring is full; dropped only when every ring is full.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "conveyor/framework/detail/in_port.hpp"
#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/framework/detail/worker_context.hpp"

namespace {

using conveyor::detail::Batch;
using conveyor::detail::Control;
using conveyor::detail::InPort;
using conveyor::detail::Parcel;
using conveyor::detail::WorkerContext;
using conveyor::detail::WorkerCounters;
using conveyor::sync::Doorbell;
using conveyor::sync::SpscRing;

constexpr std::size_t return_capacity = 2;

// A consumer worker with one lane (and one return ring) from each of `producers` producers.
class Consumer {
 public:
  explicit Consumer(std::size_t producers) {
    InPort<int>::Lanes side;
    for (std::size_t i = 0; i < producers; ++i) {
      lanes_.push_back(std::make_unique<SpscRing<Parcel<int>>>(4));
      returns_.push_back(std::make_unique<SpscRing<Batch<int>>>(return_capacity));
      bells_.push_back(std::make_unique<Doorbell>());
      side.lanes.push_back(lanes_.back().get());
      side.returns.push_back(returns_.back().get());
      side.producers.push_back(bells_.back().get());
    }
    port_.emplace(context_, std::move(side));
  }

  InPort<int>& port() { return *port_; }
  SpscRing<Parcel<int>>& lane(std::size_t producer) { return *lanes_[producer]; }
  // How many batches wait in producer `producer`'s return ring.
  [[nodiscard]] std::size_t returned(std::size_t producer) const {
    return return_capacity - returns_[producer]->free_slots();
  }
  // The batch that waits first in producer `producer`'s return ring.
  std::optional<Batch<int>> take_returned(std::size_t producer) {
    return returns_[producer]->try_pop();
  }
  // Fills producer `producer`'s return ring.
  void fill_returns(std::size_t producer) {
    while (returns_[producer]->free_slots() > 0) {
      Batch<int> batch = filled(1);
      ASSERT_TRUE(returns_[producer]->try_push(batch));
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
  std::vector<std::unique_ptr<SpscRing<Parcel<int>>>> lanes_;
  std::vector<std::unique_ptr<SpscRing<Batch<int>>>> returns_;
  std::vector<std::unique_ptr<Doorbell>> bells_;
  Doorbell bell_;
  Control control_;
  WorkerCounters counters_;
  WorkerContext context_{bell_, control_, counters_, 0};
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
