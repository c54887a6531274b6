// A port that numbers what it emits 0, 1, 2, ... (Tagging::sequencer and Tagging::none). A
// sequencer (the source, or a serial_in_order stage) numbers for an in-order stage downstream and
// takes each number only once the ordering window has room for it (window_gate.hpp); the port
// then has a gate. An untagged port has none: its numbers only keep batches in their compact run
// form (parcel.hpp). Details: docs/design/ordering.md.
//
// Tagging policies (this file, tagging_forwarded.hpp) share one shape, which policy_port.hpp
// relies on:
// - `forwards`: the port passes its inputs' tags on (begin_item / end_item);
// - `emit(port, value)`: tags one item and sends it; false once the pipeline is cancelled;
// - `number_run(port, run)`: numbers a run sent whole (send_run);
// - `end_item(port)`: sends what was emitted for the input that ends (forwarding only).
// Contract: used by the port's worker only, like the port.
#pragma once

#include <cstdint>
#include <utility>

#include "conveyor/framework/detail/parcel.hpp"

namespace conveyor::detail {

template <class T>
struct NumberedOutput {
  static constexpr bool forwards = false;

  template <class Port>
  [[gnu::always_inline]] bool emit(Port& port, T&& value) {
    const std::uint64_t seq = port.next_seq_;
    // No number without room in the window: the item is dropped on cancellation.
    if (!port.window_open(seq) && !port.wait_for_window(seq)) return false;
    ++port.next_seq_;
    return port.send_value(seq, std::move(value));
  }

  // Only an untagged port takes runs (out_port.hpp): it gives them its own numbers.
  template <class Port>
  void number_run(Port& port, Batch<T>& run) noexcept {
    run.renumber(port.next_seq_);
    port.next_seq_ += run.size();
  }

  template <class Port>
  bool end_item(Port& /*port*/) {
    return true;
  }
};

}  // namespace conveyor::detail
