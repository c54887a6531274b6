// AggregateStage: Slices -> one partial Summary per worker, at the end of the stream.
//
//   conveyor::stage(AggregateStage(options, live), {.mode = conveyor::Mode::parallel, .workers = n,
//                                          .dispatch = conveyor::Dispatch::by_partition(
//                                              &Slice::partition)})
//
// Keyed by partition, so each worker owns its partitions' counts outright: no lock and no shared
// atomic per record. Its flush hook emits the worker's partial; a serial sink merges them
// (Summary::merge) into a Summary made with the same options. Given a Shared<LiveTotals>, each
// worker also adds every slice's counts into its own slot there, as a member of the `update` group,
// for a reader while the run goes on.
#pragma once

#include <memory>
#include <utility>

#include "conveyor/framework/emit.hpp"
#include "conveyor/framework/shared.hpp"
#include "conveyor/stages/batch.hpp"
#include "conveyor/stages/live_totals.hpp"
#include "conveyor/stages/summary.hpp"

namespace conveyor::stages {

class AggregateStage {
 public:
  explicit AggregateStage(SummaryOptions options = {},
                          std::shared_ptr<Shared<LiveTotals>> live = nullptr)
      : partial_(options), live_(std::move(live)) {}

  void process(const Slice& slice, Emit<Summary>& emit) {
    partial_.add(slice.counts);
    partial_.add_all(slice.records);
    if (live_) {
      live_->access(LiveTotals::update,
                    [&](LiveTotals& totals) { totals.add(emit.worker(), slice); });
    }
  }

  void flush(Emit<Summary>& emit) { emit(std::move(partial_)); }

 private:
  Summary partial_;
  std::shared_ptr<Shared<LiveTotals>> live_;
};

}  // namespace conveyor::stages
