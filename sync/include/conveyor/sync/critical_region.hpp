// CriticalRegion<State>: a conditional critical region. A piece of state that one thread at a
// time may act on, entered once a predicate over the state holds.
//
// Contract:
// - Any thread may call any member, concurrently. Not copyable, not movable.
// - `enter_when(predicate, action)`: evaluates `predicate(const State&)` exclusively; once it
//   holds, runs `action(State&)` in the same exclusive stretch (the predicate still holds when
//   the action starts) and returns what the action returns (references are returned as such).
// - `enter(action)`: `enter_when` with a predicate that always holds.
// - A thread whose predicate does not hold does NOT hold the region while it waits, so other
//   threads can enter and change the state.
// - The predicate is re-evaluated each time another thread leaves the region; it should be cheap
//   and free of side effects. It must not wait, and neither predicate nor action may enter the
//   same region again (that is a self-deadlock).
// - If the predicate or the action throws, the region is left (and waiters re-check) before the
//   exception propagates.
// - No fairness among waiters whose predicates hold at once: a protocol on top brings its own.
//
// Memory ordering: `region_` is a Semaphore used as a mutex; its acquire pairs with the previous
// holder's release, so every action sees the state as the previous one left it. A waiter reads
// `exits_` while holding the region, and every exit increments `exits_` before releasing it, so no
// wake-up is lost. `predicate_waiters_` changes only under the region, which orders its reads.
// Design notes: docs/design/sync-primitives.md#criticalregion.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "conveyor/sync/detail/futex.hpp"
#include "conveyor/sync/semaphore.hpp"

namespace conveyor::sync {

template <class State>
class CriticalRegion {
 public:
  explicit CriticalRegion(State initial = {}) : state_(std::move(initial)) {}

  CriticalRegion(const CriticalRegion&) = delete;
  CriticalRegion& operator=(const CriticalRegion&) = delete;
  CriticalRegion(CriticalRegion&&) = delete;
  CriticalRegion& operator=(CriticalRegion&&) = delete;

  template <class Predicate, class Action>
  decltype(auto) enter_when(Predicate predicate, Action action) {
    region_.acquire();
    Exit exit{*this};
    while (!predicate(std::as_const(state_))) {
      wait_for_an_exit();
    }
    return action(state_);
  }

  template <class Action>
  decltype(auto) enter(Action action) {
    return enter_when([](const State&) { return true; }, std::move(action));
  }

 private:
  // Leaves the region on every path out of enter_when, exceptions included.
  struct Exit {
    CriticalRegion& region;
    ~Exit() { region.leave(); }
  };

  // Called holding the region; returns holding it again.
  void wait_for_an_exit() {
    // Relaxed: read and changed only under the region (see "Memory ordering").
    const std::int32_t seen = exits_.load(std::memory_order_relaxed);
    predicate_waiters_.store(predicate_waiters_.load(std::memory_order_relaxed) + 1,
                             std::memory_order_relaxed);
    region_.release();
    detail::futex_wait(exits_, seen);
    region_.acquire();
    predicate_waiters_.store(predicate_waiters_.load(std::memory_order_relaxed) - 1,
                             std::memory_order_relaxed);
  }

  void leave() {
    // A waiter that has not yet gone to sleep compares against the old value and returns at once.
    // Relaxed: changed only under the region; the futex re-reads it in the kernel.
    // Unsigned arithmetic: the count wraps around, which the futex comparison tolerates.
    const auto exits = static_cast<std::uint32_t>(exits_.load(std::memory_order_relaxed));
    exits_.store(static_cast<std::int32_t>(exits + 1), std::memory_order_relaxed);
    const std::int32_t waiters = predicate_waiters_.load(std::memory_order_relaxed);
    region_.release();
    if (waiters > 0) detail::futex_wake(exits_, waiters);
  }

  Semaphore region_{1};
  detail::FutexWord exits_{0};
  // Atomic only so that nothing reads it torn; all accesses are under the region.
  std::atomic<std::int32_t> predicate_waiters_{0};
  State state_;
};

}  // namespace conveyor::sync
