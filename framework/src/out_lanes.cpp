#include "conveyor/framework/detail/out_lanes.hpp"

#include <utility>

#include "conveyor/framework/detail/least_loaded.hpp"
#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::detail {

OutLanes::OutLanes(WorkerContext& worker, WorkerCounters& counters,
                   std::vector<sync::detail::RingIndices*> rings, std::vector<Doorbell*> consumers,
                   WindowGate* gate)
    : worker_(worker),
      counters_(counters),
      rings_(std::move(rings)),
      consumers_(std::move(consumers)),
      gate_(gate) {
  CONVEYOR_CONTRACT(!rings_.empty() && rings_.size() == consumers_.size(),
                    "OutPort: one lane and one doorbell per consumer worker");
  wakes_.reserve(rings_.size());
  for (const auto* ring : rings_)
    wakes_.emplace_back(ring->capacity(), worker_.owed());
  worker_.add_recheck(
      {this, [](const void* self) { static_cast<const OutLanes*>(self)->recheck(); }});
}

OutLanes::OutLanes(WorkerContext& worker, WorkerCounters& counters) noexcept
    : worker_(worker), counters_(counters), gate_(nullptr) {}

OutLanes::~OutLanes() {
  if (!rings_.empty()) worker_.remove_recheck(this);
}

std::size_t OutLanes::least_loaded() const {
  return least_loaded_lane(rings_, finger_);
}

bool OutLanes::wait_for_least_loaded() {
  return worker_.wait(
      WaitReason::space, [this] { return least_loaded() < rings_.size(); }, [] {},
      counters_.blocked_push_ticks);
}

void OutLanes::close_lanes() {
  for (sync::detail::RingIndices* ring : rings_)
    ring->close();
  for (Doorbell* consumer : consumers_)
    consumer->ring(WaitReason::items);
  if (worker_.owed() != nullptr) worker_.owed()->deliver();
}

void OutLanes::recheck() const {
  for (std::size_t lane = 0; lane < rings_.size(); ++lane) {
    consumers_[lane]->ring_on_recheck(WaitReason::items,
                                      [&] { return rings_[lane]->size_approx() > 0; });
  }
}

}  // namespace conveyor::detail
