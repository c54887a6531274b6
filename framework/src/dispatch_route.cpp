// The edge out of a route: each item goes to the first branch whose predicate it matches, else to
// the last branch (the default), into the lane of that branch its number picks, or, if that lane
// is full, the next lane of the branch with a free slot; the port waits while every lane of the
// branch is full, until any of them has room. A branch whose first stage has a keyed dispatch takes
// the item in the lane of its key only, and one whose first stage broadcasts takes a copy in every
// lane. On a numbered edge every other branch that
// restores order gets a gap with the item's tag (gap_lanes), so that its in-order stage does not
// wait for the number. A run is split by branch (branches, branches_of, branch_lane) into one
// sparse batch per branch.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "branch_heads.hpp"
#include "conveyor/framework/detail/dispatch_policy.hpp"
#include "conveyor/framework/detail/out_lanes.hpp"

namespace conveyor::detail {
namespace {

class Route final : public DispatchPolicy {
 public:
  Route(std::vector<std::size_t> starts, RouteCases cases, std::vector<bool> ordered,
        BranchHeads heads)
      : starts_(std::move(starts)),
        cases_(std::move(cases)),
        ordered_(std::move(ordered)),
        heads_(std::move(heads)),
        broadcasts_(std::any_of(
            heads_.begin(), heads_.end(),
            [](const DispatchPolicy* head) { return head != nullptr && head->copies(); })),
        keyed_heads_(std::any_of(heads_.begin(), heads_.end(), [](const DispatchPolicy* head) {
          return head != nullptr && head->keyed();
        })) {
    check_branch_heads(heads_);
  }

  [[nodiscard]] bool keyed() const noexcept override { return true; }
  [[nodiscard]] bool routes() const noexcept override { return true; }
  // A branch that broadcasts takes every parcel through deliver().
  [[nodiscard]] FirstTry first_try() const noexcept override {
    return broadcasts_ ? FirstTry::none : FirstTry::keyed_lane;
  }

  [[nodiscard]] std::size_t lane_of(const void* item, std::uint64_t seq,
                                    std::size_t /*lanes*/) const override {
    std::uint32_t branch = 0;
    if (item != nullptr) cases_.classify(item, 1, &branch);
    if (keyed_heads_) {
      const DispatchPolicy* head = heads_[branch];
      if (head != nullptr && head->keyed()) {
        return starts_[branch] + head->lane_of(item, seq, starts_[branch + 1] - starts_[branch]);
      }
    }
    return branch_lane(branch, seq);
  }

  void gap_lanes(std::uint64_t seq, std::size_t chosen,
                 std::vector<std::size_t>& lanes) const override {
    for (std::size_t branch = 0; branch + 1 < starts_.size(); ++branch) {
      if (!ordered_[branch] || (chosen >= starts_[branch] && chosen < starts_[branch + 1])) {
        continue;
      }
      lanes.push_back(branch_lane(branch, seq));
    }
  }

  bool deliver(OutLanes& port, std::size_t lane, LanePush push) const override {
    const auto after = std::upper_bound(starts_.begin(), starts_.end(), lane);
    const std::size_t first = *(after - 1);
    const DispatchPolicy* head = heads_[static_cast<std::size_t>(after - starts_.begin()) - 1];
    // Under a plain head, any worker of the branch may take any of its numbers, an item's or a
    // gap's.
    return push_into_branch(port, head, first, *after - first, lane, false, push);
  }

  [[nodiscard]] std::size_t branches() const noexcept override { return starts_.size() - 1; }

  void branches_of(const void* items, std::size_t count, std::uint32_t* branches) const override {
    cases_.classify(items, count, branches);
  }

  [[nodiscard]] bool branch_ordered(std::size_t branch) const noexcept override {
    return ordered_[branch];
  }

  [[nodiscard]] std::size_t branch_lane(std::size_t branch,
                                        std::uint64_t seq) const noexcept override {
    const std::size_t count = starts_[branch + 1] - starts_[branch];
    return starts_[branch] + (count == 1 ? 0 : static_cast<std::size_t>(seq % count));
  }

 private:
  const std::vector<std::size_t> starts_;
  const RouteCases cases_;
  const std::vector<bool> ordered_;
  const BranchHeads heads_;
  const bool broadcasts_;
  const bool keyed_heads_;
};

}  // namespace

std::shared_ptr<const DispatchPolicy> route_dispatch(std::vector<std::size_t> starts,
                                                     RouteCases cases, std::vector<bool> ordered,
                                                     BranchHeads heads) {
  return std::make_shared<const Route>(std::move(starts), std::move(cases), std::move(ordered),
                                       std::move(heads));
}

}  // namespace conveyor::detail
