// least_loaded: the lane for Dispatch::least_loaded(): of the lanes with a free slot, the one
// whose ring holds the fewest parcels, ties going to the first at or after the finger (so that
// equally idle workers take turns, as with round-robin).
//
// Contract: called by the lanes' producer only (free_slots is a producer call). Returns
// `lanes.size()` if every lane is full. The depths are snapshots: a consumer may take parcels
// meanwhile, which only makes the choice a little stale, never wrong.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "conveyor/sync/spsc_ring.hpp"

namespace conveyor::detail {

template <class Element>
std::size_t least_loaded_lane(const std::vector<sync::SpscRing<Element>*>& lanes,
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
