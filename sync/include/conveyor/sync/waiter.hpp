// Waiter: the owner's side of the Doorbell protocol, written once: announce, run the rechecks,
// re-check, park, and recover from a ring that the hand-over's cheap check missed.
//
// Contract:
// - Used by the Doorbell's owner only. `wait(reason, ready, cancelled)` returns true once
//   `ready()` holds and false once `cancelled()` does (whoever cancels rings with `ring_any`).
//   Both are re-evaluated after every wake-up, so a spurious or stale token costs one look.
// - Recovery from a missed ring (the owner's ringers use `ring_after_hand_over`):
//   - `bounded_park`: park `Doorbell::recheck_after` at most; if no ring came and the condition
//     still fails, run the heavy side of the asymmetric fence, re-check, and park until a ring.
//     For owners that sleep often (pipeline workers outnumbering cores): the heavy fence runs
//     once per idle period, not once per sleep.
//   - `fence_first`: run the heavy fence before the first park. For an owner that sleeps rarely
//     and must never wait for the timeout (a queue's blocked side).
//   - `none`: every ringer rings behind a full fence (`ring`, or `ring_on_recheck` after a fence
//     of its own), so no ring is missed: park until a ring (a mailbox's consumer).
// - Rechecks: before its first park, the owner rings, behind its own full fence, every doorbell
//   whose owner it may have missed with a cheap check (`ring_on_recheck`). What registers a
//   recheck stays alive, or removes it, while the owner may still wait.
//
// Memory ordering: that of the Doorbell. The announcement's full fence orders the owner's
// earlier changes before the rechecks' loads; the heavy fence makes every ringer either past its
// change (the re-check sees it) or before its check (which sees the announcement).
#pragma once

#include <array>
#include <cstddef>

#include "conveyor/sync/detail/asymmetric_fence.hpp"
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/doorbell.hpp"

namespace conveyor::sync {

class Waiter {
 public:
  enum class Recovery { bounded_park, fence_first, none };

  explicit Waiter(Doorbell& bell, Recovery recovery = Recovery::bounded_park) noexcept
      : bell_(bell), recovery_(recovery) {}

  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  // `deferrable`: ringers may put off the wake-up for a short while (deferred_wakes.hpp).
  template <class Ready, class Cancelled>
  bool wait(WaitReason reason, Ready&& ready, Cancelled&& cancelled, bool deferrable = true) {
    // The condition holds (or the wait was cancelled): withdraw the announcement.
    auto settled = [&] {
      if (!ready() && !cancelled()) return false;
      bell_.cancel();
      return true;
    };
    bool rechecked = false;
    for (;;) {
      if (ready()) return true;
      if (cancelled()) return false;
      bell_.prepare(reason, deferrable);
      if (!rechecked) {
        for (std::size_t i = 0; i < rechecks_count_; ++i)
          rechecks_[i].run(rechecks_[i].self);
        rechecked = true;
      }
      if (settled()) continue;
      if (recovery_ == Recovery::bounded_park && (bell_.park_bounded() || settled())) continue;
      if (recovery_ != Recovery::none) {
        detail::asymmetric_fence_heavy();
        if (settled()) continue;
      }
      bell_.park();
    }
  }

  // A recheck: `run(self)` rings, with Doorbell::ring_on_recheck, every doorbell whose owner may
  // wait for a change this owner made but checked only with ring_after_hand_over.
  struct Recheck {
    const void* self = nullptr;
    void (*run)(const void* self) = nullptr;
  };
  // A pipeline worker's: its input lanes, its ordering window, and the lanes out of its fused
  // group (two edges when a branch of a tee is fused into it).
  static constexpr std::size_t max_rechecks = 4;

  void add_recheck(Recheck recheck) noexcept {
    CONVEYOR_CONTRACT(rechecks_count_ < max_rechecks, "Waiter: too many rechecks");
    rechecks_[rechecks_count_++] = recheck;
  }
  void remove_recheck(const void* self) noexcept {
    for (std::size_t i = rechecks_count_; i-- > 0;) {
      if (rechecks_[i].self == self) rechecks_[i] = rechecks_[--rechecks_count_];
    }
  }

  [[nodiscard]] Doorbell& doorbell() noexcept { return bell_; }

 private:
  Doorbell& bell_;
  const Recovery recovery_;
  std::array<Recheck, max_rechecks> rechecks_{};
  std::size_t rechecks_count_ = 0;
};

}  // namespace conveyor::sync
