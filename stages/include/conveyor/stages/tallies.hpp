// Tallies: a partial Summary per parse worker, filled as records are parsed, and merged once the
// run is over; and, when given, the live totals that a metrics reader sees meanwhile.
//
//   auto tallies = std::make_shared<Tallies>(workers, options, live);
//   conveyor::stage(ParseStage(config, tallies), {.mode = conveyor::Mode::parallel, .workers = n})
//   ...  pipeline.run();  Summary summary = tallies->merged();
//
// Records are counted on the worker that parsed them, while their text is still in its cache,
// instead of being handed to aggregation workers on other cores. Partial summaries merge with the
// same bounds (Summary::merge), so where a record was counted does not change what is reported.
//
// Contract: summary(w) and add_batch(w, ...) only from parse worker w, while the pipeline runs;
// merged() after it has finished.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "conveyor/framework/shared.hpp"
#include "conveyor/stages/live_totals.hpp"
#include "conveyor/stages/summary.hpp"

namespace conveyor::stages {

class Tallies {
 public:
  Tallies(std::size_t workers, SummaryOptions options,
          std::shared_ptr<Shared<LiveTotals>> live = nullptr);

  [[nodiscard]] Summary& summary(std::size_t worker) { return slots_.at(worker).summary; }
  // Worker `worker` finished a batch: its line counts, and its records' sizes and statuses for
  // the live totals (LiveTotals::Counts::add of each record).
  void add_batch(std::size_t worker, const LineCounts& counts, const LiveTotals::Counts& records);
  // Every worker's partial, merged.
  [[nodiscard]] Summary merged();

 private:
  struct alignas(64) Slot {
    Summary summary;
  };
  SummaryOptions options_;
  std::vector<Slot> slots_;
  std::shared_ptr<Shared<LiveTotals>> live_;
};

}  // namespace conveyor::stages
