// BranchPort<T>: the OutPort of a stage before a tee when one branch of the tee is fused into it
// (StageOptions::fuse). Each item goes to the fused branch's step, a copy, and then to the port
// on the channel edge that carries it to the other branches. Details: docs/design/fusion.md.
//
// Contract: OutPort's (out_port.hpp); it takes the runs the channel port takes, and does not
// pull. Each item is counted once, by the channel port. The fused branch's own ports never forward
// tags (the planner refuses a fused branch that leads to an in-order stage), so only the channel
// port needs the brackets.
#pragma once

#include <memory>
#include <utility>

#include "conveyor/framework/detail/fused_step.hpp"
#include "conveyor/framework/detail/out_port.hpp"
#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::detail {

template <class T>
class BranchPort final : public OutPort<T> {
 public:
  BranchPort(WorkerContext& worker, WorkerCounters& counters, std::unique_ptr<FusedInput<T>> branch,
             std::unique_ptr<OutPort<T>> channel, bool forwards)
      : OutPort<T>(worker, counters, forwards, *channel),
        branch_(std::move(branch)),
        channel_(std::move(channel)) {
    CONVEYOR_CONTRACT(branch_ != nullptr, "OutPort: a branch port needs the fused branch's step");
  }

  bool emit(T&& value) override {
    T copy(value);
    if (!branch_->push(std::move(copy))) return false;
    return channel_->emit(std::move(value));
  }
  bool flush() override { return branch_->flush() && channel_->flush(); }
  void close() override {
    branch_->finish();
    if (!this->worker().cancelled()) channel_->close();
  }
  // A run of outputs: a copy of each to the fused branch, then the run whole to the channel.
  bool send_run(Batch<T>&& run) override {
    for (const T& item : run.values()) {
      T copy(item);
      if (!branch_->push(std::move(copy))) return false;
    }
    return channel_->send_run(std::move(run));
  }

 private:
  void began_item() noexcept override { channel_->begin_item(this->current_tag()); }
  bool ended_item() override { return channel_->end_item(); }

  std::unique_ptr<FusedInput<T>> branch_;
  std::unique_ptr<OutPort<T>> channel_;
};

}  // namespace conveyor::detail
