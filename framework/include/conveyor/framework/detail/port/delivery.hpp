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
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/spsc_ring.hpp"

namespace conveyor::detail {

template <class T>
class OutPort;

template <class T>
using LaneList = std::vector<sync::SpscRing<Parcel<T>>*>;

// A batch's copy takes its storage from a batch that came back from a consumer, where one did
// (`returns`: the port's returned_batch), so that copying a batch for several lanes (a tee)
// allocates nothing once the first laps are done.
template <class T>
struct ParcelDelivery {
  const LaneList<T>& lanes;
  Parcel<T>& parcel;
  OutPort<T>* returns = nullptr;

  // The item a parcel of one entry holds, and its number (LanePush).
  [[nodiscard]] const void* item() const noexcept {
    const Entry<T>* entry = std::get_if<Entry<T>>(&parcel);
    return entry != nullptr && entry->value ? &*entry->value : nullptr;
  }
  [[nodiscard]] std::uint64_t item_seq() const noexcept {
    const Entry<T>* entry = std::get_if<Entry<T>>(&parcel);
    return entry != nullptr ? entry->tag.seq : 0;
  }

  bool operator()(std::size_t lane, bool copy) {
    if (!copy) return lanes[lane]->try_push(parcel);
    if constexpr (std::is_copy_constructible_v<T>) {
      const Batch<T>* batch = std::get_if<Batch<T>>(&parcel);
      if (batch != nullptr && returns != nullptr) {
        // One producer: a free slot stays free until this push.
        if (lanes[lane]->free_slots() == 0) return false;
        if (std::optional<Batch<T>> storage = returns->returned_batch()) {
          *storage = *batch;  // the vectors keep their capacity
          return lanes[lane]->try_emplace(std::in_place_index<1>, std::move(*storage));
        }
      }
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

  [[nodiscard]] const void* item() const noexcept { return &value; }
  [[nodiscard]] std::uint64_t item_seq() const noexcept { return seq; }

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
