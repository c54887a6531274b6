#include "conveyor/framework/detail/in_lanes.hpp"

#include <algorithm>
#include <utility>

#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::detail {

InLanes::InLanes(WorkerContext& worker, std::vector<sync::detail::RingIndices*> rings,
                 std::vector<Doorbell*> producers)
    : worker_(worker),
      rings_(std::move(rings)),
      producers_(std::move(producers)),
      finished_(rings_.size(), false),
      open_lanes_(rings_.size()) {
  CONVEYOR_CONTRACT(!rings_.empty() && rings_.size() == producers_.size(),
                    "InPort: one lane and one doorbell per producer worker");
  thresholds_.reserve(rings_.size());
  for (const auto* ring : rings_)
    thresholds_.push_back(std::max<std::size_t>(1, ring->capacity() / 2));
  worker_.add_recheck(
      {this, [](const void* self) { static_cast<const InLanes*>(self)->recheck(); }});
}

InLanes::~InLanes() {
  worker_.remove_recheck(this);
}

bool InLanes::ended() {
  for (std::size_t lane = 0; lane < rings_.size(); ++lane) {
    if (!finished_[lane] && rings_[lane]->finished()) {
      finished_[lane] = true;
      --open_lanes_;
    }
  }
  return open_lanes_ == 0;
}

void InLanes::recheck() const {
  for (std::size_t lane = 0; lane < rings_.size(); ++lane)
    producers_[lane]->ring_on_recheck(WaitReason::space, [&] { return half_free(lane); });
}

}  // namespace conveyor::detail
