// DispatchPolicy: which lane of an edge each parcel goes into. A Dispatch (options.hpp) holds one;
// each kind is a file of its own in framework/src (dispatch_*.cpp, with the Dispatch factory that
// makes it), compiled once for every item type: a policy chooses lanes and waits for room, and a
// LanePush does the typed push. The planner asks a policy only what it is (keyed, copies).
//
// Contract: a policy is immutable and shared by every producer worker of its edges; each call
// runs on one producer's worker with that worker's port (OutLanes). `deliver` calls `push(lane,
// copy)` until the parcel is in the lanes the policy chooses (a copy into each but the last, for
// a policy that delivers to several), waiting on the port for room; it returns false once the
// pipeline is cancelled. A keyed policy picks the lane of each item from its value (`lane_of`),
// and the port passes that lane to `deliver`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <typeinfo>
#include <vector>

namespace conveyor::detail {

class OutLanes;

// Pushes the parcel at hand into lane `lane` (a copy of it if `copy`) if that lane has a free
// slot; true if it did. A non-owning reference to the port's typed push. `item()` is the item the
// parcel holds (null for a batch or a gap) and its number, for a policy whose branches pick lanes
// by key; ask before the push that moves the parcel.
class LanePush {
 public:
  struct Item {
    const void* value = nullptr;
    std::uint64_t seq = 0;
  };

  template <class Push>
  explicit LanePush(Push& push) noexcept
      : object_(&push), call_([](void* object, std::size_t lane, bool copy, Item* item) {
          Push& typed = *static_cast<Push*>(object);
          static_assert(
              requires {
                typed.item();
                typed.item_seq();
              },
              "LanePush: a push says which item it holds (item(), item_seq())");
          if (item == nullptr) return typed(lane, copy);
          *item = Item{typed.item(), typed.item_seq()};
          return true;
        }) {}

  bool operator()(std::size_t lane, bool copy) const { return call_(object_, lane, copy, nullptr); }
  // Worked out when asked (only a branch that picks its lane by key asks), so that a LanePush
  // stays two pointers: the port makes one whenever its first try finds a lane full.
  [[nodiscard]] Item item() const {
    Item item;
    call_(object_, 0, false, &item);
    return item;
  }

 private:
  void* object_;
  bool (*call_)(void*, std::size_t, bool, Item*);
};

class DispatchPolicy {
 public:
  DispatchPolicy() = default;
  virtual ~DispatchPolicy() = default;
  DispatchPolicy(const DispatchPolicy&) = delete;
  DispatchPolicy& operator=(const DispatchPolicy&) = delete;

  // Whether each item's value decides its lane (batches are then collected per lane).
  [[nodiscard]] virtual bool keyed() const noexcept { return false; }
  // Whether every lane gets a copy of every parcel (the items must be copyable).
  [[nodiscard]] virtual bool copies() const noexcept { return false; }
  // A keyed policy: the lane, of `lanes`, of `item` (null for a gap, which goes by its number
  // `seq`).
  [[nodiscard]] virtual std::size_t lane_of(const void* /*item*/, std::uint64_t /*seq*/,
                                            std::size_t /*lanes*/) const {
    return 0;
  }
  // The lane a parcel is tried in first, where that try succeeds most of the time: the port
  // pushes into it itself, without a call into the policy, and calls `deliver` only when that
  // lane is full. `finger`: the port's round-robin finger (pushed_past_finger after the push);
  // `keyed_lane`: lane_of's answer (pushed after the push); `none`: the policy always chooses.
  enum class FirstTry { none, finger, keyed_lane };
  [[nodiscard]] virtual FirstTry first_try() const noexcept { return FirstTry::none; }
  // A route's policy (keyed): besides the lane lane_of chose for an item numbered `seq`, the lanes
  // that get a gap with its tag, one in every other branch that restores order. The port sends
  // them only on a numbered edge.
  [[nodiscard]] virtual bool routes() const noexcept { return false; }
  virtual void gap_lanes(std::uint64_t /*seq*/, std::size_t /*chosen*/,
                         std::vector<std::size_t>& /*lanes*/) const {}
  // A route's policy, for a run split by branch: how many branches, the branch of each item
  // (branches[i] for items[i], `count` items in an array of the edge's item type), the lane of
  // branch `branch` for number `seq`, and whether the branch restores order.
  [[nodiscard]] virtual std::size_t branches() const noexcept { return 0; }
  virtual void branches_of(const void* /*items*/, std::size_t /*count*/,
                           std::uint32_t* /*branches*/) const {}
  [[nodiscard]] virtual std::size_t branch_lane(std::size_t /*branch*/,
                                                std::uint64_t /*seq*/) const noexcept {
    return 0;
  }
  [[nodiscard]] virtual bool branch_ordered(std::size_t /*branch*/) const noexcept { return false; }
  // Delivers the parcel that `push` pushes; `lane` is lane_of's answer for a keyed policy.
  virtual bool deliver(OutLanes& port, std::size_t lane, LanePush push) const = 0;
};

// How each branch of a tee or route spreads its parcels over its lanes: the dispatch policy of the
// branch's first stage, or null where that stage takes them as the tee or route sends them (the
// next lane with room). A keyed policy (by_key, by_partition) puts each item into the lane its key
// picks, and nowhere else; a policy that copies (broadcast) puts a copy into every lane; any other
// is a contract violation. The planner gives such an edge batches of one item, so that each parcel
// holds one key, and gives null for a first stage of one worker.
using BranchHeads = std::vector<const DispatchPolicy*>;

// The policy of a tee's edge (dispatch_tee.cpp): every branch gets every parcel, into one of its
// lanes in turn, or as its head's policy says; branch b's lanes are [starts[b], starts[b + 1]).
std::shared_ptr<const DispatchPolicy> tee_dispatch(std::vector<std::size_t> starts,
                                                   BranchHeads heads);

// A route's cases, with their item type erased once for the whole route rather than once per
// predicate (route.hpp makes them): how many predicates it has, and `classify(items, count,
// branches)`, which sets branches[i] to the branch of items[i] (`count` items in an array of the
// route's item type): the first branch whose predicate it matches, else the default, numbered
// `predicates`. The predicates run inlined in one loop.
struct RouteCases {
  std::size_t predicates = 0;
  std::function<void(const void*, std::size_t, std::uint32_t*)> classify;
  // What makes the ports of the route's edge (make_out_port.hpp's PortMaker for items of type
  // `item`), its type erased: only a route compiles a route's ports.
  void (*make_port)() = nullptr;
  const std::type_info* item = nullptr;
};

// The policy of a route's edge (dispatch_route.cpp): branch b's lanes are [starts[b],
// starts[b + 1]); an item goes to the branch `cases` picks for it; a gap goes to branch 0. Within
// a branch, the lane is picked by the number, or as the branch's head says (`heads`).
// `ordered[b]`: whether branch b restores order (and needs gaps).
std::shared_ptr<const DispatchPolicy> route_dispatch(std::vector<std::size_t> starts,
                                                     RouteCases cases, std::vector<bool> ordered,
                                                     BranchHeads heads);

// The keyed policy of Dispatch::by_key and Dispatch::by_partition (templates, in options.hpp):
// `hash(item)` is the hash of an item's key, or its partition.
std::shared_ptr<const DispatchPolicy> keyed_dispatch(
    std::function<std::uint64_t(const void*)> hash);

}  // namespace conveyor::detail
