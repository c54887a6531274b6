// AggregateStage: Slices -> one partial Summary per worker, at the end of the stream.
//
//   conveyor::stage(AggregateStage{}, {.mode = conveyor::Mode::parallel, .workers = n,
//                                      .dispatch =
//                                      conveyor::Dispatch::by_partition(&Slice::partition)})
//
// Keyed by partition, so each worker owns its partitions' counts outright: no lock and no shared
// atomic per record. Its flush hook emits the worker's partial; a serial sink merges them
// (Summary::merge).
#pragma once

#include <optional>
#include <utility>

#include "conveyor/framework/emit.hpp"
#include "conveyor/stages/batch.hpp"
#include "conveyor/stages/summary.hpp"

namespace conveyor::stages {

class AggregateStage {
 public:
  std::optional<Summary> process(const Slice& slice) {
    partial_.add(slice.counts);
    for (const Record& record : slice.records)
      partial_.add(record);
    return std::nullopt;
  }

  void flush(Emit<Summary>& emit) { emit(std::move(partial_)); }

 private:
  Summary partial_;
};

}  // namespace conveyor::stages
