// MpmcBoundedQueue<T>: a ring of exactly `capacity` elements for many producers and consumers.
//
// Contract: any thread may call any member, concurrently. Not copyable, not movable.
// - `capacity >= 1` (else a contract violation); at most `capacity` elements are held at a time.
//   T is nothrow move constructible and destructible; no default constructor or assignment needed.
//   The destructor destroys what is still queued; no call may be in progress then.
// - push blocks while full, and returns false (dropping its value) once closed or aborted.
//   try_push never blocks and moves only when true; try_push_for waits at most about `timeout`
//   (steady clock) for room, and moves only when true (false on timeout, or once closed: tell
//   them apart with closed()). push_bulk returns how many went in (only those were moved from).
// - pop blocks while empty. After close() consumers drain what is left, then all get nullopt;
//   after abort(), nullopt at once. try_pop never blocks. pop_bulk (max >= 1) waits for an item or
//   the end; 0 only at the end. Items leave in the order their pushes claimed slots (with several
//   consumers, the order in which the pops return is up to the scheduler).
// - close() is linearisable: a push that returned true precedes it and its item will be popped
//   (unless aborted); a push that starts after it fails. abort() wakes every blocked caller at
//   once; pending items are destroyed by the next consumer call, or by the destructor.
//
// Memory ordering: a cell's sequence store after its element is constructed, or emptied (seq_cst,
// so release), pairs with the other side's acquire load of it; the position compare-exchanges are
// relaxed. Bulk forms store a run's sequences in reverse, the first cell last: its acquire covers
// the run. close()'s seq_cst fetch_or of the closed bit pairs with the acquire loads of `enqueue_`;
// abort() stores `aborted_` before it closes. Sleeping is a seq_cst Dekker pairing: a waiter adds
// itself to its side's waiter count, then re-checks; a waker stores (or closes), then reads it.
// A waiter that leaves without being woken (its re-check saw room, or its wait timed out) takes
// itself off the count, or, if a waker already did, takes the token that waker releases for it.
// A call that took an item (or a cell) while others of its side sleep and more are ready wakes
// one of them: a wake-up spent on a sleeper that found the head cell still being written, or
// taken by another, is passed on rather than lost.
// Design notes: docs/design/sync-primitives.md#mpmcboundedqueue.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "conveyor/sync/detail/adaptive_spin.hpp"
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/deadline.hpp"
#include "conveyor/sync/detail/ring_slot.hpp"
#include "conveyor/sync/semaphore.hpp"

namespace conveyor::sync {

template <class T>
class MpmcBoundedQueue {
  static_assert(std::is_nothrow_move_constructible_v<T> && std::is_nothrow_destructible_v<T>,
                "MpmcBoundedQueue<T>: T must be nothrow move constructible and destructible");

 public:
  explicit MpmcBoundedQueue(std::size_t capacity)
      : capacity_(checked_capacity(capacity)), cells_(std::make_unique<Cell[]>(capacity)) {
    for (std::size_t i = 0; i < capacity_; ++i) {
      cells_[i].sequence.store(free_for(i), std::memory_order_relaxed);
    }
  }

  MpmcBoundedQueue(const MpmcBoundedQueue&) = delete;
  MpmcBoundedQueue& operator=(const MpmcBoundedQueue&) = delete;
  MpmcBoundedQueue(MpmcBoundedQueue&&) = delete;
  MpmcBoundedQueue& operator=(MpmcBoundedQueue&&) = delete;

  ~MpmcBoundedQueue() {
    const std::uint64_t end = enqueue_.load(std::memory_order_acquire) & index_mask;
    for (std::uint64_t position = dequeue_.load(std::memory_order_acquire); position != end;
         ++position) {
      Cell& cell = cell_at(position);
      if (cell.sequence.load(std::memory_order_acquire) == ready_for(position)) cell.slot.destroy();
    }
  }

