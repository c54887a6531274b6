// least_loaded: the lane for Dispatch::least_loaded(): of the lanes with a free slot, the one
// whose ring holds the fewest parcels, ties going to the first at or after the finger (so that
// equally idle workers take turns, as with round-robin).
//
// Contract: called by the lanes' producer only (free_slots is a producer call). Returns
// `lanes.size()` if every lane is full. The depths are snapshots: a consumer may take parcels
// meanwhile, which only makes the choice a little stale, never wrong.
#pragma once

#include <cstddef>
#include <vector>

#include "conveyor/sync/detail/ring_indices.hpp"

namespace conveyor::detail {

std::size_t least_loaded_lane(const std::vector<sync::detail::RingIndices*>& lanes,
                              std::size_t finger);

}  // namespace conveyor::detail
