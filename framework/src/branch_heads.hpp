// How a tee's or a route's edge policy places a parcel in one branch, as the branch's first stage
// says (BranchHeads, dispatch_policy.hpp). Shared by dispatch_tee.cpp and dispatch_route.cpp.
//
// Contract: called on a producer's worker with its port, as DispatchPolicy::deliver is.
#pragma once

#include <cstddef>

#include "conveyor/framework/detail/dispatch_policy.hpp"
#include "conveyor/framework/detail/out_lanes.hpp"
#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::detail {

// Every head is null, keyed, or copies.
inline void check_branch_heads(const BranchHeads& heads) {
  for (const DispatchPolicy* head : heads) {
    CONVEYOR_CONTRACT(head == nullptr || head->keyed() || head->copies(),
                      "branch heads: a head is keyed or copies");
  }
}

// Pushes the parcel into the branch whose lanes are [first, first + count) (a copy if `copy`):
// into `lane` alone under a keyed head; into every lane under one that copies (the last lane gets
// the original unless `copy`); otherwise into the first lane with room from `lane` on. Waits for
// room; false on cancellation.
inline bool push_into_branch(OutLanes& port, const DispatchPolicy* head, std::size_t first,
                             std::size_t count, std::size_t lane, bool copy, LanePush push) {
  if (head != nullptr && head->keyed()) return port.push_waiting(lane, copy, push);
  if (head != nullptr) {
    for (std::size_t each = first; each < first + count; ++each) {
      if (!port.push_waiting(each, copy || each + 1 != first + count, push)) return false;
    }
    return true;
  }
  return port.push_waiting(first, count, lane, copy, push);
}

}  // namespace conveyor::detail