  bool push(T value) {
    return push_waiting(value, [this] {
      wait_for_space();
      return true;
    });
  }

  [[nodiscard]] bool try_push(T& value) {
    std::uint64_t position = 0;
    if (claim_for_push(position, 1) != Claim::claimed) return false;
    publish(position, value);
    return true;
  }

  template <class Rep, class Period>
  [[nodiscard]] bool try_push_for(T& value, const std::chrono::duration<Rep, Period>& timeout) {
    const std::chrono::steady_clock::time_point deadline = detail::deadline_after(timeout);
    return push_waiting(value, [this, deadline] { return wait_for_space_until(deadline); });
  }

  std::optional<T> pop() {
    for (;;) {
      std::uint64_t position = 0;
      std::uint64_t count = 0;
      switch (claim_for_pop(position, count, 1)) {
        case Claim::claimed:
          return take_one(position);
        case Claim::ended:
          return std::nullopt;
        case Claim::none:
          wait_for_items();
          break;
      }
    }
  }

  [[nodiscard]] std::optional<T> try_pop() {
    std::uint64_t position = 0;
    std::uint64_t count = 0;
    if (claim_for_pop(position, count, 1, /*wait_for_writers=*/false) != Claim::claimed) {
      return std::nullopt;
    }
    return take_one(position);
  }

  template <class InputIt>
  std::size_t push_bulk(InputIt first, InputIt last) {
    static_assert(std::is_nothrow_constructible_v<T, decltype(std::move(*first))>,
                  "MpmcBoundedQueue::push_bulk: T must be nothrow constructible from the items");
    std::size_t pushed = 0;
    if constexpr (std::forward_iterator<InputIt>) {
      auto remaining = static_cast<std::uint64_t>(std::distance(first, last));
      while (remaining > 0) {
        std::uint64_t position = 0;
        const std::uint64_t limit = std::min<std::uint64_t>(remaining, capacity_);
        const std::uint64_t count = claim_run_for_push(position, limit);
        if (count == 0) {
          if (closed()) break;
          wait_for_space();
          continue;
        }
        // Publish in reverse so that the first cell, the one waiters look at, comes last.
        InputIt item = first;
        for (std::uint64_t i = 0; i < count; ++i, ++item) {
          cell_at(position + i).slot.construct(std::move(*item));
        }
        for (std::uint64_t i = count; i-- > 1;) {
          // Release pairs with the consumer's acquire of the sequence; the first cell's store
          // below covers this one too.
          cell_at(position + i).sequence.store(ready_for(position + i), std::memory_order_release);
        }
        // seq_cst: see "Memory ordering" (Dekker pairing with waiting consumers).
        cell_at(position).sequence.store(ready_for(position), std::memory_order_seq_cst);
        wake(consumers_waiting_, items_, count);
        pass_on_space();
        first = item;
        remaining -= count;
        pushed += static_cast<std::size_t>(count);
      }
    } else {
      // A single-pass range cannot be counted up front, and a claimed cell must be filled.
      for (; first != last; ++first) {
        if (!push(T(std::move(*first)))) break;
        ++pushed;
      }
    }
    return pushed;
  }

  template <class OutputIt>
  std::size_t pop_bulk(OutputIt out, std::size_t max) {
    CONVEYOR_CONTRACT(max >= 1, "MpmcBoundedQueue::pop_bulk: max must be at least 1");
    for (;;) {
      std::uint64_t position = 0;
      std::uint64_t count = 0;
      switch (claim_for_pop(position, count, std::min<std::uint64_t>(max, capacity_))) {
        case Claim::claimed:
          return take_run(position, count, out);
        case Claim::ended:
          return 0;
        case Claim::none:
          wait_for_items();
          break;
      }
    }
  }

  void close() {
    // seq_cst: a release for consumers that read the bit, and the store half of the Dekker
    // pairings with both waiter counts.
    enqueue_.fetch_or(closed_bit, std::memory_order_seq_cst);
    wake_all(consumers_waiting_, items_);
    wake_all(producers_waiting_, free_slots_);
  }

