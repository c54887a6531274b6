// Edge<T>: the channels between two neighbouring stages: one lane from every producer worker to
// every consumer worker, each of the consumer stage's channel capacity. Beside each lane runs a
// return ring on which the consumer hands emptied batch vectors back to the producer, so that
// after the first laps batching allocates nothing (and no memory is freed on another thread than
// the one that allocated it).
//
// Contract: built before the workers start and destroyed after they have all returned; the
// destructor destroys whatever items are still in the lanes (after an abort). `depth()` and
// `capacity()` may be called from any thread.
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
  // Parcels in all lanes (a snapshot), and what they can hold.
  [[nodiscard]] virtual std::size_t depth() const = 0;
  [[nodiscard]] virtual std::size_t capacity() const = 0;
};

template <class T>
class Edge final : public EdgeBase {
 public:
  Edge(std::size_t producers, std::size_t consumers, std::size_t lane_capacity)
      : producers_(producers),
        consumers_(consumers),
        lanes_(std::make_unique<std::unique_ptr<Lane>[]>(producers * consumers)),
        returns_(std::make_unique<std::unique_ptr<Return>[]>(producers * consumers)) {
    for (std::size_t i = 0; i < producers * consumers; ++i) {
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

  [[nodiscard]] std::size_t depth() const override {
    std::size_t total = 0;
    for (std::size_t i = 0; i < producers_ * consumers_; ++i)
      total += lanes_[i]->size_approx();
    return total;
  }

  [[nodiscard]] std::size_t capacity() const override {
    std::size_t total = 0;
    for (std::size_t i = 0; i < producers_ * consumers_; ++i)
      total += lanes_[i]->capacity();
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
