// DeferredWakes: the wake-ups a producer owes consumers it found asleep but did not wake yet.
//
// Waking a sleeping consumer costs a system call for the producer and two context switches. When a
// consumer is faster than its producer it sleeps after every item, so waking it on every push
// costs more than the items themselves (measured: a pipeline of 2 us items ran no faster than one
// thread). An OutPort that finds the consumer of a lane asleep after a push therefore defers the
// wake-up until it has pushed up to half the lane's capacity (at most `max_deferred` parcels) into
// that lane, or for about `longest_deferral`, whichever comes first (the producer reads its clock
// every few deferred pushes only, see OutPort::pushed).
// The longest deferral matches the supervisor's sweep, which bounds the delay anyway: on the 2-core
// machine a sleeping consumer's wake-up costs the producer's core several microseconds, and a
// 200 us bound (one wake per 100 items of 2 us) kept a CPU-heavy pipeline at 1.6x one thread
// where 1 ms gives about 1.8x. Only consumers whose parcels are cheap are deferred (each consumer
// says so as it parks, from a moving average of its parcels' busy time): a consumer that spends
// milliseconds on a parcel (a chunk of a log file) would otherwise idle a millisecond per parcel.
// Nothing is left owed for long:
// - the producer delivers what it owes before it sleeps itself (for input, room or the window),
//   and when it closes its lanes;
// - the pipeline's supervisor delivers what any producer owes every `sweep_interval`, which bounds
//   the extra latency when a producer is busy elsewhere (a source blocked in a read);
// - a lane that fills up never waits for a deferred wake: the producer then sleeps, and delivers
//   first.
//
// Contract: `owe` by the producer only; `deliver` by anyone (the producer or the supervisor), any
// number of times. `set_consumers` before the workers start.
//
// Memory ordering: the producer publishes its parcel (the lane's release store of its tail) before
// it stores `owed_` with release; a deliverer's acq_rel exchange that reads it pairs with that
// store, and its ring hands the consumer the parcel through the doorbell's own pairing (see
// doorbell.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "conveyor/framework/detail/doorbell.hpp"
#include "conveyor/framework/detail/ticks.hpp"

namespace conveyor::detail {

class DeferredWakes {
 public:
  static constexpr std::chrono::microseconds longest_deferral{1000};
  static constexpr std::uint32_t max_deferred = 1024;
  static constexpr std::chrono::milliseconds sweep_interval{1};
  // A consumer whose parcels take longer than this on average is never left asleep: the wake-up
  // costs little next to its work, and a deferral would leave a core idle.
  static constexpr std::chrono::microseconds dear_parcel{50};

  static std::uint64_t dear_parcel_ticks() noexcept {
    static const std::uint64_t limit = to_ticks(dear_parcel);
    return limit;
  }

  void set_consumers(std::vector<Doorbell*> consumers) { consumers_ = std::move(consumers); }

  // Producer: it left a consumer asleep with a parcel in its lane.
  void owe() noexcept { owed_.store(true, std::memory_order_release); }

  // Rings every consumer that still sleeps, if anything is owed.
  void deliver() {
    if (!owed_.load(std::memory_order_relaxed)) return;
    if (!owed_.exchange(false, std::memory_order_acq_rel)) return;
    for (Doorbell* consumer : consumers_)
      consumer->ring(WaitReason::items);
  }

 private:
  alignas(64) std::atomic<bool> owed_{false};
  std::vector<Doorbell*> consumers_;
};

}  // namespace conveyor::detail
