// Tagging::forward: a stage between a sequencer and an in-order stage sends what it emits for one
// input with that input's tag: one output keeps it, several split its width, none leave a gap
// (parcel.hpp). Items emitted outside an input (the flush hook) go out unsequenced. The shape
// every tagging policy shares is described in tagging_numbered.hpp. Details:
// docs/design/ordering.md.
// Contract: used by the port's worker only.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/parcel.hpp"

namespace conveyor::detail {

template <class T>
class ForwardedOutput {
 public:
  static constexpr bool forwards = true;

  template <class Port>
  [[gnu::always_inline]] bool emit(Port& port, T&& value) {
    if (port.in_item()) {
      if (first_) {
        pending_.push_back(std::move(value));
      } else {
        first_.emplace(std::move(value));
      }
      return !port.worker().cancelled();
    }
    return port.send(Entry<T>{Tag::unsequenced(), std::move(value)});
  }

  // A run keeps its inputs' numbers.
  template <class Port>
  void number_run(Port& /*port*/, Batch<T>& /*run*/) noexcept {}

  // The first output waits in first_, later ones in pending_: one output, the common case, costs
  // no vector, and goes out as a plain value when its input was a whole item.
  template <class Port>
  bool end_item(Port& port) {
    const Tag& current = port.current_tag();
    if (!first_) return port.send(Entry<T>{current, std::nullopt});
    if (pending_.empty()) {
      // Out of first_ before it is sent, so that a throw leaves no moved-from value behind.
      T value = std::move(*first_);
      first_.reset();
      return current.width == Tag::whole ? port.send_value(current.seq, std::move(value))
                                         : port.send(Entry<T>{current, std::move(value)});
    }
    const std::size_t count = pending_.size() + 1;
    std::optional<T> first = std::exchange(first_, std::nullopt);
    bool sent = port.send(Entry<T>{current.part(0, count), std::move(first)});
    for (std::size_t i = 1; i < count && sent; ++i) {
      sent = port.send(Entry<T>{current.part(i, count), std::move(pending_[i - 1])});
    }
    pending_.clear();
    return sent;
  }

 private:
  std::optional<T> first_;
  std::vector<T> pending_;
};

}  // namespace conveyor::detail
