// LiveTotals: per-worker slots summed for a reader.
#include "conveyor/stages/live_totals.hpp"
#include "saturating_add.hpp"

namespace conveyor::stages {

void LiveTotals::Counts::add(const Counts& other) noexcept {
  lines += other.lines;
  records += other.records;
  rejected += other.rejected;
  filtered += other.filtered;
  detail::saturating_add(bytes, other.bytes);
  for (std::size_t i = 0; i < status_classes; ++i)
    by_status_class[i] += other.by_status_class[i];
}

void LiveTotals::add(std::size_t worker, const Slice& slice) noexcept {
  Counts& counts = slots[worker].counts;
  counts.add(slice.counts);
  for (const Record& record : slice.records)
    counts.add(record);
}

void LiveTotals::Counts::add(const LineCounts& counts) noexcept {
  lines += counts.lines;
  records += counts.records;
  rejected += counts.rejected;
  filtered += counts.filtered;
}

void LiveTotals::Counts::add(const Record& record) noexcept {
  if (record.bytes > 0) detail::saturating_add(bytes, static_cast<std::uint64_t>(record.bytes));
  const bool known = record.status >= 100 && record.status < 600;
  ++by_status_class[known ? static_cast<std::size_t>(record.status / 100 - 1) : status_classes - 1];
}

LiveTotals::Counts LiveTotals::total() const noexcept {
  Counts sum;
  for (const Slot& slot : slots)
    sum.add(slot.counts);
  return sum;
}

}  // namespace conveyor::stages
