// RwLock: a reader/writer lock that meets the SharedMutex requirements (std::shared_lock,
// std::unique_lock, std::scoped_lock). Writers are arbitrated by a two-group GroupLock with
// writers capped at one; readers that meet no writer never touch it.
//
// Contract: any thread may call any member, concurrently. Not copyable, not movable.
// - `lock`/`try_lock`/`try_lock_for`/`unlock` take and give back exclusive (writer) ownership, the
//   `_shared` forms shared (reader) ownership. Not recursive, no upgrade: a reader that asks for
//   the write lock, or again for a read lock while a writer waits, waits for itself.
// - `unlock_shared` must run on the thread that called `lock_shared` (readers count per thread).
// - Unlocking what the calling thread does not hold, or destroying the lock while a thread holds
//   it or waits for it, is a contract violation, checked without NDEBUG as far as the counts tell.
// - Neither side starves: once a writer is announced no new reader gets in, and readers that met
//   a writer get the lock through the GroupLock when it leaves, under the constructor's `policy`.
//
// Memory ordering (seq_cst unless noted): a reader adds itself to its slot, then loads
// `writer_state_`; a writer stores `writer_present` there, then loads every slot: one sees the
// other, so the writer waits or the reader backs off. Likewise a writer sets `writer_sleeping`,
// then loads the slots, and a leaving reader subtracts itself, then loads `writer_state_`: the
// writer sees it gone, or is woken. A reader's exit (fetch_sub; a release sequence per slot) pairs
// with the writer's slot loads; `unlock`'s release store of 0 with the readers' load of
// `writer_state_`. The GroupLock orders slow-path readers and the next writer after a writer, and
// a slow-path reader's relaxed count-in (made holding the reader group) before the next writer's
// scan. Statistics counters are relaxed.
// Design notes: docs/design/sync-primitives.md#rwlock.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/cpu_relax.hpp"
#include "conveyor/sync/detail/deadline.hpp"
#include "conveyor/sync/detail/futex.hpp"
#include "conveyor/sync/group_lock.hpp"

namespace conveyor::sync {

class RwLock {
 public:
  static constexpr std::size_t reader_group = 0;
  static constexpr std::size_t writer_group = 1;
  // Threads are spread over the slots round robin, in the order in which they first read-lock any
  // RwLock; threads that share a slot share its cache line, nothing more.
  static constexpr std::size_t reader_slot_count = 16;

  explicit RwLock(GroupLockPolicy policy = GroupLockPolicy::throughput)
      : lock_(GroupLockOptions{.groups = 2, .caps = {0, 1}, .policy = policy}) {}

  ~RwLock() {
    // Relaxed: whoever destroys the lock must already be ordered after every user.
    CONVEYOR_DEBUG_CONTRACT(writer_state_.load(std::memory_order_relaxed) == 0 && readers_gone(),
                            "RwLock destroyed while a thread holds it or waits for it");
  }

  RwLock(const RwLock&) = delete;
  RwLock& operator=(const RwLock&) = delete;
  RwLock(RwLock&&) = delete;
  RwLock& operator=(RwLock&&) = delete;

  void lock() {
    bool waited = false;
    Clock::time_point start{};
    if (!lock_.try_lock(writer_group)) {
      waited = true;
      start = Clock::now();
      lock_.lock(writer_group);
    }
    announce_writer();
    if (!readers_gone()) {
      if (!waited) start = Clock::now();
      waited = true;
      wait_for_readers(nullptr);
    }
    if (waited) record_writer_wait(start);
  }

  [[nodiscard]] bool try_lock() {
    if (!lock_.try_lock(writer_group)) return false;
    announce_writer();
    if (readers_gone()) return true;
    withdraw_writer();
    return false;
  }

  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    if (try_lock()) return true;
    if (timeout <= timeout.zero()) return false;
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = detail::deadline_after(timeout);
    if (!lock_.try_lock_for(writer_group, deadline - Clock::now())) return false;
    announce_writer();
    if (!wait_for_readers(&deadline)) {
      withdraw_writer();
      return false;
    }
    record_writer_wait(start);
    return true;
  }

