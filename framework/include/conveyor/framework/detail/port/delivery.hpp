// What a port hands its dispatch policy (dispatch_policy.hpp) to push into the lanes the policy
// chooses: a parcel, or one whole item built in its slot (SpscRing::try_emplace) without an Entry
// built elsewhere and moved there.
//
// Contract: `(lane, copy)` pushes the item into lane `lane` if that lane has a free slot, and true
// if it did; it moves the item only then, and pushes a copy instead when `copy` (broadcast: the
// item type must then be copyable, which the pipeline checks before it starts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/spsc_ring.hpp"

namespace conveyor::detail {

template <class T>
using LaneList = std::vector<sync::SpscRing<Parcel<T>>*>;

template <class T>
struct ParcelDelivery {
  const LaneList<T>& lanes;
  Parcel<T>& parcel;

  bool operator()(std::size_t lane, bool copy) {
    if (!copy) return lanes[lane]->try_push(parcel);
    if constexpr (std::is_copy_constructible_v<T>) {
      return lanes[lane]->try_emplace(std::as_const(parcel));
    } else {
      CONVEYOR_CONTRACT(false, "OutPort: broadcast needs copyable items");
      return false;
    }
  }
};

template <class T>
struct WholeItemDelivery {
  const LaneList<T>& lanes;
  std::uint64_t seq;
  T& value;

  bool operator()(std::size_t lane, bool copy) {
    if (!copy) return lanes[lane]->try_emplace(std::in_place_index<0>, WholeItem<T>{seq, value});
    if constexpr (std::is_copy_constructible_v<T>) {
      return lanes[lane]->try_emplace(std::in_place_index<0>,
                                      Entry<T>{Tag::fresh(seq), std::as_const(value)});
    } else {
      CONVEYOR_CONTRACT(false, "OutPort: broadcast needs copyable items");
      return false;
    }
  }
};

}  // namespace conveyor::detail
