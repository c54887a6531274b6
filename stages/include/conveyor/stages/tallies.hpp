// Tallies: a partial Summary per parse worker, filled as records are parsed, and merged once the
// run is over; and, when given, the live totals that a metrics reader sees meanwhile. With
// `windows`, a long-running service's tallies: tumbling windows of processing time, the last
// `keep` of them and the totals, which a reader may ask for at any time. Windows and totals keep
// `WindowOptions::top_capacity` keys in each top list (SummaryOptions::top_capacity is not used).
//
//   auto tallies = std::make_shared<Tallies>(workers, options, live);
//   conveyor::stage(ParseStage(config, tallies), {.mode = conveyor::Mode::parallel, .workers = n})
//   ...  pipeline.run();  Summary summary = tallies->merged();
//
// Records are counted on the worker that parsed them, while their text is still in its cache,
// instead of being handed to aggregation workers on other cores. Partial summaries merge with the
// same bounds (Summary::merge), so where a record was counted does not change what is reported.
// A batch counts in the window in which its worker began it.
//
// Contract: summary(w), then add_batch(w, ...), for each batch, only from parse worker w; in
// window mode the worker's slot is locked from the one to the other, so a reader waits for at
// most a batch. count(batch) from any thread: it locks the slot of batch.worker throughout; a
// reader holds every slot and the closed windows at once, and so sees each record once. merged()
// after the pipeline has finished; windows(), current() and totals() at any time from any thread
// (window mode).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "conveyor/framework/shared.hpp"
#include "conveyor/stages/batch.hpp"
#include "conveyor/stages/live_totals.hpp"
#include "conveyor/stages/summary.hpp"

namespace conveyor::stages {

struct WindowOptions {
  std::chrono::milliseconds width{0};  // 0: no windows, one summary for the run
  std::size_t keep = 60;               // closed windows kept
  std::size_t top_capacity = 1024;  // keys each top list keeps, the totals' too (merges need one)
};

class Tallies {
 public:
  Tallies(std::size_t workers, SummaryOptions options,
          std::shared_ptr<Shared<LiveTotals>> live = nullptr, WindowOptions windows = {});

  [[nodiscard]] Summary& summary(std::size_t worker);
  // Counts a parsed batch (records, line counts, live totals) into the slot of the worker that
  // parsed it (Batch::worker), which it holds meanwhile.
  void count(const Batch& batch);
  // Worker `worker` finished a batch: its line counts, and its records' sizes and statuses for
  // the live totals (LiveTotals::Counts::add of each record).
  void add_batch(std::size_t worker, const LineCounts& counts, const LiveTotals::Counts& records);
  // Every worker's partial, merged (window mode: totals()).
  [[nodiscard]] Summary merged();

  struct Window {
    std::chrono::system_clock::time_point start;
    std::chrono::system_clock::time_point end;
    Summary summary;
  };
  // Window mode: the closed windows, oldest first; the one in progress; everything so far.
  [[nodiscard]] std::vector<Window> windows();
  [[nodiscard]] Window current();
  [[nodiscard]] Summary totals();
  [[nodiscard]] const WindowOptions& window_options() const noexcept { return windows_options_; }

 private:
  struct alignas(64) Slot {
    explicit Slot(const SummaryOptions& options) : summary(options) {}
    std::mutex mutex;  // window mode: held by the worker during a batch
    Summary summary;
    std::int64_t window = -1;  // window mode: the window its summary counts
  };
  struct Snapshot {
    std::map<std::int64_t, Summary> windows;  // by number, slots' partials merged in
    Summary evicted;                          // windows no longer kept
  };

  [[nodiscard]] bool windowed() const noexcept { return windows_options_.width.count() > 0; }
  [[nodiscard]] std::int64_t window_now() const;
  [[nodiscard]] SummaryOptions window_summary_options() const;
  // Moves a closed window's partial into `closed_`; closed_mutex_ not held.
  void close(std::int64_t window, Summary&& partial);
  [[nodiscard]] Snapshot snapshot();
  [[nodiscard]] Window make_window(std::int64_t number, Summary&& summary) const;

  SummaryOptions options_;
  WindowOptions windows_options_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::shared_ptr<Shared<LiveTotals>> live_;
  std::mutex closed_mutex_;  // guards closed_ and evicted_
  std::map<std::int64_t, Summary> closed_;
  Summary evicted_;
};

}  // namespace conveyor::stages
