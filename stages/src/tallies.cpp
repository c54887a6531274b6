// Tallies: per-worker partial summaries, the live totals' slots, and the windows.
#include "conveyor/stages/tallies.hpp"

#include <mutex>
#include <utility>
#include <vector>

namespace conveyor::stages {

Tallies::Tallies(std::size_t workers, SummaryOptions options,
                 std::shared_ptr<Shared<LiveTotals>> live, WindowOptions windows)
    : options_(options),
      windows_options_(windows),
      live_(std::move(live)),
      evicted_(windowed() ? window_summary_options() : options) {
  slots_.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i)
    slots_.push_back(std::make_unique<Slot>(windowed() ? window_summary_options() : options));
}

SummaryOptions Tallies::window_summary_options() const {
  SummaryOptions chosen = options_;
  if (!chosen.exact) chosen.top_capacity = windows_options_.top_capacity;
  return chosen;
}

std::int64_t Tallies::window_now() const {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  return now.count() / windows_options_.width.count();
}

Summary& Tallies::summary(std::size_t worker) {
  Slot& slot = *slots_.at(worker);
  if (!windowed()) return slot.summary;
  slot.mutex.lock();  // NOLINT: unlocked by add_batch, at the end of this worker's batch
  const std::int64_t now = window_now();
  if (slot.window != now) {
    if (slot.window >= 0) close(slot.window, std::move(slot.summary));
    slot.summary = Summary(window_summary_options());
    slot.window = now;
  }
  return slot.summary;
}

void Tallies::count(const Batch& batch) {
  const std::size_t worker = batch.worker;
  // Windowed, summary() locks the slot and add_batch() unlocks it; otherwise it is locked here,
  // for a counting stage that does not run on the parse workers themselves.
  std::unique_lock<std::mutex> held;
  if (!windowed()) held = std::unique_lock(slots_.at(worker)->mutex);
  Summary& partial = summary(worker);
  LiveTotals::Counts live;
  for (const std::vector<Record>& records : batch.partitions)
    partial.add_all(records, [&live](const Record& record) { live.add(record); });
  add_batch(worker, batch.counts, live);
}

void Tallies::add_batch(std::size_t worker, const LineCounts& counts,
                        const LiveTotals::Counts& records) {
  Slot& slot = *slots_.at(worker);
  slot.summary.add(counts);
  if (windowed()) slot.mutex.unlock();
  if (!live_) return;
  LiveTotals::Counts batch = records;
  batch.add(counts);
  live_->access(LiveTotals::update, [&](LiveTotals& totals) { totals.add(worker, batch); });
}

void Tallies::close(std::int64_t window, Summary&& partial) {
  std::lock_guard lock(closed_mutex_);
  auto found = closed_.find(window);
  if (found == closed_.end()) found = closed_.emplace(window, window_summary_options()).first;
  found->second.merge(std::move(partial));
  // Keep `keep` closed windows and the one in progress; older ones go into the totals.
  while (closed_.size() > windows_options_.keep + 1) {
    evicted_.merge(std::move(closed_.begin()->second));
    closed_.erase(closed_.begin());
  }
}

Tallies::Snapshot Tallies::snapshot() {
  // Every slot, then the closed windows, held together: a worker closes its partial into
  // closed_ while it holds its slot, so a reader that took them one at a time could count a
  // partial twice (copied from the slot, then again in closed_) or not at all. The order, slots
  // before closed_, is the workers' own.
  std::vector<std::unique_lock<std::mutex>> held;
  held.reserve(slots_.size());
  for (const std::unique_ptr<Slot>& slot : slots_)
    held.emplace_back(slot->mutex);
  const std::lock_guard lock(closed_mutex_);
  Snapshot result{{}, Summary(window_summary_options())};
  const auto window = [&](std::int64_t number) -> Summary& {
    auto found = result.windows.find(number);
    if (found == result.windows.end()) {
      found = result.windows.emplace(number, window_summary_options()).first;
    }
    return found->second;
  };
  for (const std::unique_ptr<Slot>& slot : slots_) {
    if (slot->window < 0) continue;
    Summary copy = slot->summary;
    window(slot->window).merge(std::move(copy));
  }
  for (const auto& [number, closed] : closed_) {
    Summary copy = closed;
    window(number).merge(std::move(copy));
  }
  Summary copy = evicted_;
  result.evicted.merge(std::move(copy));
  return result;
}

Tallies::Window Tallies::make_window(std::int64_t number, Summary&& summary) const {
  const std::chrono::system_clock::time_point start(windows_options_.width * number);
  return {start, start + windows_options_.width, std::move(summary)};
}

std::vector<Tallies::Window> Tallies::windows() {
  const std::int64_t now = window_now();
  Snapshot all = snapshot();
  std::vector<Window> result;
  for (auto& [number, summary] : all.windows) {
    if (number < now) result.push_back(make_window(number, std::move(summary)));
  }
  if (result.size() > windows_options_.keep) {
    result.erase(result.begin(), result.begin() + static_cast<std::ptrdiff_t>(
                                                      result.size() - windows_options_.keep));
  }
  return result;
}

Tallies::Window Tallies::current() {
  const std::int64_t now = window_now();
  Snapshot all = snapshot();
  const auto found = all.windows.find(now);
  Summary summary =
      found != all.windows.end() ? std::move(found->second) : Summary(window_summary_options());
  summary.partial = true;
  return make_window(now, std::move(summary));
}

Summary Tallies::totals() {
  Snapshot all = snapshot();
  Summary total = std::move(all.evicted);
  for (auto& [number, summary] : all.windows)
    total.merge(std::move(summary));
  return total;
}

Summary Tallies::merged() {
  if (windowed()) return totals();
  Summary total(options_);
  for (const std::unique_ptr<Slot>& slot : slots_)
    total.merge(std::move(slot->summary));
  return total;
}

}  // namespace conveyor::stages
