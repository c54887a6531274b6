// Edge<T>: the channels between a stage and the stages after it: one lane from every producer
// worker to every consumer worker, each of its consumer stage's channel capacity. After a tee the
// consumers are the workers of every branch's first stage, one branch after another. Beside each
// lane runs a return ring on which the consumer hands emptied batch vectors back to the producer,
// so that after the first laps batching allocates nothing (and no memory is freed on another thread
// than the one that allocated it).
//
// Contract: built before the workers start and destroyed after they have all returned; the
// destructor destroys whatever items are still in the lanes (after an abort). `depth()` and
// `capacity()` (of all lanes, or of the lanes into some consumers) may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "conveyor/framework/detail/in_port.hpp"
#include "conveyor/framework/detail/out_port.hpp"
#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/sync/doorbell.hpp"
#include "conveyor/sync/spsc_ring.hpp"

namespace conveyor::detail {

class EdgeBase {
 public:
  virtual ~EdgeBase() = default;
  // Parcels in the lanes into consumers [first, first + count) (a snapshot), and what they can
  // hold.
  [[nodiscard]] virtual std::size_t depth(std::size_t first, std::size_t count) const = 0;
  [[nodiscard]] virtual std::size_t capacity(std::size_t first, std::size_t count) const = 0;
};

template <class T>
class Edge final : public EdgeBase {
 public:
  // `lane_capacities`: one per consumer worker, the capacity of each lane into it.
  Edge(std::size_t producers, const std::vector<std::size_t>& lane_capacities)
      : producers_(producers),
        consumers_(lane_capacities.size()),
        lanes_(std::make_unique<std::unique_ptr<Lane>[]>(producers * consumers_)),
        returns_(std::make_unique<std::unique_ptr<Return>[]>(producers * consumers_)) {
    for (std::size_t i = 0; i < producers * consumers_; ++i) {
      const std::size_t lane_capacity = lane_capacities[i % consumers_];
      lanes_[i] = std::make_unique<Lane>(lane_capacity);
      // Room for every batch that can be in the lane, plus the one in each worker's hands.
      returns_[i] = std::make_unique<Return>(lane_capacity + 2);
    }
  }

  [[nodiscard]] typename OutPort<T>::Lanes producer_side(
      std::size_t producer, const std::vector<Doorbell*>& consumer_bells) const {
    typename OutPort<T>::Lanes side;
    for (std::size_t consumer = 0; consumer < consumers_; ++consumer) {
      side.lanes.push_back(&lane(producer, consumer));
      side.returns.push_back(returns_[producer * consumers_ + consumer].get());
    }
    side.consumers = consumer_bells;
    return side;
  }

  [[nodiscard]] typename InPort<T>::Lanes consumer_side(
      std::size_t consumer, const std::vector<Doorbell*>& producer_bells) const {
    typename InPort<T>::Lanes side;
    for (std::size_t producer = 0; producer < producers_; ++producer) {
      side.lanes.push_back(&lane(producer, consumer));
      side.returns.push_back(returns_[producer * consumers_ + consumer].get());
    }
    side.producers = producer_bells;
    return side;
  }

  [[nodiscard]] std::size_t depth(std::size_t first, std::size_t count) const override {
    std::size_t total = 0;
    for (std::size_t producer = 0; producer < producers_; ++producer) {
      for (std::size_t consumer = first; consumer < first + count; ++consumer)
        total += lane(producer, consumer).size_approx();
    }
    return total;
  }

  [[nodiscard]] std::size_t capacity(std::size_t first, std::size_t count) const override {
    std::size_t total = 0;
    for (std::size_t producer = 0; producer < producers_; ++producer) {
      for (std::size_t consumer = first; consumer < first + count; ++consumer)
        total += lane(producer, consumer).capacity();
    }
    return total;
  }

 private:
  using Lane = sync::SpscRing<Parcel<T>>;
  using Return = sync::SpscRing<Batch<T>>;

  Lane& lane(std::size_t producer, std::size_t consumer) const {
    return *lanes_[producer * consumers_ + consumer];
  }

  const std::size_t producers_;
  const std::size_t consumers_;
  // producers x consumers, the producer's index first.
  const std::unique_ptr<std::unique_ptr<Lane>[]> lanes_;
  // Emptied batches on their way back to the producer, one ring beside each lane.
  const std::unique_ptr<std::unique_ptr<Return>[]> returns_;
};

}  // namespace conveyor::detail
