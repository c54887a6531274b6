// FusedPort<T>: the OutPort of a stage whose successor is fused into it (fused_step.hpp). It has
// no lanes: it hands every item, and the brackets of every input it forwards the tag of, to the
// successor's step. Details: docs/design/fusion.md.
//
// Contract: OutPort's (out_port.hpp); it takes no runs and does not pull. `tagging` is that of
// the port at the fused group's end.
#pragma once

#include <memory>
#include <utility>

#include "conveyor/framework/detail/fused_step.hpp"
#include "conveyor/framework/detail/out_port.hpp"
#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::detail {

template <class T>
class FusedPort final : public OutPort<T> {
 public:
  FusedPort(WorkerContext& worker, WorkerCounters& counters, std::unique_ptr<FusedInput<T>> next,
            Tagging tagging)
      : OutPort<T>(worker, counters, tagging == Tagging::forward), next_(std::move(next)) {
    CONVEYOR_CONTRACT(next_ != nullptr, "OutPort: a fused port needs its successor's step");
  }

  bool emit(T&& value) override {
    this->counters().items_out.add(1);
    return next_->push(std::move(value));
  }
  bool flush() override { return next_->flush(); }
  void close() override { next_->finish(); }
  bool send_run(Batch<T>&& /*run*/) override {
    CONVEYOR_CONTRACT(false, "OutPort::send_run: a run the port can take whole");
    return false;
  }

 private:
  void began_item() noexcept override { next_->begin_item(this->current_tag()); }
  bool ended_item() override { return next_->end_item(); }

  std::unique_ptr<FusedInput<T>> next_;
};

}  // namespace conveyor::detail
