// Doorbell: how one pipeline worker sleeps until another worker has something for it.
//
// Every worker owns one doorbell and waits on nothing else: for items on its input lanes, for
// space on its output lanes, or for room in an ordering window. Whoever makes that wait pointless
// (a producer that pushed, a consumer that freed slots, the in-order stage that advanced its
// window, or a cancellation) rings the doorbell, but only if its owner waits for that reason.
// Underneath is the owner's own semaphore: a `sync::Semaphore` for a worker on a dedicated thread,
// or a `sync::CooperativeSemaphore` for a worker running as a oneTBB task, whose wait suspends the
// task instead of blocking the thread.
//
// Contract:
// - Owner only: `prepare`, `cancel`, `park`. The owner announces a wait with `prepare(reason)`,
//   re-checks its condition, and then either `cancel()`s (the condition holds) or `park()`s.
// - Anyone: `ring(reason)` after making the owner's condition true for that reason (or
//   `waits_for(reason)`, a check of its own, then `wake(reason)`); `ring_any()` after a change
//   that ends every wait (cancellation).
// - A ring that finds no matching announcement costs one relaxed load and does nothing.
//
// Memory ordering: a store-load (Dekker) pairing. The owner stores its reason and runs a full fence
// before it re-checks; a ringer stores its change (the lane index, the window) and runs a full
// fence before it loads the reason (in `waits_for`). Either the owner's re-check sees the change,
// or the ringer sees the announcement. The ringer that resets the announcement (a
// compare-exchange, acq_rel) is the only one that releases the semaphore, so one announcement
// yields at most one token; an owner whose `cancel` finds the announcement already reset takes
// that token, so the semaphore is empty whenever nobody waits. The semaphore only wakes the owner:
// the data it waited for is published by the lanes' own release/acquire pairs, which the owner's
// re-check reads.
//
// Why symmetric fences: sync::BoundedQueue moves the whole cost of its pairing to the sleeper
// with membarrier (sync/detail/asymmetric_fence.hpp), which pays off when sleeps are rare. In a
// pipeline, workers outnumber cores and sleep often, and every membarrier interrupts every core
// that runs a worker: measured on the 2-core CI machine, 45% of the CPU went to the kernel's IPI
// code. A full fence per push costs a few nanoseconds instead.
//
// Why the owner announces before it spins: `park` is the semaphore's acquire, which spins a learnt
// while before it sleeps. A ringer that finds the announcement releases the token at once, and
// the semaphore makes no system call while its owner spins, so a hand-off that comes soon costs
// neither side a system call; and the owner yields its core now and then while it spins, which
// matters when workers outnumber cores.
#pragma once

#include <atomic>
#include <cstdint>

#include "conveyor/sync/cooperative_semaphore.hpp"
#include "conveyor/sync/detail/asymmetric_fence.hpp"  // full_fence
#include "conveyor/sync/semaphore.hpp"

namespace conveyor::detail {

enum class WaitReason : std::uint8_t { none, items, space, window };

class Doorbell {
 public:
  // `cooperative`: the owner runs as a oneTBB task and should suspend rather than block.
  explicit Doorbell(bool cooperative = false) noexcept : cooperative_(cooperative) {}

  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  // Owner: announce a wait, then re-check the condition. `deferrable`: a ringer may put off
  // waking the owner for a short while (see deferred_wakes.hpp).
  void prepare(WaitReason reason, bool deferrable = true) noexcept {
    // Relaxed: a hint that only ringers read, after the fence below.
    deferrable_.store(deferrable, std::memory_order_relaxed);
    // Relaxed store: the fence that follows is what orders it before the re-check.
    waiting_.store(reason, std::memory_order_relaxed);
    sync::detail::full_fence();
  }

  // Owner: the re-check found the condition true; withdraw the announcement.
  void cancel() {
    // acq_rel: arbitrates with a ringer's compare-exchange; if a ringer won, its token is on its
    // way and must be taken, or the next park would return at once.
    if (waiting_.exchange(WaitReason::none, std::memory_order_acq_rel) == WaitReason::none) {
      take_token();
    }
  }

  // Owner: the re-check found the condition false; sleep until a ring.
  void park() { take_token(); }

  // Ringer, after making the condition for `reason` true: whether the owner announced a wait for
  // it. The fence before the load is the ringer's half of the pairing.
  [[nodiscard]] bool waits_for(WaitReason reason) const noexcept {
    sync::detail::full_fence();
    // Relaxed: the fence above orders it; wake() decides with a compare-exchange.
    return waiting_.load(std::memory_order_relaxed) == reason;
  }

  // Ringer, after waits_for(reason) returned true.
  void wake(WaitReason reason) {
    WaitReason expected = reason;
    if (waiting_.compare_exchange_strong(expected, WaitReason::none, std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
      give_token();
    }
  }

  // Ringer, after making the condition for `reason` true.
  void ring(WaitReason reason) {
    if (waits_for(reason)) wake(reason);
  }

  // Anyone, after a change that ends every wait; the caller runs a full fence before it.
  void ring_any() {
    if (waiting_.exchange(WaitReason::none, std::memory_order_acq_rel) != WaitReason::none) {
      give_token();
    }
  }

  [[nodiscard]] bool cooperative() const noexcept { return cooperative_; }

  [[nodiscard]] WaitReason waiting() const noexcept {
    return waiting_.load(std::memory_order_relaxed);
  }

  // Ringer, after waits_for: whether the owner's wait may be woken a little later.
  [[nodiscard]] bool deferrable() const noexcept {
    // Relaxed: a hint; a deferred wake is always delivered in the end.
    return deferrable_.load(std::memory_order_relaxed);
  }

 private:
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
  sync::Semaphore thread_token_;
  sync::CooperativeSemaphore task_token_;
};

}  // namespace conveyor::detail
