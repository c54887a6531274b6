// Emit<T>: how a source or a stage hands items to the next stage.
//
//   conveyor::stage([](Line line, conveyor::Emit<Word>& out) {
//     for (auto word : split(line)) out(Word{word});
//   })
//
// Contract:
// - Only the worker that was given the Emit may use it, and only during the call it was given to.
// - `out(item)` sends one item downstream; it may wait while the channel downstream is full. It
//   returns false, and drops the item, once the pipeline is cancelled. In a source, once
//   `request_stop()` was called, it still sends the item (a stop drains what was made) and
//   returns false: the source should then return.
// - `stop_requested()` tells a source (or a long-running stage) to finish early.
// - `count_error()` counts bad input on this stage (in StageStats::errors and the metrics)
//   without failing the pipeline; throwing from the stage fails it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "conveyor/framework/detail/out_port.hpp"

namespace conveyor {

template <class T>
class Emit {
 public:
  // `source`: stop requests end the stream (sources), rather than only cancellation (stages).
  Emit(detail::OutPort<T>& port, bool source) noexcept : port_(port), source_(source) {}

  Emit(const Emit&) = delete;
  Emit& operator=(const Emit&) = delete;

  bool operator()(T item) {
    if (source_ && port_.stop_requested()) {
      (void)port_.emit(std::move(item));
      return false;
    }
    return port_.emit(std::move(item));
  }

  template <class... Args>
  bool emplace(Args&&... args) {
    return (*this)(T(std::forward<Args>(args)...));
  }

  [[nodiscard]] bool stop_requested() const noexcept {
    return port_.worker().cancelled() || (source_ && port_.stop_requested());
  }

  // Which of the stage's workers this is: 0 .. workers-1.
  [[nodiscard]] std::size_t worker() const noexcept { return port_.worker().index(); }

  void count_error(std::uint64_t count = 1) noexcept { port_.counters().errors.add(count); }

 private:
  detail::OutPort<T>& port_;
  const bool source_;
};

}  // namespace conveyor
