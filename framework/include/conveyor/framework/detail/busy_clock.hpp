// BusyClock: how a worker times what it does, for its stage's busy time and item durations.
//
// Busy time is measured with one clock read (sync/detail/ticks.hpp) per parcel, or per group of up
// to 16 parcels while the last ones took under 1 us each: the span since the previous read, minus
// what the worker spent blocked inside it (waiting to push). Each item of the span is counted in
// the duration histogram at the span's mean, so one slow parcel in a group of cheap ones is
// spread over the group (busy time stays exact); the parcels after it are timed one by one.
//
// Contract: used by its worker only, on the worker's own WorkerContext.
#pragma once

#include <chrono>
#include <cstdint>

#include "conveyor/framework/detail/worker_context.hpp"
#include "conveyor/sync/detail/ticks.hpp"

namespace conveyor::detail {

class BusyClock {
 public:
  // Parcels that take less than `cheap_parcel` on average are timed `cheap_group` at a time: a
  // clock read costs a few percent of a parcel of one small item, and nothing next to a dearer one.
  static constexpr std::chrono::microseconds cheap_parcel{1};
  static constexpr std::uint32_t cheap_group = 16;

  explicit BusyClock(WorkerContext& worker) noexcept : worker_(worker) { restart(); }

  // The last span counts too: parcels not yet timed (a worker that returns on cancellation) and
  // the part of a parcel that threw.
  ~BusyClock() { record(0); }

  BusyClock(const BusyClock&) = delete;
  BusyClock& operator=(const BusyClock&) = delete;

  // Starts a new span now (after a wait, which is accounted as blocked time).
  void restart() noexcept {
    mark_ = sync::detail::ticks();
    blocked_mark_ = worker_.blocked_ticks();
  }

  // Ends the span: `items` items were processed in it, besides those of parcels not yet timed.
  // If the span holds parcels, tells the worker what they cost on average (for deferred wakes)
  // and sizes the next group by it.
  void record(std::uint64_t items) noexcept;

  // One parcel of `items` items is done; ends the span once the group is complete.
  void parcel_done(std::uint64_t items) noexcept {
    untimed_items_ += items;
    if (++untimed_parcels_ >= group_) record(0);
  }

 private:
  WorkerContext& worker_;
  std::uint64_t mark_ = 0;
  std::uint64_t blocked_mark_ = 0;
  std::uint64_t untimed_items_ = 0;
  std::uint64_t untimed_parcels_ = 0;
  std::uint64_t group_ = 1;
};

}  // namespace conveyor::detail
