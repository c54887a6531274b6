// FusedStep: a stage that runs on the workers of the stage before it (StageOptions::fuse). The
// worker's OutPort calls it in place of pushing into a channel: `push` gives it one item, which
// its code processes at once, emitting into its own OutPort (a channel, or the next fused step).
//
// Contract: one step per worker, used by that worker only. `push` returns false once the pipeline
// is cancelled; a throw from the stage's code is counted on this stage and fails the pipeline
// (push then returns false). `begin_item` / `end_item` bracket the outputs of one input of the
// group's first stage, for the port at the group's end that forwards tags (out_port.hpp);
// `flush` sends that port's partial batches; `finish` ends the stream: the stage's flush hook,
// then the next step's `finish`, and at the group's end the done sentinels. Not called after a
// cancellation.
#pragma once

#include "conveyor/framework/detail/parcel.hpp"

namespace conveyor::detail {

class FusedStep {
 public:
  FusedStep() = default;
  virtual ~FusedStep() = default;
  FusedStep(const FusedStep&) = delete;
  FusedStep& operator=(const FusedStep&) = delete;

  virtual void begin_item(const Tag& tag) noexcept = 0;
  virtual bool end_item() = 0;
  virtual bool flush() = 0;
  virtual void finish() = 0;
};

template <class T>
class FusedInput : public FusedStep {
 public:
  virtual bool push(T&& item) = 0;
};

}  // namespace conveyor::detail
