// Deferred wake-ups: a producer that finds a consumer asleep after a push may leave it asleep for
// a few more pushes, or a short while, and wake it once for all of them. Part of the Doorbell
// protocol (docs/design/hand-over.md explains why and what it costs).
//
// - `WakeDeferral`, one per ring that a producer pushes into: `after_push` wakes the consumer,
//   or defers the wake and records the debt in the producer's `DeferredWakes`. A wake is
//   deferred for at most `limit` pushes (half the ring, at most `max_deferred`) and about
//   `longest_deferral`, and only while the consumer says its wait is deferrable.
// - `DeferredWakes`, one per producer: `deliver` rings every consumer that still sleeps, if
//   anything is owed. The producer delivers before it sleeps itself and when it closes; a
//   supervisor delivers every `sweep_interval`, which bounds the delay when the producer is busy
//   elsewhere.
//
// Contract: `after_push` and `owe` by the producer only; `deliver` by anyone, any number of
// times. `set_consumers` before the producer starts.
//
// Memory ordering: the producer publishes its element (the ring's release store) before it stores
// `owed_` with release; a deliverer's acq_rel exchange that reads it pairs with that store, and
// its ring hands the consumer the element through the Doorbell's own pairing.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "conveyor/sync/detail/ticks.hpp"
#include "conveyor/sync/doorbell.hpp"

namespace conveyor::sync {

class DeferredWakes {
 public:
  static constexpr std::chrono::microseconds longest_deferral{1000};
  static constexpr std::uint32_t max_deferred = 1024;
  static constexpr std::chrono::milliseconds sweep_interval{1};
  // A consumer whose parcels take longer than this on average should not be left asleep: the
  // wake-up costs little next to its work, and a deferral would leave a core idle.
  static constexpr std::chrono::microseconds dear_parcel{50};

  static std::uint64_t dear_parcel_ticks() noexcept {
    static const std::uint64_t limit = detail::to_ticks(dear_parcel);
    return limit;
  }

  void set_consumers(std::vector<Doorbell*> consumers) { consumers_ = std::move(consumers); }

  // Producer: it left a consumer asleep with an element in its ring.
  void owe() noexcept { owed_.store(true, std::memory_order_release); }

  // Rings every consumer that still sleeps, if anything is owed.
  void deliver() {
    // Relaxed: a quick look; the exchange below decides.
    if (!owed_.load(std::memory_order_relaxed)) return;
    if (!owed_.exchange(false, std::memory_order_acq_rel)) return;
    for (Doorbell* consumer : consumers_)
      consumer->ring(WaitReason::items);
  }

 private:
  alignas(64) std::atomic<bool> owed_{false};
  std::vector<Doorbell*> consumers_;
};

class WakeDeferral {
 public:
  // For a ring of `capacity` slots; `owed` null: never defer.
  WakeDeferral(std::size_t capacity, DeferredWakes* owed) noexcept
      : owed_(owed),
        limit_(owed == nullptr
                   ? 0
                   : std::min<std::uint32_t>(DeferredWakes::max_deferred,
                                             static_cast<std::uint32_t>(capacity / 2))) {}

  // Producer, after a push into the ring that `consumer` reads.
  void after_push(Doorbell& consumer) {
    if (!consumer.waits_for(WaitReason::items)) {
      deferred_ = 0;
      return;
    }
    if (deferred_ < limit_ && consumer.deferrable() && in_time()) {
      ++deferred_;
      owed_->owe();
      return;
    }
    consumer.wake(WaitReason::items);
    deferred_ = 0;
  }

 private:
  // Timed from the `clock_stride`-th deferred push and checked every `clock_stride` pushes, since
  // a clock read costs as much as a cheap item (the sweep bounds the delay anyway).
  bool in_time() noexcept {
    if (deferred_ % clock_stride != 0 || deferred_ == 0) return true;
    const std::uint64_t now = detail::ticks();
    if (deferred_ == clock_stride) first_deferred_ = now;
    return now - first_deferred_ < longest_deferral_ticks();
  }

  static std::uint64_t longest_deferral_ticks() noexcept {
    static const std::uint64_t window = detail::to_ticks(DeferredWakes::longest_deferral);
    return window;
  }

  static constexpr std::uint32_t clock_stride = 8;

  DeferredWakes* const owed_;
  const std::uint32_t limit_;
  std::uint32_t deferred_ = 0;
  std::uint64_t first_deferred_ = 0;
};

}  // namespace conveyor::sync
