// GroupLock: any number of threads of ONE of n groups may hold it at once, never two groups.
//
// Contract: any thread may call any member, concurrently. Not copyable, not movable. A `group`
// outside [0, groups()) is a contract violation, always checked.
// - `lock(g)` returns holding the lock for g; not recursive (a holder may wait for itself).
//   `try_lock(g)` never waits: it enters only if the lock is free, or held by g below g's cap, and
//   nobody waits. `try_lock_for(g, timeout)` waits at most about `timeout` (steady clock).
// - `unlock(g)` only by a holder of g. Unlocking with a group that does not hold it, unlocking a
//   free lock, or destroying a lock that is held or waited for is a contract violation, checked
//   without NDEBUG (holders are counted, not known: unlocking for another holder of g goes unseen).
// - Guarantees: mutual exclusion between groups; at most caps[g] holders of g; while nobody waits,
//   an arrival of the holding group enters at once; once another group waits, the lock passes
//   round robin and all of a group's waiters (up to its cap) enter together, so a waiter enters
//   after at most groups()-1 other phases; `unlock` never waits for another group.
// - Policies: once another group waits, `throughput` (default) still admits the holding group
//   until that waiter has waited `max_wait` or seen `max_entries_while_waiting` entries; `fair`
//   admits nobody new. Capped waiters of the holding group enter as holders leave, by those rules.
//
// Memory ordering: entries (compare-exchange on `state_`, or a hand-over's load; acquire) read from
// the exits (fetch_sub, release) of the phase before, a release sequence of read-modify-writes:
// writes before `unlock` are visible to every later holder. A hand-over's release store to a
// waiter's `granted` pairs with its acquire load. The contended bit is a fetch_or (acq_rel) on the
// same word, so no Dekker pairing. `guard_` guards waiter bookkeeping; statistics are relaxed.
// Design notes: docs/design/sync-primitives.md#grouplock.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/deadline.hpp"
#include "conveyor/sync/detail/futex.hpp"
#include "conveyor/sync/detail/group_lock_guard.hpp"
#include "conveyor/sync/detail/group_lock_state.hpp"

namespace conveyor::sync {

enum class GroupLockPolicy { throughput, fair };

struct GroupLockOptions {
  std::size_t groups = 2;
  // Per group; empty, or 0 for a group, means unlimited. Otherwise exactly one entry per group.
  std::vector<std::uint32_t> caps{};
  // Throughput by default: see "Policies" above.
  GroupLockPolicy policy = GroupLockPolicy::throughput;
  // Throughput policy only: how long, and how many entries of the holding group, the first waiter
  // of another group tolerates before the holding group stops admitting newcomers.
  std::chrono::microseconds max_wait = std::chrono::microseconds(1000);
  std::uint32_t max_entries_while_waiting = 64;
};

class GroupLock {
 public:
  struct GroupStats {
    std::uint64_t entries = 0;              // times a thread of the group entered
    std::uint64_t aces = 0;                 // entries without waiting
    std::uint64_t waits = 0;                // entries after waiting
    std::chrono::nanoseconds wait_time{0};  // total time of those waits
  };

  class Guard {
   public:
    Guard(GroupLock& lock, std::size_t group) : lock_(lock), group_(group) { lock_.lock(group_); }
    ~Guard() { lock_.unlock(group_); }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    GroupLock& lock_;
    std::size_t group_;
  };

  explicit GroupLock(GroupLockOptions options = {});
  ~GroupLock();

  GroupLock(const GroupLock&) = delete;
  GroupLock& operator=(const GroupLock&) = delete;
  GroupLock(GroupLock&&) = delete;
  GroupLock& operator=(GroupLock&&) = delete;

  void lock(std::size_t group) {
    check_group(group);
    if (try_enter_fast(group)) return;
    enter_slow(group, nullptr);
  }

  [[nodiscard]] bool try_lock(std::size_t group) {
    check_group(group);
    return try_enter_fast(group);
  }

  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(std::size_t group,
                                  const std::chrono::duration<Rep, Period>& timeout) {
    check_group(group);
    if (try_enter_fast(group)) return true;
    if (timeout <= timeout.zero()) return false;
    const auto deadline = detail::deadline_after(timeout);
    return enter_slow(group, &deadline);
  }

  void unlock(std::size_t group) {
    check_group(group);
    // Release pairs with the acquire of the next entry or hand-over; see "Memory ordering".
    const std::uint64_t before = state_.fetch_sub(1, std::memory_order_release);
    CONVEYOR_DEBUG_CONTRACT(
        State::holders(before) > 0 && State::owner(before) == group,
        "GroupLock::unlock: the lock is not held by the group passed to unlock");
    if (State::contended(before)) [[unlikely]] {
      leave_slow();
    }
  }

