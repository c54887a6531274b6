// The internal guard of conveyor::sync::GroupLock: a FIFO ticket lock that sleeps on a futex.
// Not a public header.
//
// Contract: `lock`/`unlock` like a mutex; held for a few dozen instructions, never across a wait.
// FIFO, so a thread that asks for the guard gets it after at most the threads queued before it:
// GroupLock's starvation freedom rests on that (an unfair guard let one group's waiter lose the
// guard forever in the model check, tests/model/group_lock.pml).
//
// Memory ordering:
// - The acquire load of `serving_` that sees the caller's ticket pairs with the release half of
//   the previous holder's fetch_add on `serving_`: the guarded data is handed over.
// - Lost wake-ups are excluded by a store-load (Dekker) pairing, so those four operations are
//   seq_cst: a waiter takes its ticket (fetch_add on `next_`) and then reads `serving_`; `unlock`
//   advances `serving_` and then reads `next_`. Either the waiter sees its turn, or `unlock` sees
//   a ticket beyond the one it served and wakes the sleepers (the kernel re-checks `serving_`).
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

#include "conveyor/sync/detail/cpu_relax.hpp"
#include "conveyor/sync/detail/futex.hpp"

namespace conveyor::sync::detail {

class GroupLockGuard {
 public:
  void lock() noexcept {
    // seq_cst: the store half of the Dekker pairing with unlock().
    const std::int32_t ticket = next_.fetch_add(1, std::memory_order_seq_cst);
    for (int spins = 0; spins < spin_limit; ++spins) {
      // Acquire pairs with the release of unlock(); see "Memory ordering".
      if (serving_.load(std::memory_order_acquire) == ticket) return;
      cpu_relax();
    }
    for (;;) {
      // seq_cst: the load half of the Dekker pairing; acquire as above.
      const std::int32_t serving = serving_.load(std::memory_order_seq_cst);
      if (serving == ticket) return;
      futex_wait(serving_, serving);
    }
  }

  void unlock() noexcept {
    // seq_cst: release for the guarded data, and the store half of the Dekker pairing.
    const auto before =
        static_cast<std::uint32_t>(serving_.fetch_add(1, std::memory_order_seq_cst));
    const auto served = static_cast<std::int32_t>(before + 1);
    // seq_cst: the load half of the Dekker pairing. A ticket beyond `served` is queued; wake all
    // sleepers, since the futex cannot pick the one whose turn it is. There are few: the guard is
    // short and only contended while threads wait for the GroupLock.
    if (next_.load(std::memory_order_seq_cst) != served) {
      futex_wake(serving_, std::numeric_limits<std::int32_t>::max());
    }
  }

 private:
  static constexpr int spin_limit = 128;

  // Tickets wrap around (atomic signed arithmetic is two's complement); only equality matters.
  alignas(64) std::atomic<std::int32_t> next_{0};
  alignas(64) FutexWord serving_{0};
};

}  // namespace conveyor::sync::detail
