// Tallies: per-worker partial summaries, and the live totals' slots.
#include "conveyor/stages/tallies.hpp"

#include <utility>

namespace conveyor::stages {

Tallies::Tallies(std::size_t workers, SummaryOptions options,
                 std::shared_ptr<Shared<LiveTotals>> live)
    : options_(options), live_(std::move(live)) {
  slots_.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i)
    slots_.push_back(Slot{Summary(options)});
}

void Tallies::add_batch(std::size_t worker, const LineCounts& counts,
                        const LiveTotals::Counts& records) {
  slots_.at(worker).summary.add(counts);
  if (!live_) return;
  LiveTotals::Counts batch = records;
  batch.add(counts);
  live_->access(LiveTotals::update, [&](LiveTotals& totals) { totals.add(worker, batch); });
}

Summary Tallies::merged() {
  Summary total(options_);
  for (Slot& slot : slots_)
    total.merge(std::move(slot.summary));
  return total;
}

}  // namespace conveyor::stages
