// WindowGate: the bound on how far a sequencer may run ahead of the serial_in_order stage that
// restores its order.
//
// The sequencer (the source, or a serial_in_order stage) numbers what it emits; the in-order stage
// downstream processes the numbers in order and keeps what arrives early in a reorder buffer with
// one slot per number in [released, released + window). The sequencer issues number s only once
// s < released + window, so the buffer never overflows, and the items between the two stages
// never outnumber the window, which is sized to what the channels between them hold plus one
// per worker.
//
// After a tee, several in-order stages (one per branch) may restore the order of one sequencer:
// the first one's gate is the leader, which the sequencer uses, and each other one gets a gate
// made from it. The leader's `released` is the least of them all: the sequencer runs at most a
// window ahead of the slowest branch.
//
// Contract: one sequencer (`released`, `request_wake_at` on the leader, through its Doorbell) and
// one consumer per gate (`advance`); followers are made before the workers start. A sleeping
// sequencer is woken once half the window is free again, not on every advance, so that a full
// window costs one wake-up per half window.
//
// Memory ordering: `released_` and `wake_at_` carry no data, only flow control, and are relaxed;
// the wake-up is the Doorbell's pairing, whose cheap check `recheck` and the sequencer's bounded
// park back up (sync/waiter.hpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "conveyor/sync/doorbell.hpp"

namespace conveyor::detail {

using sync::Doorbell;
using sync::WaitReason;

class WindowGate {
 public:
  WindowGate(std::uint64_t window, Doorbell& sequencer) noexcept
      : window_(window), sequencer_(sequencer), leader_(*this) {}
  // Another in-order stage's gate on the same sequencer, with the leader's window.
  explicit WindowGate(WindowGate& leader)
      : window_(leader.window_), sequencer_(leader.sequencer_), leader_(leader) {
    leader.followers_.push_back(this);
  }
  WindowGate(const WindowGate&) = delete;
  WindowGate& operator=(const WindowGate&) = delete;

  [[nodiscard]] std::uint64_t window() const noexcept { return window_; }

  // Every number below the result has been processed by the in-order stage (on the leader: by
  // every one of them).
  [[nodiscard]] std::uint64_t released() const noexcept {
    std::uint64_t least = released_.load(std::memory_order_relaxed);
    for (const WindowGate* follower : followers_)
      least = std::min(least, follower->released_.load(std::memory_order_relaxed));
    return least;
  }

  // Sequencer, on the leader, before it sleeps waiting to issue `seq`: wake it once half the
  // window is free.
  void request_wake_at(std::uint64_t seq) noexcept {
    wake_at_.store(seq + 1 - window_ + window_ / 2, std::memory_order_relaxed);
  }

  // In-order stage: every number below `released` is done.
  void advance(std::uint64_t released);

  // In-order stage, before it sleeps (sync::Waiter's rechecks): what advance() may have missed.
  void recheck() const;

 private:
  // Half the sequencer's window is free again.
  [[nodiscard]] bool half_free() const noexcept {
    return leader_.released() >= leader_.wake_at_.load(std::memory_order_relaxed);
  }

  const std::uint64_t window_;
  Doorbell& sequencer_;
  WindowGate& leader_;
  std::vector<const WindowGate*> followers_;
  alignas(64) std::atomic<std::uint64_t> released_{0};
  std::atomic<std::uint64_t> wake_at_{0};
};

}  // namespace conveyor::detail