  void unlock() {
    // Release pairs with the readers' load of writer_state_; before the GroupLock lets the next
    // writer announce itself.
    writer_state_.store(0, std::memory_order_release);
    lock_.unlock(writer_group);
  }

  void lock_shared() {
    ReaderSlot& slot = slot_of_this_thread();
    if (try_enter_fast(slot)) return;
    const Clock::time_point start = Clock::now();
    if (!spin_past_writer(slot)) enter_slow(slot, nullptr);
    record_wait(statistics_[reader_group], start);
  }

  [[nodiscard]] bool try_lock_shared() {
    ReaderSlot& slot = slot_of_this_thread();
    if (try_enter_fast(slot)) return true;
    if (lock_.try_lock(reader_group)) {
      count_in_while_holding_reader_group(slot);
      return true;
    }
    retract_entry(slot);
    return false;
  }

  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout) {
    ReaderSlot& slot = slot_of_this_thread();
    if (try_enter_fast(slot)) return true;
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = detail::deadline_after(std::max(timeout, timeout.zero()));
    if (!spin_past_writer(slot) && !enter_slow(slot, &deadline)) return false;
    record_wait(statistics_[reader_group], start);
    return true;
  }

  void unlock_shared() {
    [[maybe_unused]] const std::uint64_t before = leave(slot_of_this_thread());
    CONVEYOR_DEBUG_CONTRACT((before & holders_mask) != 0,
                            "RwLock::unlock_shared: this thread's reader slot holds no reader");
  }

  // Entries, aces and waits of readers (reader_group) and writers (writer_group). A reader waits
  // when it meets a writer; a writer when another writer, or a reader, is inside.
  [[nodiscard]] GroupLock::GroupStats stats(std::size_t group) const {
    CONVEYOR_CONTRACT(group == reader_group || group == writer_group,
                      "RwLock::stats: group must be reader_group or writer_group");
    GroupLock::GroupStats result;
    const Statistics& counters = statistics_[group];
    // Relaxed: a metrics snapshot.
    if (group == writer_group) {
      const std::uint64_t entered = lock_.stats(writer_group).entries;
      const std::uint64_t withdrawn = counters.withdrawn.load(std::memory_order_relaxed);
      result.entries = entered >= withdrawn ? entered - withdrawn : 0;
    } else {
      std::int64_t entries = counters.folded_entries.load(std::memory_order_relaxed);
      for (const ReaderSlot& slot : slots_) {
        entries +=
            static_cast<std::int64_t>(slot.word.load(std::memory_order_relaxed)) >> holder_bits;
      }
      result.entries = entries > 0 ? static_cast<std::uint64_t>(entries) : 0;
    }
    result.waits = counters.waits.load(std::memory_order_relaxed);
    result.aces = result.entries >= result.waits ? result.entries - result.waits : 0;
    result.wait_time =
        std::chrono::nanoseconds(counters.wait_nanoseconds.load(std::memory_order_relaxed));
    return result;
  }

 private:
  using Clock = std::chrono::steady_clock;

  // A slot word: readers inside in the low bits, and above them a signed count of entries (the
  // statistics), folded into `folded_entries` before it can overflow.
  static constexpr unsigned holder_bits = 24;
  static constexpr std::uint64_t holders_mask = (std::uint64_t{1} << holder_bits) - 1;
  static constexpr std::uint64_t one_entry = std::uint64_t{1} << holder_bits;
  static constexpr std::int64_t fold_threshold = std::int64_t{1} << 36;

  static constexpr int reader_spins = 128;
  static constexpr std::int32_t writer_present = 1;
  static constexpr std::int32_t writer_sleeping = 2;

  struct alignas(64) ReaderSlot {
    std::atomic<std::uint64_t> word{0};
  };

  struct alignas(64) Statistics {
    std::atomic<std::int64_t> folded_entries{0};  // readers only
    std::atomic<std::uint64_t> withdrawn{0};      // writers only: GroupLock entries given back
    std::atomic<std::uint64_t> waits{0};
    std::atomic<std::int64_t> wait_nanoseconds{0};
  };

  ReaderSlot& slot_of_this_thread() noexcept {
    static std::atomic<std::size_t> next_slot{0};
    // Relaxed: it only spreads threads over the slots; every value is correct.
    thread_local const std::size_t index =
        next_slot.fetch_add(1, std::memory_order_relaxed) % reader_slot_count;
    return slots_[index];
  }

  bool try_enter_fast(ReaderSlot& slot) { return try_count_in(slot, one_entry + 1); }

  // Adds `added` (a holder, and maybe an entry) to the slot and keeps it if no writer is
  // announced; otherwise backs off, keeping only the entry.
  bool try_count_in(ReaderSlot& slot, std::uint64_t added) {
    // Relaxed: a hint only. While a writer is announced, a reader that counted itself in would
    // only make the writer's scan wait for its back-off.
    if (writer_state_.load(std::memory_order_relaxed) != 0) {
      // Relaxed: statistics; the entry stays counted for the slow path, as after a back-off.
      if (added != 1) slot.word.fetch_add(one_entry, std::memory_order_relaxed);
      return false;
    }
    // seq_cst: the reader's half of the announcement pairing (see "Memory ordering").
    const std::uint64_t before = slot.word.fetch_add(added, std::memory_order_seq_cst);
    if (static_cast<std::int64_t>(before) >> holder_bits >= fold_threshold) [[unlikely]] {
      fold_entries(slot);
    }
    // seq_cst, so also acquire: pairs with the writer's store in announce_writer(), and with the
    // release store of 0 in unlock().
    if (writer_state_.load(std::memory_order_seq_cst) == 0) return true;
    leave(slot);  // back off; the entry stays counted for the slow path
    return false;
  }

  // After a back-off: most writers hold the lock briefly, so spin a little while one is
  // announced and enter once it has left, instead of queueing in the GroupLock at once. Bounded,
  // so a reader that keeps meeting writers still queues, where it cannot starve.
  bool spin_past_writer(ReaderSlot& slot) {
    for (int spins = 0; spins < reader_spins; ++spins) {
      detail::cpu_relax();
      // Relaxed: only a hint of when to retry; the retry itself makes the seq_cst pairing.
      if (writer_state_.load(std::memory_order_relaxed) != 0) continue;
      if (try_count_in(slot, 1)) return true;
    }
    return false;
  }

  void fold_entries(ReaderSlot& slot) {
    // Relaxed: statistics. Concurrent folds each move their share; the field is signed, so the
    // sum stays exact.
    slot.word.fetch_sub(static_cast<std::uint64_t>(fold_threshold) << holder_bits,
                        std::memory_order_relaxed);
    statistics_[reader_group].folded_entries.fetch_add(fold_threshold, std::memory_order_relaxed);
  }

  // Subtracts one reader from `slot` and wakes a writer that sleeps until the readers are gone.
  // Returns the slot word before.
  std::uint64_t leave(ReaderSlot& slot) {
    // seq_cst: release for the writer's scan, and the reader's half of the sleep pairing.
    const std::uint64_t before = slot.word.fetch_sub(1, std::memory_order_seq_cst);
    if (writer_state_.load(std::memory_order_seq_cst) & writer_sleeping) [[unlikely]] {
      wake_writer();
    }
    return before;
  }

  void wake_writer() {
    // seq_cst: a later leaving reader that reads this value must come before the writer's next
    // announcement of sleep in the total order, so that the writer's next scan sees its exit.
    if (writer_state_.fetch_and(~writer_sleeping, std::memory_order_seq_cst) & writer_sleeping) {
      detail::futex_wake(writer_state_, 1);
    }
  }

  void retract_entry(ReaderSlot& slot) {
    // Relaxed: statistics only; the holder was already subtracted.
    slot.word.fetch_sub(one_entry, std::memory_order_relaxed);
  }

  // With the reader group held, no writer is announced: count in, and let the group go.
  void count_in_while_holding_reader_group(ReaderSlot& slot) {
    // Relaxed: ordered before the next writer's scan by the GroupLock; see "Memory ordering".
    slot.word.fetch_add(1, std::memory_order_relaxed);
    lock_.unlock(reader_group);
  }

  // Queues in the GroupLock's reader group; the entry is already counted.
  bool enter_slow(ReaderSlot& slot, const Clock::time_point* deadline) {
    if (deadline == nullptr) {
      lock_.lock(reader_group);
    } else if (!lock_.try_lock_for(reader_group, *deadline - Clock::now())) {
      retract_entry(slot);
      return false;
    }
    count_in_while_holding_reader_group(slot);
    return true;
  }

  // Under the writer group.
  void announce_writer() {
    // seq_cst: the writer's half of the announcement pairing.
    writer_state_.store(writer_present, std::memory_order_seq_cst);
  }

  void withdraw_writer() {
    // Release, as in unlock(): readers that saw nothing of this writer see nothing either.
    writer_state_.store(0, std::memory_order_release);
    // Relaxed: statistics.
    statistics_[writer_group].withdrawn.fetch_add(1, std::memory_order_relaxed);
    lock_.unlock(writer_group);
  }

  [[nodiscard]] bool readers_gone() const {
    for (const ReaderSlot& slot : slots_) {
      // seq_cst, so also acquire: pairs with the readers' exits; and the writer's half of both
      // pairings.
      if ((slot.word.load(std::memory_order_seq_cst) & holders_mask) != 0) return false;
    }
    return true;
  }

  // Under the writer group, announced. Spins briefly, then sleeps until the readers inside are
  // gone; false if the deadline (when given) passed first.
  bool wait_for_readers(const Clock::time_point* deadline) {
    for (int spins = 0; spins < 256; ++spins) {
      if (readers_gone()) return true;
      detail::cpu_relax();
    }
    for (;;) {
      // seq_cst: the writer's half of the sleep pairing.
      writer_state_.store(writer_present | writer_sleeping, std::memory_order_seq_cst);
      if (readers_gone()) break;
      if (deadline == nullptr) {
        detail::futex_wait(writer_state_, writer_present | writer_sleeping);
      } else if (!detail::futex_wait_until(writer_state_, writer_present | writer_sleeping,
                                           *deadline) &&
                 Clock::now() >= *deadline) {
        if (readers_gone()) break;
        // Relaxed: only this writer and leaving readers (clearing the bit) change the word now.
        writer_state_.store(writer_present, std::memory_order_relaxed);
        return false;
      }
    }
    // Relaxed: as above.
    writer_state_.store(writer_present, std::memory_order_relaxed);
    return true;
  }

  static void record_wait(Statistics& counters, Clock::time_point start) {
    const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
    // Relaxed: statistics.
    counters.waits.fetch_add(1, std::memory_order_relaxed);
    counters.wait_nanoseconds.fetch_add(waited.count(), std::memory_order_relaxed);
  }

  void record_writer_wait(Clock::time_point start) {
    record_wait(statistics_[writer_group], start);
  }

  GroupLock lock_;
  // writer_present while a writer holds the writer group and is announced; writer_sleeping while
  // it sleeps until the readers are gone. Read by every reader, written only by writers (and a
  // reader that clears writer_sleeping to wake one): read-mostly, on a line of its own.
  alignas(64) detail::FutexWord writer_state_{0};
  std::array<ReaderSlot, reader_slot_count> slots_{};
  std::array<Statistics, 2> statistics_{};
};

}  // namespace conveyor::sync
