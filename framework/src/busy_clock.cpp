#include <cstdint>

#include "conveyor/framework/detail/busy_clock.hpp"
#include "conveyor/sync/detail/ticks.hpp"

namespace conveyor::detail {

namespace {

std::uint64_t cheap_parcel_ticks() noexcept {
  static const std::uint64_t limit = sync::detail::to_ticks(BusyClock::cheap_parcel);
  return limit;
}

}  // namespace

void BusyClock::record(std::uint64_t items) noexcept {
  const std::uint64_t now = sync::detail::ticks();
  const std::uint64_t blocked = worker_.blocked_ticks() - blocked_mark_;
  const std::uint64_t span = now - mark_;
  const std::uint64_t busy = span > blocked ? span - blocked : 0;
  WorkerCounters& counters = worker_.counters();
  counters.busy_ticks.add(busy);
  counters.record_items(busy, items + untimed_items_);
  if (untimed_parcels_ > 0) {
    const std::uint64_t each = busy / untimed_parcels_;
    worker_.note_parcel(each);
    group_ = each < cheap_parcel_ticks() ? cheap_group : 1;
  }
  untimed_items_ = 0;
  untimed_parcels_ = 0;
  mark_ = now;
  blocked_mark_ = worker_.blocked_ticks();
}

}  // namespace conveyor::detail
