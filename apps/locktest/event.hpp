// Event: the Win32 event object (auto-reset or manual-reset) on a futex word, and wait_any, a
// WaitForMultipleObjects(wait-any) that keeps its left-to-right priority.
//
// These exist only so that the paper's reference group locks can be written as the paper wrote
// them. They are not library primitives: they are unfair and wake every wait_any caller on every
// set.
//
// Contract:
// - Any thread may call any member, concurrently. Not copyable, not movable: waiters sleep on the
//   address of the state word.
// - `set` makes the event signalled. An automatic-reset event then lets exactly one waiter through
//   and becomes unsignalled again as that waiter returns; a manual-reset event lets every waiter
//   through until `reset`. Setting a signalled event does nothing (as in Win32).
// - `wait` returns once it has passed the event; `try_wait` never blocks.
// - `wait_any(events)` returns the index of the event it passed. It scans from the left, so when
//   several are signalled the lowest index wins, and it consumes only the event it returns.
//
// Progress: no fairness. A woken waiter competes with newcomers and may sleep again.
//
// Memory ordering: every operation on `state_` and the two sleeper counts is seq_cst.
// - A waiter passes with a seq_cst read (manual) or compare-exchange (automatic) of `state_` that
//   reads the value written by `set` (seq_cst, so also a release): whatever the setter wrote
//   before `set` is visible to the thread that passed.
// - Lost wake-ups are excluded by store-load (Dekker) pairings: `wait` increments `sleepers_` and
//   then reads `state_`; `set` writes `state_` and then reads `sleepers_`. Likewise `wait_any`
//   increments the board's sleepers and reads its epoch before scanning, and `set` reads the
//   board's sleepers after writing `state_` and bumps the epoch. In the single total order one
//   side sees the other.
// - seq_cst everywhere also gives the events one order of set/reset that all threads agree on,
//   as the kernel's event objects have; the paper's reasoning relies on it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>

#include "conveyor/sync/detail/futex.hpp"

namespace conveyor::locktest {

enum class EventReset { automatic, manual };

namespace detail {

// One board for every wait_any caller in the process: set() cannot know which wait_any calls
// watch its event, so it wakes them all and each rescans. Only one experiment runs at a time.
struct WaitAnyBoard {
  sync::detail::FutexWord epoch{0};
  std::atomic<std::int32_t> sleepers{0};
};

inline WaitAnyBoard& wait_any_board() noexcept {
  static WaitAnyBoard board;
  return board;
}

}  // namespace detail

class Event {
 public:
  Event(EventReset reset_kind, bool initially_set) noexcept
      : reset_kind_(reset_kind), state_(initially_set ? 1 : 0) {}

  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&&) = delete;
  Event& operator=(Event&&) = delete;

  void set() noexcept {
    // seq_cst: release for the waiter that passes, and the store half of both Dekker pairings.
    if (state_.exchange(1, std::memory_order_seq_cst) == 1) return;
    // seq_cst: load half of the pairing with wait().
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      // An automatic-reset event lets one waiter through, so waking one is enough: if a newcomer
      // takes it first, the woken thread finds it consumed and sleeps again.
      sync::detail::futex_wake(state_, reset_kind_ == EventReset::automatic
                                           ? 1
                                           : std::numeric_limits<std::int32_t>::max());
    }
    auto& board = detail::wait_any_board();
    // seq_cst: load half of the pairing with wait_any().
    if (board.sleepers.load(std::memory_order_seq_cst) > 0) {
      // seq_cst: a sleeper that read the old epoch returns from futex_wait at once.
      board.epoch.fetch_add(1, std::memory_order_seq_cst);
      sync::detail::futex_wake(board.epoch, std::numeric_limits<std::int32_t>::max());
    }
  }

  // seq_cst: one order of set/reset for all threads (see "Memory ordering").
  void reset() noexcept { state_.store(0, std::memory_order_seq_cst); }

  [[nodiscard]] bool try_wait() noexcept {
    if (reset_kind_ == EventReset::manual) {
      // seq_cst: acquire of the set() it reads, and the load half of the Dekker pairing.
      return state_.load(std::memory_order_seq_cst) == 1;
    }
    std::int32_t expected = 1;
    // seq_cst: acquire of the set() it consumes, and the load half of the Dekker pairing.
    return state_.compare_exchange_strong(expected, 0, std::memory_order_seq_cst);
  }

  void wait() noexcept {
    if (try_wait()) return;
    // seq_cst: store half of the pairing with set(); try_wait() below is the load half.
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    while (!try_wait())
      sync::detail::futex_wait(state_, 0);
    // relaxed: the count only decides whether set() calls the kernel; a stale high value costs
    // one needless wake.
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }

  // A snapshot, for tests and diagnostics.
  [[nodiscard]] bool is_set() const noexcept { return state_.load(std::memory_order_seq_cst) == 1; }

 private:
  EventReset reset_kind_;
  sync::detail::FutexWord state_;
  std::atomic<std::int32_t> sleepers_{0};
};

// Scans left to right and passes the first signalled event; npos if none.
inline constexpr std::size_t no_event = std::numeric_limits<std::size_t>::max();

inline std::size_t try_wait_any(std::span<Event* const> events) noexcept {
  for (std::size_t index = 0; index < events.size(); ++index) {
    if (events[index]->try_wait()) return index;
  }
  return no_event;
}

// WaitForMultipleObjects(count, handles, FALSE, INFINITE): the lowest signalled index wins.
inline std::size_t wait_any(std::span<Event* const> events) noexcept {
  if (const auto index = try_wait_any(events); index != no_event) return index;
  auto& board = detail::wait_any_board();
  // seq_cst: store half of the pairing with set(); the epoch read and the scan are the load half.
  board.sleepers.fetch_add(1, std::memory_order_seq_cst);
  std::size_t passed = no_event;
  for (;;) {
    // seq_cst: read before the scan, so a set() after the scan changes it and the wait returns.
    const std::int32_t epoch = board.epoch.load(std::memory_order_seq_cst);
    passed = try_wait_any(events);
    if (passed != no_event) break;
    sync::detail::futex_wait(board.epoch, epoch);
  }
  // relaxed: only decides whether set() calls the kernel.
  board.sleepers.fetch_sub(1, std::memory_order_relaxed);
  return passed;
}

inline std::size_t wait_any(std::initializer_list<Event*> events) noexcept {
  return wait_any(std::span<Event* const>(events.begin(), events.size()));
}

}  // namespace conveyor::locktest
