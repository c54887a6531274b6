// Doorbell: how one thread (or oneTBB task) sleeps until another has made its wait pointless.
// The one sleep protocol of the library; Waiter (waiter.hpp) runs the owner's side of it, and
// docs/design/hand-over.md explains it with its spin model.
//
// Contract:
// - Owner only: `prepare`, `cancel`, `park`, `park_bounded`. It announces a wait with
//   `prepare(reason)`, re-checks its condition, and then `cancel`s (the condition holds) or parks.
// - Ringer, after making the owner's condition true for `reason`:
//   - `ring(reason)`: never misses an announcement (a full fence first);
//   - `ring_after_hand_over(reason[, holds])`: the hand-over's cheap check (no fence instruction),
//     which may miss an announcement made at that moment; the owner recovers (Waiter);
//   - `ring_on_recheck(reason[, holds])`: behind a full fence the caller already ran (a Waiter's
//     rechecks), never misses;
//   - `waits_for(reason)` then `wake(reason)`, for a ringer that may defer the wake (WakeDeferral).
//   `holds()` narrows a ring to when the owner's wait is really over (a hysteresis).
// - Anyone: `ring_any()` after a change that ends every wait (a cancellation).
// - One announcement yields at most one token, and the semaphore holds none while nobody waits.
// - `cooperative`: the owner runs as a oneTBB task, which suspends instead of blocking its
//   thread; its ringers always use a full fence.
//
// Memory ordering: a store-load (Dekker) pairing. The owner stores its reason and runs a full
// fence before it re-checks; a ringer stores its change and loads the reason behind a fence. A
// compare-exchange (acq_rel) resets the announcement, and only its winner releases the token.
// The data the owner waits for is published by its own release/acquire pairs, not by the token.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "conveyor/sync/cooperative_semaphore.hpp"
#include "conveyor/sync/detail/asymmetric_fence.hpp"
#include "conveyor/sync/semaphore.hpp"

namespace conveyor::sync {

enum class WaitReason : std::uint8_t { none, items, space, window };

class Doorbell {
 public:
  explicit Doorbell(bool cooperative = false) noexcept : cooperative_(cooperative) {}

  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  // --- owner ---

  // Announces a wait, then the caller re-checks. `deferrable`: a ringer may put off waking the
  // owner for a short while (deferred_wakes.hpp).
  void prepare(WaitReason reason, bool deferrable = true) noexcept {
    // Relaxed: a hint that only ringers read, after the fence below.
    deferrable_.store(deferrable, std::memory_order_relaxed);
    // Relaxed store: the fence that follows orders it before the re-check.
    waiting_.store(reason, std::memory_order_relaxed);
    detail::full_fence();
  }

  // The re-check found the condition true: withdraws the announcement.
  void cancel() {
    // acq_rel: arbitrates with a ringer's compare-exchange; if a ringer won, its token is on its
    // way and must be taken, or the next park would return at once.
    if (waiting_.exchange(WaitReason::none, std::memory_order_acq_rel) == WaitReason::none) {
      take_token();
    }
  }

  // How long `park_bounded` sleeps at most: long next to a hand-over, short next to what a person
  // notices.
  static constexpr std::chrono::milliseconds recheck_after{1};

  // The re-check found the condition false: sleeps until a ring.
  void park() { take_token(); }

  // park() for `recheck_after` at most (a cooperative owner parks until a ring: its ringers never
  // miss). True once a ring's token is taken.
  bool park_bounded() {
    if (cooperative_) {
      take_token();
      return true;
    }
    return thread_token_.try_acquire_for(recheck_after);
  }

  // --- ringers ---

  void ring(WaitReason reason) {
    detail::full_fence();
    if (announced(reason)) wake(reason);
  }

  template <class Holds>
  void ring_after_hand_over(WaitReason reason, Holds&& holds) {
    hand_over_fence();
    if (announced(reason) && holds()) wake(reason);
  }
  void ring_after_hand_over(WaitReason reason) {
    ring_after_hand_over(reason, [] { return true; });
  }

  template <class Holds>
  void ring_on_recheck(WaitReason reason, Holds&& holds) {
    if (announced(reason) && holds()) wake(reason);
  }

  // The hand-over's check alone: whether the owner waits for `reason`.
  [[nodiscard]] bool waits_for(WaitReason reason) const noexcept {
    hand_over_fence();
    return announced(reason);
  }

  // After waits_for(reason) returned true: wakes the owner unless another ringer did.
  void wake(WaitReason reason) {
    WaitReason expected = reason;
    if (waiting_.compare_exchange_strong(expected, WaitReason::none, std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
      give_token();
    }
  }

  // Ringer, after waits_for: whether the owner's wait may be woken a little later.
  [[nodiscard]] bool deferrable() const noexcept {
    // Relaxed: a hint; a deferred wake is always delivered in the end.
    return deferrable_.load(std::memory_order_relaxed);
  }

  // --- anyone ---

  void ring_any() {
    detail::full_fence();
    if (waiting_.exchange(WaitReason::none, std::memory_order_acq_rel) != WaitReason::none) {
      give_token();
    }
  }

  [[nodiscard]] bool cooperative() const noexcept { return cooperative_; }

  [[nodiscard]] WaitReason waiting() const noexcept {
    return waiting_.load(std::memory_order_relaxed);
  }

 private:
  // The ringer's side of the pairing: a full fence for a cooperative owner, otherwise the light
  // side of an asymmetric fence, which costs no instruction.
  void hand_over_fence() const noexcept {
    if (cooperative_) {
      detail::full_fence();
    } else {
      detail::asymmetric_fence_light();
    }
  }

  [[nodiscard]] bool announced(WaitReason reason) const noexcept {
    // Relaxed: the caller's fence orders it.
    return waiting_.load(std::memory_order_relaxed) == reason;
  }

  void take_token() {
    if (cooperative_) {
      task_token_.acquire();
    } else {
      thread_token_.acquire();
    }
  }
  void give_token() {
    if (cooperative_) {
      task_token_.release();
    } else {
      thread_token_.release();
    }
  }

  // Read by every ringer, written only when the owner waits: a line of its own.
  alignas(64) std::atomic<WaitReason> waiting_{WaitReason::none};
  std::atomic<bool> deferrable_{true};
  const bool cooperative_;
  Semaphore thread_token_;
  CooperativeSemaphore task_token_;
};

}  // namespace conveyor::sync
