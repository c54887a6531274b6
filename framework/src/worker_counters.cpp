// Summing workers' counters into a stage's statistics.
#include "conveyor/framework/detail/worker_counters.hpp"

namespace conveyor::detail {

const std::array<std::uint64_t, item_duration_buckets.size()>& duration_bucket_ticks() noexcept {
  static const auto bounds = [] {
    std::array<std::uint64_t, item_duration_buckets.size()> ticks{};
    for (std::size_t i = 0; i < ticks.size(); ++i) {
      ticks[i] = sync::detail::seconds_to_ticks(item_duration_buckets[i]);
    }
    return ticks;
  }();
  return bounds;
}

void add_to(StageStats& stats, const WorkerCounters& counters) {
  stats.items_in += counters.items_in.load();
  stats.items_out += counters.items_out.load();
  stats.errors += counters.errors.load();
  stats.busy_seconds += sync::detail::ticks_to_seconds(counters.busy_ticks.load());
  stats.blocked_push_seconds += sync::detail::ticks_to_seconds(counters.blocked_push_ticks.load());
  stats.blocked_pop_seconds += sync::detail::ticks_to_seconds(counters.blocked_pop_ticks.load());
  for (std::size_t i = 0; i < counters.duration_counts.size(); ++i) {
    const std::uint64_t count = counters.duration_counts[i].load();
    stats.item_duration.counts[i] += count;
    stats.item_duration.count += count;
  }
  stats.item_duration.sum_seconds += sync::detail::ticks_to_seconds(counters.duration_ticks.load());
}

}  // namespace conveyor::detail
