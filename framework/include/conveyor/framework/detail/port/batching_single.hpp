// Batch size 1: every item goes out as a parcel of its own, a whole item built in its slot.
//
// Batching policies (this file, batching_batched.hpp) share one shape, which policy_port.hpp
// relies on:
// - `batches`: whether items are grouped (and runs can go out whole);
// - `send(port, entry)`, `send_value(port, seq, value)`: one tagged entry, or one whole item with
//   number `seq`; false once the pipeline is cancelled; `send_to(port, lane, entry)`: an entry
//   into a lane the port chose (a route's gaps);
// - `flush(port)`: sends what was collected;
// - for batching policies only (out_port.hpp's run calls): `send_run(port, run)`, and for pull()
//   `run_space(port, next)` and `ship_if_full(port)`.
// Contract: used by the port's worker only, like the port.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/framework/detail/port/delivery.hpp"

namespace conveyor::detail {

template <class T>
struct SingleItems {
  static constexpr bool batches = false;

  SingleItems(std::size_t /*collections*/, std::size_t /*batch*/) noexcept {}

  template <class Port>
  [[gnu::always_inline]] bool send(Port& port, Entry<T>&& entry) {
    const std::size_t lane = port.lane_of(entry);
    Parcel<T> parcel(std::move(entry));
    return port.deliver(lane, ParcelDelivery<T>{port.lanes(), parcel});
  }

  // GCC 12 at -O2 takes the parcel's variant for uninitialised when a route sends a move-only item
  // this way (-Wmaybe-uninitialized, in <tuple> and <vector>); it is constructed on the line above.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  template <class Port>
  bool send_to(Port& port, std::size_t lane, Entry<T>&& entry) {
    Parcel<T> parcel(std::move(entry));
    return port.deliver(lane, ParcelDelivery<T>{port.lanes(), parcel});
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  template <class Port>
  [[gnu::always_inline]] bool send_value(Port& port, std::uint64_t seq, T&& value) {
    const std::size_t lane = port.lane_of(seq, value);
    return port.deliver(lane, WholeItemDelivery<T>{port.lanes(), seq, value});
  }

  template <class Port>
  bool flush(Port& /*port*/) noexcept {
    return true;
  }
};

}  // namespace conveyor::detail
