// The waiting paths of conveyor::sync::GroupLock: registration of waiters, the hand-over between
// groups, and the policy bounds. Included at the end of group_lock.hpp; not a public header.
//
// Everything here runs under `guard_` except a waiter's sleep on its own `granted` word. The
// protocol, step by step, is modelled in tests/model/group_lock.pml.
#pragma once

#include <utility>

namespace conveyor::sync {

inline GroupLock::GroupLock(GroupLockOptions options)
    : options_(std::move(options)), group_count_(options_.groups) {
  CONVEYOR_CONTRACT(group_count_ >= 1 && group_count_ <= State::max_groups,
                    "GroupLock: the number of groups must be in [1, 65536]");
  CONVEYOR_CONTRACT(options_.caps.empty() || options_.caps.size() == group_count_,
                    "GroupLock: caps must be empty or have one entry per group");
  caps_.assign(group_count_, State::max_holders);
  for (std::size_t group = 0; group < options_.caps.size(); ++group) {
    const std::uint32_t cap = options_.caps[group];
    CONVEYOR_CONTRACT(cap <= State::max_holders, "GroupLock: a cap exceeds 2^24 - 1 holders");
    if (cap != 0) caps_[group] = cap;
  }
  slots_ = std::make_unique<GroupSlot[]>(group_count_);
}

inline GroupLock::~GroupLock() {
  [[maybe_unused]] const std::uint64_t word = state_.load(std::memory_order_relaxed);
  CONVEYOR_DEBUG_CONTRACT(State::holders(word) == 0 && !State::contended(word),
                          "GroupLock destroyed while a thread holds it or waits for it");
}

inline GroupLock::GroupStats GroupLock::stats(std::size_t group) const {
  check_group(group);
  const GroupSlot& slot = slots_[group];
  // Relaxed: a metrics snapshot; entries being folded may be missed for a moment, never doubled.
  const std::uint64_t word = state_.load(std::memory_order_relaxed);
  GroupStats result;
  result.entries = slot.folded_entries.load(std::memory_order_relaxed) +
                   (State::owner(word) == group ? State::entries(word) : 0);
  result.waits = slot.waits.load(std::memory_order_relaxed);
  result.aces = result.entries >= result.waits ? result.entries - result.waits : 0;
  result.wait_time =
      std::chrono::nanoseconds(slot.wait_nanoseconds.load(std::memory_order_relaxed));
  return result;
}

// Whether the holding group `owner` may take in more threads now.
inline bool GroupLock::may_admit_more(std::size_t owner, std::uint64_t word) {
  if (State::holders(word) >= caps_[owner]) return false;
  const std::uint32_t foreign_waiters = total_waiting_ - slots_[owner].waiting;
  if (foreign_waiters == 0) return true;
  if (options_.policy == GroupLockPolicy::fair || closing_) return false;
  if (entries_while_blocked_ >= options_.max_entries_while_waiting ||
      Clock::now() - blocked_since_ >= options_.max_wait) {
    closing_ = true;
    return false;
  }
  return true;
}

// Whether a thread of `group` that is not yet registered as a waiter may enter at once.
inline bool GroupLock::may_enter_now(std::size_t group, std::uint64_t word) {
  const std::uint32_t holders = State::holders(word);
  if (!State::contended(word)) {
    return (holders == 0 || State::owner(word) == group) && holders < caps_[group];
  }
  // With waiters and no holder, the hand-over in rebalance() decides who is next.
  if (holders == 0 || State::owner(word) != group) return false;
  return may_admit_more(group, word);
}

inline void GroupLock::enqueue(GroupSlot& slot, Waiter& waiter) noexcept {
  waiter.previous = slot.tail;
  if (slot.tail != nullptr) {
    slot.tail->next = &waiter;
  } else {
    slot.head = &waiter;
  }
  slot.tail = &waiter;
  ++slot.waiting;
}

inline void GroupLock::unlink(GroupSlot& slot, Waiter& waiter) noexcept {
  (waiter.previous != nullptr ? waiter.previous->next : slot.head) = waiter.next;
  (waiter.next != nullptr ? waiter.next->previous : slot.tail) = waiter.previous;
  waiter.next = nullptr;
  waiter.previous = nullptr;
  --slot.waiting;
}

// Lets the first `count` waiters of `group` in: counts them into the word, then wakes each.
inline void GroupLock::grant(std::size_t group, std::uint32_t count, bool new_phase) {
  GroupSlot& slot = slots_[group];
  total_waiting_ -= count;
  const bool still_contended = total_waiting_ > 0;
  // Exits of the holding group may change the word meanwhile (fetch_sub), entries may not: the
  // contended bit is set and we hold the guard.
  std::uint64_t word = state_.load(std::memory_order_relaxed);
  Admission admission{};
  do {
    admission = admit(word, group, count, still_contended);
    // acq_rel: acquire pairs with the exits' release (their writes pass on to the granted
    // threads through their `granted` words); release keeps the word a release sequence.
  } while (!state_.compare_exchange_weak(word, admission.word, std::memory_order_acq_rel,
                                         std::memory_order_relaxed));
  fold(admission, group);
  slot.waits.fetch_add(count, std::memory_order_relaxed);
  const std::uint32_t foreign_waiters = total_waiting_ - slot.waiting;
  if (new_phase) {
    closing_ = false;
    entries_while_blocked_ = 0;
    if (foreign_waiters > 0 && options_.policy == GroupLockPolicy::throughput) {
      blocked_since_ = Clock::now();
    }
  } else if (foreign_waiters > 0) {
    entries_while_blocked_ += count;
  }
  for (std::uint32_t i = 0; i < count; ++i) {
    Waiter& waiter = *slot.head;
    unlink(slot, waiter);
    // Release pairs with the waiter's acquire load in wait_for_grant(). The node stays valid
    // through the wake: the waiter passes through the guard, which we hold, before it returns.
    waiter.granted.store(1, std::memory_order_release);
    detail::futex_wake(waiter.granted, 1);
  }
}

// Hands the lock to the next group when it is free, or lets capped waiters of the holding group
// in when there is room and the policy allows it. Called under guard_ after every change that
// may make progress possible: a waiter's arrival or departure, and every exit while contended.
inline void GroupLock::rebalance() {
  // Acquire pairs with the release of the exits; see "Memory ordering" in group_lock.hpp.
  const std::uint64_t word = state_.load(std::memory_order_acquire);
  if (total_waiting_ == 0) {
    if (State::contended(word)) {
      // acq_rel: an RMW like every change of the word, so the release sequence is not broken.
      state_.fetch_and(~State::contended_bit, std::memory_order_acq_rel);
    }
    closing_ = false;
    entries_while_blocked_ = 0;
    return;
  }
  const std::size_t owner = State::owner(word);
  const std::uint32_t holders = State::holders(word);
  if (holders == 0) {
    // The contended bit is set while anyone waits, so nobody can enter or leave now. Round robin
    // from the group after the last holder: every waiting group gets its turn.
    std::size_t next = owner;
    for (std::size_t step = 1; step <= group_count_; ++step) {
      const std::size_t candidate = (owner + step) % group_count_;
      if (slots_[candidate].waiting > 0) {
        next = candidate;
        break;
      }
    }
    grant(next, std::min(slots_[next].waiting, caps_[next]), true);
  } else if (slots_[owner].waiting > 0 && may_admit_more(owner, word)) {
    // Exits only lower `holders` meanwhile, so this never overfills the cap.
    grant(owner, std::min(slots_[owner].waiting, caps_[owner] - holders), false);
  }
}

inline bool GroupLock::enter_slow(std::size_t group, const Clock::time_point* deadline) {
  GroupSlot& slot = slots_[group];
  guard_.lock();
  // Acquire pairs with the release of the exits, as for the fast entry.
  std::uint64_t word = state_.load(std::memory_order_acquire);
  while (may_enter_now(group, word)) {
    const Admission admission = admit(word, group, 1, State::contended(word));
    // acq_rel: acquire as for the fast entry; release keeps the word a release sequence.
    if (state_.compare_exchange_weak(word, admission.word, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      fold(admission, group);
      if (total_waiting_ > slot.waiting) ++entries_while_blocked_;
      guard_.unlock();
      return true;
    }
  }
  const std::size_t owner = State::owner(word);
  if (group != owner && total_waiting_ == slots_[owner].waiting &&
      options_.policy == GroupLockPolicy::throughput) {
    // The first waiter of another group starts the clock of the holding group's phase.
    blocked_since_ = Clock::now();
    entries_while_blocked_ = 0;
    closing_ = false;
  }
  Waiter waiter;
  enqueue(slot, waiter);
  ++total_waiting_;
  // acq_rel: the returned word is not needed (rebalance() re-reads it), but the RMW orders the
  // bit before any exit that follows it; that exit then takes the slow path.
  state_.fetch_or(State::contended_bit, std::memory_order_acq_rel);
  rebalance();
  guard_.unlock();

  const Clock::time_point start = Clock::now();
  const bool entered = wait_for_grant(waiter, deadline);
  guard_.lock();
  // Grants are made only under the guard, so what `granted` says now is final.
  if (!entered && waiter.granted.load(std::memory_order_acquire) == 0) {
    unlink(slot, waiter);
    --total_waiting_;
    rebalance();
    guard_.unlock();
    return false;
  }
  guard_.unlock();
  const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
  slot.wait_nanoseconds.fetch_add(waited.count(), std::memory_order_relaxed);
  return true;
}

// Spins briefly, then sleeps until granted; false if the deadline (when given) passed first.
inline bool GroupLock::wait_for_grant(Waiter& waiter, const Clock::time_point* deadline) noexcept {
  for (int spins = 0; spins < 256; ++spins) {
    // Acquire pairs with the release store in grant().
    if (waiter.granted.load(std::memory_order_acquire) != 0) return true;
    detail::cpu_relax();
  }
  for (;;) {
    if (waiter.granted.load(std::memory_order_acquire) != 0) return true;
    if (deadline == nullptr) {
      detail::futex_wait(waiter.granted, 0);
    } else if (!detail::futex_wait_until(waiter.granted, 0, *deadline) &&
               Clock::now() >= *deadline) {
      return waiter.granted.load(std::memory_order_acquire) != 0;
    }
  }
}

inline void GroupLock::leave_slow() {
  guard_.lock();
  rebalance();
  guard_.unlock();
}

}  // namespace conveyor::sync
