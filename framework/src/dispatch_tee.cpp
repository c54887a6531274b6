// The edge out of a tee: every branch gets every parcel (a copy, and the original into the last
// branch), into the next lane of that branch with a free slot, starting at the parcel's turn; the
// port waits while every lane of a branch is full, until any of them has room. A branch whose
// first stage has a keyed dispatch gets the parcel in the lane of its key only, and one whose first
// stage broadcasts gets a copy in every lane.
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "branch_heads.hpp"
#include "conveyor/framework/detail/dispatch_policy.hpp"
#include "conveyor/framework/detail/out_lanes.hpp"

namespace conveyor::detail {
namespace {

class Tee final : public DispatchPolicy {
 public:
  Tee(std::vector<std::size_t> starts, BranchHeads heads)
      : starts_(std::move(starts)), heads_(std::move(heads)) {
    check_branch_heads(heads_);
  }

  [[nodiscard]] bool copies() const noexcept override { return true; }

  bool deliver(OutLanes& port, std::size_t /*lane*/, LanePush push) const override {
    const std::size_t turn = port.take_turn();
    const std::size_t branches = starts_.size() - 1;
    for (std::size_t branch = 0; branch < branches; ++branch) {
      const std::size_t first = starts_[branch];
      const std::size_t count = starts_[branch + 1] - first;
      const bool copy = branch + 1 != branches;
      const DispatchPolicy* head = heads_[branch];
      std::size_t lane = first + turn % count;
      if (head != nullptr && head->keyed()) {
        const LanePush::Item item = push.item();
        lane = first + head->lane_of(item.value, item.seq, count);
      }
      if (!push_into_branch(port, head, first, count, lane, copy, push)) return false;
    }
    return true;
  }

 private:
  const std::vector<std::size_t> starts_;
  const BranchHeads heads_;
};

}  // namespace

std::shared_ptr<const DispatchPolicy> tee_dispatch(std::vector<std::size_t> starts,
                                                   BranchHeads heads) {
  return std::make_shared<const Tee>(std::move(starts), std::move(heads));
}

}  // namespace conveyor::detail