  void abort() {
    // seq_cst: ordered before the closed bit, which consumers read with acquire.
    aborted_.store(true, std::memory_order_seq_cst);
    close();
  }

  [[nodiscard]] bool closed() const noexcept {
    // Acquire pairs with the fetch_or in close().
    return (enqueue_.load(std::memory_order_acquire) & closed_bit) != 0;
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

  [[nodiscard]] std::size_t size_approx() const noexcept {
    // Relaxed: a snapshot. Reading the dequeue position first keeps the difference non-negative.
    const std::uint64_t head = dequeue_.load(std::memory_order_relaxed);
    const std::uint64_t tail = enqueue_.load(std::memory_order_relaxed) & index_mask;
    return static_cast<std::size_t>(std::min<std::uint64_t>(tail - head, capacity_));
  }

 private:
  enum class Claim { claimed, none, ended };

  struct Cell {
    std::atomic<std::uint64_t> sequence;
    detail::RingSlot<T> slot;
  };

  static constexpr std::uint64_t closed_bit = std::uint64_t{1} << 63;
  static constexpr std::uint64_t index_mask = closed_bit - 1;

  static std::size_t checked_capacity(std::size_t capacity) {
    CONVEYOR_CONTRACT(capacity >= 1, "MpmcBoundedQueue: the capacity must be at least 1");
    return capacity;
  }

  // A cell's sequence in half steps: free for position p at 2p, holding p's item at 2p + 1. The
  // half steps keep "full" and "free" apart even when the capacity is 1.
  static constexpr std::uint64_t free_for(std::uint64_t position) noexcept { return 2 * position; }
  static constexpr std::uint64_t ready_for(std::uint64_t position) noexcept {
    return 2 * position + 1;
  }

  // Signed distance of a sequence from what a position expects, robust to wrap-around.
  static std::int64_t lag(std::uint64_t sequence, std::uint64_t expected) noexcept {
    return static_cast<std::int64_t>(sequence - expected);
  }

  Cell& cell_at(std::uint64_t position) const noexcept { return cells_[position % capacity_]; }

  // --- producers ---

  // Pushes `value`, calling `wait` while the ring is full; once `wait` gives up (false), one last
  // try_push says.
  template <class Wait>
  bool push_waiting(T& value, const Wait& wait) {
    for (;;) {
      std::uint64_t position = 0;
      switch (claim_for_push(position, 1)) {
        case Claim::claimed:
          publish(position, value);
          return true;
        case Claim::ended:
          return false;
        case Claim::none:
          if (!wait()) return try_push(value);
          break;
      }
    }
  }

  // Claims one free cell for a push; `none` when the ring is full, `ended` once closed.
  Claim claim_for_push(std::uint64_t& position, std::uint64_t limit) {
    return claim_run_for_push(position, limit) > 0 ? Claim::claimed
           : closed()                              ? Claim::ended
                                                   : Claim::none;
  }

  // Claims up to `limit` consecutive free cells with one compare-exchange; returns how many.
  std::uint64_t claim_run_for_push(std::uint64_t& position, std::uint64_t limit) {
    // Relaxed: only arbitrates between producers; the cells' sequences carry the data.
    std::uint64_t word = enqueue_.load(std::memory_order_relaxed);
    for (;;) {
      if ((word & closed_bit) != 0) return 0;
      // Acquire pairs with the consumer's store of the sequence: the cell's old element is gone.
      const std::int64_t first_lag =
          lag(cell_at(word).sequence.load(std::memory_order_acquire), free_for(word));
      if (first_lag < 0) return 0;  // full: the previous lap's item is still there
      if (first_lag > 0) {          // another producer claimed it meanwhile
        word = enqueue_.load(std::memory_order_relaxed);
        continue;
      }
      std::uint64_t count = 1;
      while (count < limit && lag(cell_at(word + count).sequence.load(std::memory_order_acquire),
                                  free_for(word + count)) == 0) {
        ++count;
      }
      // Relaxed: see above. Fails if another producer moved on or the closed bit appeared.
      if (enqueue_.compare_exchange_weak(word, word + count, std::memory_order_relaxed,
                                         std::memory_order_relaxed)) {
        position = word;
        return count;
      }
    }
  }

  void fill(std::uint64_t position, T& value) {
    Cell& cell = cell_at(position);
    cell.slot.construct(std::move(value));
    // seq_cst: a release for the element (pairs with the consumer's acquire of the sequence) and
    // the store half of the Dekker pairing with consumers_waiting_.
    cell.sequence.store(ready_for(position), std::memory_order_seq_cst);
  }

  // Fills a claimed cell, wakes a consumer for it, and passes a wake-up on to producers while
  // cells are free (this push may have taken the cell a woken producer was looking for).
  void publish(std::uint64_t position, T& value) {
    fill(position, value);
    wake(consumers_waiting_, items_, 1);
    pass_on_space();
  }

  void wait_for_space() {
    if (producer_spin_.spin([this] { return space_or_end(std::memory_order_relaxed); })) return;
    // seq_cst: the store half of the Dekker pairing with consumers that free a cell, and close().
    producers_waiting_.fetch_add(1, std::memory_order_seq_cst);
    if (space_or_end(std::memory_order_seq_cst)) {
      withdraw(producers_waiting_, free_slots_);
      return;
    }
    free_slots_.acquire();
  }

  // wait_for_space, but false once `deadline` passed without a wake-up.
  bool wait_for_space_until(std::chrono::steady_clock::time_point deadline) {
    if (producer_spin_.spin([this] { return space_or_end(std::memory_order_relaxed); }))
      return true;
    // seq_cst: as in wait_for_space.
    producers_waiting_.fetch_add(1, std::memory_order_seq_cst);
    if (space_or_end(std::memory_order_seq_cst)) {
      withdraw(producers_waiting_, free_slots_);
      return true;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now < deadline && free_slots_.try_acquire_for(deadline - now)) return true;
    withdraw(producers_waiting_, free_slots_);
    return false;
  }

  bool space_or_end(std::memory_order order) const noexcept {
    const std::uint64_t word = enqueue_.load(order);
    if ((word & closed_bit) != 0) return true;
    return lag(cell_at(word).sequence.load(order), free_for(word)) >= 0;
  }

  // --- consumers ---

  // Claims up to `limit` consecutive ready cells; `none` when the ring is empty, `ended` at the
  // end of stream or after an abort. With `wait_for_writers`, a closed ring whose last pushes are
  // still being written waits for them instead of reporting `none`.
  Claim claim_for_pop(std::uint64_t& position, std::uint64_t& count, std::uint64_t limit,
                      bool wait_for_writers = true) {
    for (;;) {
      // Relaxed: an abort that happened before this call is seen by coherence.
      if (aborted_.load(std::memory_order_relaxed)) [[unlikely]] {
        discard_pending();
        return Claim::ended;
      }
      count = claim_run_for_pop(position, limit);
      if (count > 0) return Claim::claimed;
      // Acquire pairs with close().
      const std::uint64_t word = enqueue_.load(std::memory_order_acquire);
      if ((word & closed_bit) == 0) return Claim::none;
      if ((word & index_mask) == dequeue_.load(std::memory_order_relaxed)) {
        // The end: make sure no consumer still sleeps (one may have announced before the close).
        wake_all(consumers_waiting_, items_);
        return Claim::ended;
      }
      if (!wait_for_writers) return Claim::none;
      // A push claimed its cell before the close and is still writing it: it will not be long.
      std::this_thread::yield();
    }
  }

  // Claims up to `limit` consecutive ready cells with one compare-exchange; returns how many.
  std::uint64_t claim_run_for_pop(std::uint64_t& position, std::uint64_t limit) {
    // Relaxed: only arbitrates between consumers; the cells' sequences carry the data.
    std::uint64_t head = dequeue_.load(std::memory_order_relaxed);
    for (;;) {
      // Acquire pairs with the producer's store of the sequence: the element is complete.
      const std::int64_t first_lag =
          lag(cell_at(head).sequence.load(std::memory_order_acquire), ready_for(head));
      if (first_lag < 0) return 0;  // empty, or its push is still writing it
      if (first_lag > 0) {          // another consumer took it meanwhile
        head = dequeue_.load(std::memory_order_relaxed);
        continue;
      }
      std::uint64_t count = 1;
      while (count < limit && lag(cell_at(head + count).sequence.load(std::memory_order_acquire),
                                  ready_for(head + count)) == 0) {
        ++count;
      }
      if (dequeue_.compare_exchange_weak(head, head + count, std::memory_order_relaxed,
                                         std::memory_order_relaxed)) {
        position = head;
        return count;
      }
    }
  }

  std::optional<T> take_one(std::uint64_t position) {
    std::optional<T> value(cell_at(position).slot.take());
    free_cell(position);
    wake(producers_waiting_, free_slots_, 1);
    pass_on_items();  // this pop may have taken the item a woken sleeper was looking for
    return value;
  }

  // Frees the cell of `position` after its element was moved out and destroyed.
  void free_cell(std::uint64_t position) {
    // seq_cst: a release for the slot (pairs with the producer's acquire of the sequence) and the
    // store half of the Dekker pairing with producers_waiting_.
    cell_at(position).sequence.store(free_for(position + capacity_), std::memory_order_seq_cst);
  }

  template <class OutputIt>
  std::size_t take_run(std::uint64_t position, std::uint64_t count, OutputIt& out) {
    // Frees the whole run, and destroys what was not taken, even if writing to `out` throws.
    struct RunReleaser {
      MpmcBoundedQueue& queue;
      std::uint64_t position;
      std::uint64_t count;
      std::uint64_t taken = 0;
      ~RunReleaser() {
        for (std::uint64_t i = taken; i < count; ++i)
          queue.cell_at(position + i).slot.destroy();
        queue.free_run(position, count);
        queue.pass_on_items();
      }
    } releaser{*this, position, count};
    for (; releaser.taken < count;) {
      T value = cell_at(position + releaser.taken).slot.take();
      ++releaser.taken;
      *out = std::move(value);
      ++out;
    }
    return static_cast<std::size_t>(count);
  }

  // One wake-up per push reaches one sleeping consumer, which may find the head cell still being
  // written (a later cell was filled first) and sleep again: the wake-up is spent, and the item
  // that sent it waits. So a pop that took an item wakes one more sleeper while items are ready;
  // each wake-up that finds work passes the next one on. (pass_on_space: the same for producers,
  // when cells are freed out of order.)
  void pass_on_items() {
    // seq_cst: the load half of the Dekker pairing with wait_for_items' increment and re-check.
    if (consumers_waiting_.load(std::memory_order_seq_cst) > 0 &&
        item_or_end(std::memory_order_seq_cst)) {
      wake(consumers_waiting_, items_, 1);
    }
  }
  void pass_on_space() {
    // seq_cst: as in pass_on_items, with wait_for_space.
    if (producers_waiting_.load(std::memory_order_seq_cst) > 0 &&
        space_or_end(std::memory_order_seq_cst)) {
      wake(producers_waiting_, free_slots_, 1);
    }
  }

  void wait_for_items() {
    if (consumer_spin_.spin([this] { return item_or_end(std::memory_order_relaxed); })) return;
    // seq_cst: the store half of the Dekker pairing with producers that fill a cell, and close().
    consumers_waiting_.fetch_add(1, std::memory_order_seq_cst);
    if (item_or_end(std::memory_order_seq_cst)) {
      withdraw(consumers_waiting_, items_);
      return;
    }
    items_.acquire();
  }

  bool item_or_end(std::memory_order order) const noexcept {
    if ((enqueue_.load(order) & closed_bit) != 0) return true;
    const std::uint64_t head = dequeue_.load(order);
    return lag(cell_at(head).sequence.load(order), ready_for(head)) >= 0;
  }

  // Destroys every item that is ready now; one still being written is left for later.
  void discard_pending() {
    std::uint64_t position = 0;
    for (;;) {
      const std::uint64_t count = claim_run_for_pop(position, capacity_);
      if (count == 0) return;
      for (std::uint64_t i = 0; i < count; ++i)
        cell_at(position + i).slot.destroy();
      free_run(position, count);
    }
  }

  void free_run(std::uint64_t position, std::uint64_t count) {
    for (std::uint64_t i = count; i-- > 1;) {
      // Release pairs with the producer's acquire; the first cell's store covers the run.
      cell_at(position + i)
          .sequence.store(free_for(position + i + capacity_), std::memory_order_release);
    }
    free_cell(position);
    wake(producers_waiting_, free_slots_, count);
  }

  // --- waking ---

  // Takes up to `count` waiters off `waiting` and releases one token for each.
  static void wake(std::atomic<std::int32_t>& waiting, Semaphore& tokens, std::uint64_t count) {
    // seq_cst load: the load half of the Dekker pairing with the waiter's fetch_add.
    std::int32_t waiters = waiting.load(std::memory_order_seq_cst);
    while (waiters > 0) {
      const auto woken = static_cast<std::int32_t>(
          std::min<std::uint64_t>(static_cast<std::uint64_t>(waiters), count));
      // seq_cst: arbitrates with other wakers and with waiters that withdraw; a failure re-reads
      // the count, which stays part of the Dekker pairing.
      if (waiting.compare_exchange_weak(waiters, waiters - woken, std::memory_order_seq_cst,
                                        std::memory_order_seq_cst)) {
        tokens.release(woken);
        return;
      }
    }
  }

  static void wake_all(std::atomic<std::int32_t>& waiting, Semaphore& tokens) {
    // seq_cst load: the load half of the Dekker pairing with the waiter's fetch_add.
    if (waiting.load(std::memory_order_seq_cst) == 0) return;
    const std::int32_t waiters = waiting.exchange(0, std::memory_order_acq_rel);
    if (waiters > 0) tokens.release(waiters);
  }

  // A waiter that need not sleep after all takes itself off the count; if a waker already did,
  // it takes the token that waker released for it.
  static void withdraw(std::atomic<std::int32_t>& waiting, Semaphore& tokens) {
    std::int32_t waiters = waiting.load(std::memory_order_relaxed);
    while (waiters > 0) {
      // acq_rel: arbitrates with wakers.
      if (waiting.compare_exchange_weak(waiters, waiters - 1, std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
        return;
      }
    }
    tokens.acquire();
  }

  // Read-only after construction.
  const std::size_t capacity_;
  const std::unique_ptr<Cell[]> cells_;

  // The next position to fill, plus the closed bit.
  alignas(64) std::atomic<std::uint64_t> enqueue_{0};
  // The next position to empty.
  alignas(64) std::atomic<std::uint64_t> dequeue_{0};

  // Read on every operation, written only when threads sleep or the queue is aborted.
  alignas(64) std::atomic<std::int32_t> consumers_waiting_{0};
  std::atomic<std::int32_t> producers_waiting_{0};
  std::atomic<bool> aborted_{false};

  Semaphore items_;
  Semaphore free_slots_;
  detail::AdaptiveSpin producer_spin_;
  detail::AdaptiveSpin consumer_spin_;
};

}  // namespace conveyor::sync
