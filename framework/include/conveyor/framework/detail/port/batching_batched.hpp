// Batch size B > 1: entries are collected and go out B at a time, and whenever the worker is about
// to sleep or ends (`flush`). A keyed dispatch collects one batch per lane; otherwise one batch
// collects for every lane. Batches of whole items with consecutive numbers stay runs (parcel.hpp),
// and emptied batches come back from the consumers to be filled again (edge.hpp). The shape every
// batching policy shares is described in batching_single.hpp. Details: docs/design/batching.md.
// Contract: used by the port's worker only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/framework/detail/port/delivery.hpp"

namespace conveyor::detail {

template <class T>
class Batches {
 public:
  static constexpr bool batches = true;

  // `collections`: one per lane for a keyed dispatch, otherwise one; `batch`: B.
  Batches(std::size_t collections, std::size_t batch) : collected_(collections), batch_(batch) {}

  template <class Port>
  [[gnu::always_inline]] bool send(Port& port, Entry<T>&& entry) {
    // Only a keyed dispatch gives other lanes than 0: one collection per lane.
    return send_to(port, port.lane_of(entry), std::move(entry));
  }

  template <class Port>
  [[gnu::always_inline]] bool send_to(Port& port, std::size_t lane, Entry<T>&& entry) {
    return collect(port, lane, lane, [&](Batch<T>& batch) { batch.append(std::move(entry)); });
  }

  template <class Port>
  [[gnu::always_inline]] bool send_value(Port& port, std::uint64_t seq, T&& value) {
    if (port.keyed()) {
      return send(port, Entry<T>{Tag::fresh(seq), std::move(value)});
    } else {
      // A run of several items that ends here (behind round-robin dispatch, the next input came
      // from elsewhere) goes out as it is, so that this batch and the next stay runs, which an
      // in-order consumer takes whole instead of item by item.
      if (collected_[0].size() > 1 && collected_[0].breaks_run(seq) && !ship(port, 0, 0)) {
        return false;
      }
      return collect(port, 0, 0,
                     [&](Batch<T>& batch) { batch.append_value(seq, std::move(value)); });
    }
  }

  template <class Port>
  bool flush(Port& port) {
    for (std::size_t i = 0; i < collected_.size(); ++i) {
      if (collected_[i].empty()) continue;
      if (!ship(port, i, i)) return false;
    }
    return true;
  }

  // What the per-item path collected goes first, so that both stay runs.
  template <class Port>
  bool send_run(Port& port, Batch<T>&& run) {
    if (!collected_[0].empty() && !ship(port, 0, 0)) return false;
    if (run.empty()) return !port.worker().cancelled();
    Parcel<T> parcel(std::move(run));
    return port.deliver(0, ParcelDelivery<T>{port.lanes(), parcel, &port});
  }

  // The values of the run being collected, continued at `next`, and the room left in the batch.
  template <class Port>
  std::pair<std::vector<T>*, std::uint64_t> run_space(Port& port, std::uint64_t next) {
    Batch<T>& batch = collected_[0];
    if (batch.capacity() == 0) batch = port.fresh_batch();
    const std::uint64_t room = batch_ - batch.size();
    return {&batch.extend_run(next), room};
  }

  // Sends the run being collected if it is full.
  template <class Port>
  bool ship_if_full(Port& port) {
    if (collected_[0].size() < batch_) return true;
    return ship(port, 0, 0);
  }

 private:
  // Adds to collection `collection` (given storage first if it has none) with `append`, and ships
  // it to `lane` once it holds a whole batch.
  template <class Port, class Append>
  [[gnu::always_inline]] bool collect(Port& port, std::size_t collection, std::size_t lane,
                                      Append&& append) {
    Batch<T>& batch = collected_[collection];
    if (batch.capacity() == 0) batch = port.fresh_batch();
    append(batch);
    if (batch.size() < batch_) return !port.worker().cancelled();
    return ship(port, collection, lane);
  }

  // Sends collection `collection` to `lane`, leaving it without storage.
  template <class Port>
  bool ship(Port& port, std::size_t collection, std::size_t lane) {
    Parcel<T> parcel(std::move(collected_[collection]));
    collected_[collection] = Batch<T>();
    return port.deliver(lane, ParcelDelivery<T>{port.lanes(), parcel, &port});
  }

  std::vector<Batch<T>> collected_;
  const std::size_t batch_;
};

}  // namespace conveyor::detail
