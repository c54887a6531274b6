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
// - Owner only: `prepare`, `cancel`, `park`, `park_bounded`, `reveal_missed_changes`. The owner
//   announces a wait with `prepare(reason)`, re-checks its condition, and then either `cancel()`s
//   (the condition holds) or parks: `park_bounded()` first; if that returned false and a re-check
//   fails, `reveal_missed_changes()`, and if a last re-check fails, `park()`.
// - Anyone: `ring(reason)` after making the owner's condition true for that reason (or
//   `waits_for(reason)`, which is `hand_over_fence()` then `announced(reason)`, a check of its
//   own, then `wake(reason)`); `ring_any()` after a change that ends every wait (cancellation).
// - A ring that finds no matching announcement costs its fence and one relaxed load, and does
//   nothing.
// - `waits_for` is the hand-over's check and may miss an announcement made at the same moment
//   (see below). A ringer that used it re-checks with `announced`, behind a full fence, when it
//   next waits itself (WorkerContext's rechecks); and an owner parked on a thread sleeps at most
//   `recheck_after` before it re-checks on its own, which covers a ringer busy elsewhere (a
//   source blocked in a read, a long stage call).
//
// Memory ordering: a store-load (Dekker) pairing, asymmetric on the hand-over path. The owner
// stores its reason and runs a full fence before it re-checks. A ringer stores its change (the
// lane index, the window) and then loads the reason:
// - In `ring`, and in every check of a cooperative owner's doorbell, behind a full fence: either
//   the owner's re-check sees the change, or the ringer sees the announcement.
// - In `waits_for` on a thread owner's doorbell, behind the light side of an asymmetric fence
//   (sync/detail/asymmetric_fence.hpp), which costs no instruction. The load may then run before
//   the change is visible and miss the announcement. So a thread owner parks for `recheck_after`
//   at most, re-checks, and if that fails runs the heavy side (membarrier) and re-checks again:
//   any ringer is then either past its change, which the re-check sees, or before its load, which
//   sees the announcement. Only after that does the owner park until a ring. A missed ring costs
//   its owner that while at most, and in practice nothing: the ringer's next check of the same
//   doorbell (its next push, pop or advance), or its re-check before it sleeps, finds the
//   announcement.
// The ringer that resets the announcement (a compare-exchange, acq_rel) is the only one that
// releases the semaphore, so one announcement yields at most one token; an owner whose `cancel`
// finds the announcement already reset takes that token, so the semaphore is empty whenever
// nobody waits. The semaphore only wakes the owner: the data it waited for is published by the
// lanes' own release/acquire pairs, which the owner's re-check reads.
//
// Why not a full fence per hand-over: in an unbatched pipeline each item crosses two lanes, and
// each crossing paid a fence on both the push and the pop, plus one per advance of the ordering
// window; the fence waits for the store of the lane's index, whose cache line the other core
// holds, and perf put 40% of the cycles of a 3-stage pipeline on the loads behind those fences.
// Why not membarrier on every sleep (as sync::BoundedQueue does): in a pipeline workers outnumber
// cores and sleep often, and every membarrier interrupts every core that runs a worker: measured
// on the 2-core CI machine, 45% of the CPU went to the kernel's IPI code. Here the heavy side runs
// only when a park lasts `recheck_after` without a ring and the condition still does not hold: a
// worker that goes idle pays it once.
//
// Why the owner announces before it spins: `park` is the semaphore's acquire, which spins a learnt
// while before it sleeps. A ringer that finds the announcement releases the token at once, and
// the semaphore makes no system call while its owner spins, so a hand-off that comes soon costs
// neither side a system call; and the owner yields its core now and then while it spins, which
// matters when workers outnumber cores.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "conveyor/sync/cooperative_semaphore.hpp"
#include "conveyor/sync/detail/asymmetric_fence.hpp"
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

  // How long a thread owner parks before it re-checks on its own, in case a ring missed its
  // announcement. Long next to a hand-over, short next to what a person notices.
  static constexpr std::chrono::milliseconds recheck_after{1};

  // Owner: the re-check found the condition false; sleep until a ring.
  void park() { take_token(); }

  // Owner: park() for `recheck_after` at most, on a thread owner's doorbell (a cooperative owner
  // parks until a ring: its ringers never miss). True once a ring's token is taken. False if no
  // ring came: the owner then re-checks its condition; if it still does not hold, it calls
  // `reveal_missed_changes()`, re-checks once more, and only then park()s.
  bool park_bounded() {
    if (cooperative_) {
      take_token();
      return true;
    }
    return thread_token_.try_acquire_for(recheck_after);
  }

  // Owner, after park_bounded() returned false and a re-check failed: the heavy side of the
  // asymmetric fence. Afterwards every change whose ringer's light-fenced check missed the
  // announcement is visible to the owner's next re-check.
  static void reveal_missed_changes() noexcept { sync::detail::asymmetric_fence_heavy(); }

  // Ringer, after making the condition for `reason` true: whether the owner announced a wait for
  // it. May miss an announcement made at the same moment (see "Memory ordering"); a ringer that
  // relies on it re-checks with `announced` before it sleeps.
  [[nodiscard]] bool waits_for(WaitReason reason) const noexcept {
    hand_over_fence();
    return announced(reason);
  }

  // Ringer: the fence of waits_for, for a ringer that goes on with `announced` itself.
  void hand_over_fence() const noexcept {
    if (cooperative_) {
      sync::detail::full_fence();
    } else {
      sync::detail::asymmetric_fence_light();
    }
  }

  // Ringer, after a fence that follows its change (hand_over_fence, or a full fence for a check
  // that must not miss): whether the owner waits for `reason`. wake() then decides with a
  // compare-exchange.
  [[nodiscard]] bool announced(WaitReason reason) const noexcept {
    // Relaxed: the caller's fence orders it.
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

  // Ringer, after making the condition for `reason` true. Never misses the announcement.
  void ring(WaitReason reason) {
    sync::detail::full_fence();
    if (announced(reason)) wake(reason);
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
