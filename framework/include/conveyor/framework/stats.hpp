// Stats: a snapshot of what a pipeline has done, stage by stage, without Prometheus.
//
//   conveyor::PipelineStats stats = pipeline.stats();   // any thread, any time, also after run()
//   for (const auto& stage : stats.stages) std::cout << stage.name << ' ' << stage.items_out;
//
// Workers count into counters of their own (see detail/worker_counters.hpp); a snapshot sums
// them, so taking one never slows the pipeline down. Taken while the pipeline runs, a snapshot
// may mix values from slightly different moments; taken after `run()` returns, it is exact.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace conveyor {

enum class Mode;

// Upper bounds, in seconds, of the item-duration histogram's buckets (a last one is +Inf).
inline constexpr std::array<double, 14> item_duration_buckets{
    1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.5, 1.0, 5.0};

// How long the stage's code took per item. Items that travel in a batch are each counted at the
// batch's mean.
struct DurationHistogram {
  // counts[i]: items in bucket i (not cumulative); counts.back(): above the last bound.
  std::array<std::uint64_t, item_duration_buckets.size() + 1> counts{};
  std::uint64_t count = 0;
  double sum_seconds = 0.0;
};

struct StageStats {
  std::string name;
  Mode mode{};
  std::size_t workers = 0;
  // The stage whose workers run this one (StageOptions::fuse), or empty if it has its own. A fused
  // stage's busy time and item durations count in that stage's.
  std::string fused_into;
  // Items the stage's code was given, and items it emitted.
  std::uint64_t items_in = 0;
  std::uint64_t items_out = 0;
  // Exceptions thrown by the stage's code, plus what it counted with Emit::count_error().
  std::uint64_t errors = 0;
  // Time in the stage's code (and the framework's per-item work), summed over its workers.
  double busy_seconds = 0.0;
  // Time its workers waited for room downstream (or for the ordering window), and for items.
  double blocked_push_seconds = 0.0;
  double blocked_pop_seconds = 0.0;
  // The channel that feeds the stage (all of its lanes, from every input of a merge; after a tee
  // or a route, only the lanes into this branch), in parcels; 0 and 0 for a source.
  std::size_t channel_depth = 0;
  std::size_t channel_capacity = 0;
  DurationHistogram item_duration;
};

// One group of a shared resource (see shared.hpp).
struct GroupStats {
  std::string name;
  std::uint64_t entries = 0;  // accesses
  std::uint64_t aces = 0;     // accesses that did not wait
  std::uint64_t waits = 0;    // accesses that waited
  // How long the accesses that waited, waited.
  DurationHistogram wait;
};

struct ResourceStats {
  std::string name;
  // Which resource object these figures are of: unique in the process, the same in every run
  // that tracks it (Shared's, detail::next_resource_id()); 0 where unknown.
  std::uint64_t id = 0;
  std::vector<GroupStats> groups;
};

enum class PipelineState { idle, running, stopping, finished, failed };

struct PipelineStats {
  std::string name;
  PipelineState state = PipelineState::idle;
  double elapsed_seconds = 0.0;
  std::vector<StageStats> stages;
  std::vector<ResourceStats> resources;

  // The stage called `name`, or nullptr.
  [[nodiscard]] const StageStats* stage(const std::string& stage_name) const {
    for (const auto& s : stages) {
      if (s.name == stage_name) return &s;
    }
    return nullptr;
  }
};

}  // namespace conveyor