  [[nodiscard]] GroupStats stats(std::size_t group) const;

  [[nodiscard]] std::size_t groups() const noexcept { return group_count_; }
  [[nodiscard]] std::uint32_t cap(std::size_t group) const {
    check_group(group);
    return caps_[group];
  }
  [[nodiscard]] GroupLockPolicy policy() const noexcept { return options_.policy; }

 private:
  using State = detail::GroupLockState;
  using Clock = std::chrono::steady_clock;

  // A waiting thread, on its own stack, queued FIFO in its group's slot under guard_.
  struct Waiter {
    Waiter* next = nullptr;
    Waiter* previous = nullptr;
    detail::FutexWord granted{0};  // 1 once a hand-over counted this thread in
  };

  // Per-group slow-path data, one cache line each: waiters of different groups do not share.
  struct alignas(64) GroupSlot {
    Waiter* head = nullptr;  // under guard_, like the next two
    Waiter* tail = nullptr;
    std::uint32_t waiting = 0;                     // waiters queued, not yet granted
    std::atomic<std::uint64_t> folded_entries{0};  // entries moved out of the state word
    std::atomic<std::uint64_t> waits{0};
    std::atomic<std::int64_t> wait_nanoseconds{0};
  };

  // The word after `added` entries of `group` join `word`, and the entry counts that no longer
  // fit into it (they go to the statistics counters).
  struct Admission {
    std::uint64_t word;
    std::size_t fold_group;
    std::uint64_t fold_count;
    std::uint64_t overflow;  // entries of `group` itself that do not fit
  };

  void check_group(std::size_t group) const {
    CONVEYOR_CONTRACT(group < group_count_, "GroupLock: group out of range");
  }

  static Admission admit(std::uint64_t word, std::size_t group, std::uint32_t added,
                         bool contended) noexcept {
    Admission result{0, group, 0, 0};
    std::uint64_t entries = 0;
    if (State::owner(word) == group) {
      entries = State::entries(word);
    } else {
      result.fold_group = State::owner(word);
      result.fold_count = State::entries(word);
    }
    entries += added;
    if (entries > State::entries_mask) {
      result.overflow = entries;
      entries = 0;
    }
    result.word = State::make(group, State::holders(word) + added, entries, contended);
    return result;
  }

  void fold(const Admission& admission, std::size_t group) noexcept {
    if (admission.fold_count != 0) {
      slots_[admission.fold_group].folded_entries.fetch_add(admission.fold_count,
                                                            std::memory_order_relaxed);
    }
    if (admission.overflow != 0) {
      slots_[group].folded_entries.fetch_add(admission.overflow, std::memory_order_relaxed);
    }
  }

  bool try_enter_fast(std::size_t group) noexcept {
    std::uint64_t word = state_.load(std::memory_order_relaxed);
    for (;;) {
      const std::uint32_t holders = State::holders(word);
      if (State::contended(word) || (holders != 0 && State::owner(word) != group) ||
          holders >= caps_[group]) {
        return false;
      }
      if (State::owner(word) == group && State::entries(word) < State::entries_mask) {
        // Acquire pairs with the release of the previous exits; see "Memory ordering".
        if (state_.compare_exchange_weak(word, word + State::one_entry, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
          return true;
        }
        continue;
      }
      const Admission admission = admit(word, group, 1, false);
      if (state_.compare_exchange_weak(word, admission.word, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        fold(admission, group);
        return true;
      }
    }
  }

  // Under guard_.
  bool may_admit_more(std::size_t owner, std::uint64_t word);
  bool may_enter_now(std::size_t group, std::uint64_t word);
  void grant(std::size_t group, std::uint32_t count, bool new_phase);
  void rebalance();

  void enqueue(GroupSlot& slot, Waiter& waiter) noexcept;
  static void unlink(GroupSlot& slot, Waiter& waiter) noexcept;
  bool wait_for_grant(Waiter& waiter, const Clock::time_point* deadline) noexcept;
  bool enter_slow(std::size_t group, const Clock::time_point* deadline);
  void leave_slow();

  GroupLockOptions options_;
  std::size_t group_count_;
  std::vector<std::uint32_t> caps_;  // 0 replaced by State::max_holders
  alignas(64) std::atomic<std::uint64_t> state_{0};
  detail::GroupLockGuard guard_;
  // Under guard_: waiters of all groups, and the bounds of the current phase.
  std::uint32_t total_waiting_ = 0;
  bool closing_ = false;  // the holding group admits nobody new this phase
  std::uint32_t entries_while_blocked_ = 0;
  Clock::time_point blocked_since_{};
  std::unique_ptr<GroupSlot[]> slots_;
};

}  // namespace conveyor::sync

#include "conveyor/sync/detail/group_lock_slow.hpp"
