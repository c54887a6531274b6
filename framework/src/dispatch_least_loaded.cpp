// Dispatch::least_loaded(): each parcel goes into the lane that holds the fewest parcels, ties
// taking turns (least_loaded_lane); the port waits while every lane is full.
#include <cstddef>
#include <limits>
#include <vector>

#include "conveyor/framework/detail/dispatch_policy.hpp"
#include "conveyor/framework/detail/least_loaded.hpp"
#include "conveyor/framework/detail/out_lanes.hpp"
#include "conveyor/framework/options.hpp"

namespace conveyor::detail {

std::size_t least_loaded_lane(const std::vector<sync::detail::RingIndices*>& lanes,
                              std::size_t finger) {
  const std::size_t count = lanes.size();
  std::size_t best = count;
  std::size_t best_depth = std::numeric_limits<std::size_t>::max();
  for (std::size_t step = 0; step < count; ++step) {
    std::size_t lane = finger + step;
    if (lane >= count) lane -= count;
    if (lanes[lane]->free_slots() == 0) continue;
    const std::size_t depth = lanes[lane]->size_approx();
    if (depth < best_depth) {
      best = lane;
      best_depth = depth;
      if (depth == 0) break;  // nothing beats an empty lane
    }
  }
  return best;
}

namespace {

class LeastLoaded final : public DispatchPolicy {
 public:
  bool deliver(OutLanes& port, std::size_t /*lane*/, LanePush push) const override {
    for (;;) {
      const std::size_t lane = port.least_loaded();
      if (lane < port.lane_count() && push(lane, false)) {
        port.pushed_past_finger(lane);
        return true;
      }
      if (!port.wait_for_least_loaded()) return false;
    }
  }
};

}  // namespace

}  // namespace conveyor::detail

namespace conveyor {

Dispatch Dispatch::least_loaded() {
  return stateless<detail::LeastLoaded>(Kind::least_loaded);
}

}  // namespace conveyor
