// TallyStage: shared Batch -> nothing. Counts each batch's records and line counts into Tallies,
// in the partial summary of the parse worker that made the batch (Batch::worker), for a branch of
// a tee beside the writer (WriteSink).
//
//   conveyor::stage(parse, {.mode = conveyor::Mode::parallel, .workers = n}) |
//       conveyor::tee(conveyor::chain<std::shared_ptr<const Batch>>() |
//                         conveyor::sink(TallyStage(tallies), {.mode = conveyor::Mode::parallel,
//                                                              .fuse = conveyor::Fuse::always}),
//                     conveyor::chain<std::shared_ptr<const Batch>>() |
//                         conveyor::sink(WriteSink(outputs),
//                                        {.mode = conveyor::Mode::serial_in_order}))
//
// Fused into the parse stage, each batch is counted by the worker that parsed it, while its records
// are in that core's caches, and no two workers share a slot. On workers of its own it is as
// correct (Tallies::count locks the slot) but pays for the records' cache misses.
//
// Contract: Tallies made for at least as many workers as the parse stage has.
#pragma once

#include <memory>
#include <utility>

#include "conveyor/stages/batch.hpp"
#include "conveyor/stages/tallies.hpp"

namespace conveyor::stages {

class TallyStage {
 public:
  explicit TallyStage(std::shared_ptr<Tallies> tallies) : tallies_(std::move(tallies)) {}

  void operator()(const std::shared_ptr<const Batch>& batch) const { tallies_->count(*batch); }

 private:
  std::shared_ptr<Tallies> tallies_;
};

}  // namespace conveyor::stages
