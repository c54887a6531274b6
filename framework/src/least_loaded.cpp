#include "conveyor/framework/detail/least_loaded.hpp"

#include <limits>

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

}  // namespace conveyor::detail
