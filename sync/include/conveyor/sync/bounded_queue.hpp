// BoundedQueue<T>: a single-producer, single-consumer ring of exactly `capacity` elements, with
// blocking, non-blocking and bulk forms, and an end of stream.
//
// Contract:
// - One producer thread at a time calls push/try_push/push_bulk; one consumer thread at a time
//   calls pop/try_pop/pop_bulk. The roles may move between threads if the hand-over is
//   synchronised. Debug builds (no NDEBUG) catch two threads inside the same role at once and
//   report a contract violation.
// - close(), abort(), closed(), capacity() and size_approx() may be called from any thread, at any
//   time, any number of times, concurrently with blocked callers.
// - `capacity >= 1`, or the constructor reports a contract violation. At most `capacity` elements
//   are held at any time. Not copyable, not movable: sleepers wait on the addresses of members.
// - T must be nothrow move constructible and nothrow destructible; it needs neither a default
//   constructor nor assignment. Elements live in raw storage and are constructed and destroyed
//   explicitly; the destructor destroys whatever is still queued. No calls may be in progress when
//   the destructor runs.
// - push blocks while the ring is full and returns false, dropping its value, once the queue is
//   closed or aborted. try_push never blocks and moves from its argument only when it returns true.
//   push_bulk moves items in until all are in or the queue ends, and returns how many went in
//   (those were moved from; if close() from another thread races with it, the items of the batch
//   that lost the race may have been moved from too, and were destroyed).
// - pop blocks while the ring is empty. After close() it returns the items left, in order, and
//   then nullopt. After abort() it returns nullopt at once. try_pop never blocks. pop_bulk (max >=
//   1) blocks until there is at least one item or the end, and returns 0 only at the end.
// - close() is the done sentinel and is linearisable: a push that returned true happened before it
//   and its item will be popped (unless the queue is aborted); a push that starts after it fails.
// - abort() wakes every blocked caller. Pending items are destroyed by the consumer's next call, or
//   by the destructor, whichever comes first; abort() itself never touches a slot, because it may
//   run on any thread while the producer or the consumer is using one.
//
// Progress and cost: a push or pop that finds room or an item costs the ring's index operations
// (one seq_cst read-modify-write or store of its own index; the other side's index is read only
// when the cached copy says full or empty) plus one load of a rarely written "is the other side
// asleep?" flag. No semaphore is touched unless a side sleeps. A side that finds the ring full or
// empty spins briefly, then announces that it sleeps and blocks on a Semaphore (free slots for the
// producer, items for the consumer). The bulk forms publish a whole batch with one index update
// and at most one wake-up.
//
// Memory ordering:
// - Elements: the producer constructs an element, then publishes its tail index with a seq_cst
//   compare-exchange on `tail_` (a release); the consumer's acquire load of `tail_` pairs with it
//   and makes the element visible. The consumer moves an element out and destroys it, then
//   publishes `head_` with a seq_cst store (a release); the producer's acquire load of `head_`
//   pairs with it, so the slot is reused only after its old element is gone.
// - End of stream: close() sets the closed bit in `tail_` with a seq_cst fetch_or. Because the
//   producer publishes with a compare-exchange that expects the bit clear, no element can be
//   published after the bit is set; a consumer that reads the bit (acquire, pairing with the
//   fetch_or) together with the final index knows it has seen every element. abort() stores
//   `aborted_` (seq_cst) before it sets the same bit, so a consumer that sees the bit and then
//   reads `aborted_` sees the abort.
// - Sleeping without a lost wake-up is a store-load (Dekker) pairing, so those operations are
//   seq_cst. The consumer stores `consumer_sleeping_ = true` and then loads `tail_`; the producer
//   (and close/abort) updates `tail_` and then loads `consumer_sleeping_`. In the single total
//   order one of the two loads sees the other's store: either the consumer sees the new item or the
//   end and does not sleep, or the producer sees the flag. The producer side is symmetric with
//   `producer_sleeping_` and `head_` (and `tail_`'s closed bit for close/abort).
// - A waker clears the flag with an exchange and releases one token only if it found the flag set,
//   so each announcement yields at most one token. A side that announced and then found it need not
//   sleep clears its own flag with an exchange; if a waker got there first, it acquires the token
//   that waker is about to release. So the semaphores hold no token whenever no side is asleep.
// - The role guards use acquire/release among themselves and add nothing the queue relies on.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/queue_backoff.hpp"
#include "conveyor/sync/detail/queue_role_guard.hpp"
#include "conveyor/sync/detail/ring_slot.hpp"
#include "conveyor/sync/semaphore.hpp"

namespace conveyor::sync {

template <class T>
class BoundedQueue {
  static_assert(std::is_nothrow_move_constructible_v<T> && std::is_nothrow_destructible_v<T>,
                "BoundedQueue<T>: T must be nothrow move constructible and destructible");

 public:
  explicit BoundedQueue(std::size_t capacity)
      : capacity_(checked_capacity(capacity)),
        slots_(std::make_unique<detail::RingSlot<T>[]>(capacity)) {}

  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;
  BoundedQueue(BoundedQueue&&) = delete;
  BoundedQueue& operator=(BoundedQueue&&) = delete;

  ~BoundedQueue() {
    std::uint64_t position = head_.load(std::memory_order_acquire);
    const std::uint64_t end = tail_.load(std::memory_order_acquire) & index_mask;
    for (; position != end; ++position)
      slots_[position % capacity_].destroy();
  }

  bool push(T value) {
    detail::QueueRoleGuard::Scope role(producer_role_, producer_violation);
    if (!wait_for_space()) return false;
    slots_[producer_slot_].construct(std::move(value));
    if (!publish(1)) {
      slots_[producer_slot_].destroy();
      return false;
    }
    return true;
  }

  [[nodiscard]] bool try_push(T& value) {
    detail::QueueRoleGuard::Scope role(producer_role_, producer_violation);
    // Relaxed: the producer's own word; the compare-exchange in publish() has the last say.
    if ((tail_.load(std::memory_order_relaxed) & closed_bit) != 0 || !has_space()) return false;
    detail::RingSlot<T>& slot = slots_[producer_slot_];
    slot.construct(std::move(value));
    if (!publish(1)) {
      slot.move_back_into(value);
      return false;
    }
    return true;
  }

  std::optional<T> pop() {
    detail::QueueRoleGuard::Scope role(consumer_role_, consumer_violation);
    for (;;) {
      switch (poll_items()) {
        case Poll::ready:
          return take_one();
        case Poll::ended:
          return std::nullopt;
        case Poll::empty:
          wait_for_items();
          break;
      }
    }
  }

  [[nodiscard]] std::optional<T> try_pop() {
    detail::QueueRoleGuard::Scope role(consumer_role_, consumer_violation);
    if (poll_items() != Poll::ready) return std::nullopt;
    return take_one();
  }

  template <class InputIt>
  std::size_t push_bulk(InputIt first, InputIt last) {
    static_assert(std::is_nothrow_constructible_v<T, decltype(std::move(*first))>,
                  "BoundedQueue::push_bulk: T must be nothrow constructible from the items");
    detail::QueueRoleGuard::Scope role(producer_role_, producer_violation);
    std::size_t pushed = 0;
    while (first != last) {
      if (!wait_for_space()) break;
      // Take the freshest view of the consumer's progress so that the batch is as large as it can
      // be.
      cached_head_ = head_.load(std::memory_order_acquire);
      const std::uint64_t room = capacity_ - (producer_tail_ - cached_head_);
      std::uint64_t built = 0;
      std::size_t slot = producer_slot_;
      for (; built < room && first != last; ++built, ++first) {
        slots_[slot].construct(std::move(*first));
        slot = next_slot(slot);
      }
      if (!publish(built)) {
        slot = producer_slot_;
        for (std::uint64_t i = 0; i < built; ++i, slot = next_slot(slot))
          slots_[slot].destroy();
        break;
      }
      pushed += static_cast<std::size_t>(built);
    }
    return pushed;
  }

  template <class OutputIt>
  std::size_t pop_bulk(OutputIt out, std::size_t max) {
    CONVEYOR_CONTRACT(max >= 1, "BoundedQueue::pop_bulk: max must be at least 1");
    detail::QueueRoleGuard::Scope role(consumer_role_, consumer_violation);
    for (;;) {
      switch (poll_items()) {
        case Poll::ready:
          return take_many(out, max);
        case Poll::ended:
          return 0;
        case Poll::empty:
          wait_for_items();
          break;
      }
    }
  }

  void close() {
    // seq_cst: a release for the consumer that reads the bit, and the store half of the Dekker
    // pairings with both sleep flags.
    tail_.fetch_or(closed_bit, std::memory_order_seq_cst);
    wake_consumer();
    wake_producer();
  }

  void abort() {
    // seq_cst: ordered before the closed bit below, which the consumer reads with acquire.
    aborted_.store(true, std::memory_order_seq_cst);
    close();
  }

  [[nodiscard]] bool closed() const noexcept {
    // Acquire pairs with the fetch_or in close().
    return (tail_.load(std::memory_order_acquire) & closed_bit) != 0;
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

  [[nodiscard]] std::size_t size_approx() const noexcept {
    // Relaxed: a snapshot. Reading head first keeps the difference from going negative.
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed) & index_mask;
    return static_cast<std::size_t>(std::min<std::uint64_t>(tail - head, capacity_));
  }

 private:
  enum class Poll { ready, empty, ended };

  static constexpr std::uint64_t closed_bit = std::uint64_t{1} << 63;
  static constexpr std::uint64_t index_mask = closed_bit - 1;
  static constexpr const char* producer_violation =
      "BoundedQueue: two threads are pushing at once into a single-producer queue";
  static constexpr const char* consumer_violation =
      "BoundedQueue: two threads are popping at once from a single-consumer queue";

  static std::size_t checked_capacity(std::size_t capacity) {
    CONVEYOR_CONTRACT(capacity >= 1, "BoundedQueue: the capacity must be at least 1");
    return capacity;
  }

  std::size_t next_slot(std::size_t slot) const noexcept {
    return slot + 1 == capacity_ ? 0 : slot + 1;
  }

  // --- producer side ---

  bool has_space() noexcept {
    if (producer_tail_ - cached_head_ < capacity_) return true;
    // Acquire pairs with the consumer's store of head_: the freed slots' old elements are gone.
    cached_head_ = head_.load(std::memory_order_acquire);
    return producer_tail_ - cached_head_ < capacity_;
  }

  // Waits until there is room; false once the queue is closed or aborted.
  bool wait_for_space() {
    while (!has_space()) {
      // Relaxed: only a hint here; the sleep path re-reads it with seq_cst.
      if ((tail_.load(std::memory_order_relaxed) & closed_bit) != 0) return false;
      sleep_until_space();
    }
    return true;
  }

  void sleep_until_space() {
    const bool changed = detail::spin_until([this] {
      // Relaxed: hints; the caller re-reads with acquire.
      return head_.load(std::memory_order_relaxed) != cached_head_ ||
             (tail_.load(std::memory_order_relaxed) & closed_bit) != 0;
    });
    if (changed) return;
    // seq_cst: the store half of the Dekker pairing with wake_producer() callers.
    producer_sleeping_.store(true, std::memory_order_seq_cst);
    // seq_cst: the load half; head_ pairs with pop's store, tail_'s bit with close().
    const std::uint64_t head = head_.load(std::memory_order_seq_cst);
    const bool ended = (tail_.load(std::memory_order_seq_cst) & closed_bit) != 0;
    if (producer_tail_ - head < capacity_ || ended) {
      // acq_rel: arbitrates with a waker's exchange; if the waker won, take the token it releases.
      if (!producer_sleeping_.exchange(false, std::memory_order_acq_rel)) free_slots_.acquire();
      return;
    }
    free_slots_.acquire();
  }

  // Publishes `count` constructed elements after producer_tail_; false if the queue was closed
  // first, in which case the elements are still the producer's to destroy.
  bool publish(std::uint64_t count) {
    std::uint64_t expected = producer_tail_;
    // seq_cst: a release for the elements (pairs with the consumer's acquire of tail_) and the
    // store half of the Dekker pairing with consumer_sleeping_. Fails if the closed bit is set.
    if (!tail_.compare_exchange_strong(expected, producer_tail_ + count, std::memory_order_seq_cst,
                                       std::memory_order_relaxed)) {
      return false;
    }
    producer_tail_ += count;
    producer_slot_ += static_cast<std::size_t>(count);
    if (producer_slot_ >= capacity_) producer_slot_ -= capacity_;
    wake_consumer();
    return true;
  }

  void wake_consumer() {
    // seq_cst load: the load half of the Dekker pairing with wait_for_items(). The exchange makes
    // sure one announcement yields one token, whoever else is waking.
    if (consumer_sleeping_.load(std::memory_order_seq_cst) &&
        consumer_sleeping_.exchange(false, std::memory_order_acq_rel)) {
      items_.release();
    }
  }

  // --- consumer side ---

  Poll poll_items() {
    // Relaxed: an abort that happened before this call is seen by coherence; one that races with
    // it may be missed, and the call then behaves as if it came first.
    if (aborted_.load(std::memory_order_relaxed)) [[unlikely]] {
      discard_pending();
      return Poll::ended;
    }
    if (consumer_head_ != cached_tail_) return Poll::ready;
    // Acquire pairs with publish() (the elements) and close() (the bit).
    const std::uint64_t tail = tail_.load(std::memory_order_acquire);
    cached_tail_ = tail & index_mask;
    if (consumer_head_ != cached_tail_) return Poll::ready;
    if ((tail & closed_bit) == 0) return Poll::empty;
    // Closed and drained; if it was an abort, there is nothing to discard either.
    return Poll::ended;
  }

  void wait_for_items() {
    // Any change of tail_ means a new item or the closed bit. Relaxed: a hint; poll_items()
    // re-reads.
    if (detail::spin_until(
            [this] { return tail_.load(std::memory_order_relaxed) != consumer_head_; })) {
      return;
    }
    // seq_cst: the store half of the Dekker pairing with wake_consumer() callers.
    consumer_sleeping_.store(true, std::memory_order_seq_cst);
    // seq_cst: the load half. Equal means no new item and no closed bit.
    if (tail_.load(std::memory_order_seq_cst) != consumer_head_) {
      // acq_rel: arbitrates with a waker's exchange; if the waker won, take the token it releases.
      if (!consumer_sleeping_.exchange(false, std::memory_order_acq_rel)) items_.acquire();
      return;
    }
    items_.acquire();
  }

  std::optional<T> take_one() {
    std::optional<T> value(slots_[consumer_slot_].take());
    consumer_slot_ = next_slot(consumer_slot_);
    release_slots(1);
    return value;
  }

  template <class OutputIt>
  std::size_t take_many(OutputIt& out, std::size_t max) {
    if (cached_tail_ - consumer_head_ < max) {
      // Acquire pairs with publish(): take everything that is there, up to max.
      cached_tail_ = tail_.load(std::memory_order_acquire) & index_mask;
    }
    const std::uint64_t count = std::min<std::uint64_t>(cached_tail_ - consumer_head_, max);
    // Publishes the slots taken so far even if writing to `out` throws.
    struct Publisher {
      BoundedQueue& queue;
      std::uint64_t taken = 0;
      ~Publisher() {
        if (taken > 0) queue.release_slots(taken);
      }
    } publisher{*this};
    for (std::uint64_t i = 0; i < count; ++i) {
      T value = slots_[consumer_slot_].take();
      consumer_slot_ = next_slot(consumer_slot_);
      ++publisher.taken;
      *out = std::move(value);
      ++out;
    }
    return static_cast<std::size_t>(count);
  }

  // Hands `count` slots after consumer_head_ back to the producer.
  void release_slots(std::uint64_t count) {
    consumer_head_ += count;
    // seq_cst: a release for the destroyed elements (pairs with the producer's acquire of head_)
    // and the store half of the Dekker pairing with producer_sleeping_.
    head_.store(consumer_head_, std::memory_order_seq_cst);
    wake_producer();
  }

  void wake_producer() {
    // seq_cst load: the load half of the Dekker pairing with sleep_until_space().
    if (producer_sleeping_.load(std::memory_order_seq_cst) &&
        producer_sleeping_.exchange(false, std::memory_order_acq_rel)) {
      free_slots_.release();
    }
  }

  // Destroys every published element. Only the consumer calls it, so it owns those slots; an
  // element the producer publishes later is left for the next call or the destructor.
  void discard_pending() {
    // Acquire pairs with publish(): the elements are complete.
    const std::uint64_t end = tail_.load(std::memory_order_acquire) & index_mask;
    if (end == consumer_head_) return;
    const std::uint64_t count = end - consumer_head_;
    for (std::uint64_t i = 0; i < count; ++i) {
      slots_[consumer_slot_].destroy();
      consumer_slot_ = next_slot(consumer_slot_);
    }
    cached_tail_ = end;
    release_slots(count);
  }

  // Read-only after construction.
  const std::size_t capacity_;
  const std::unique_ptr<detail::RingSlot<T>[]> slots_;

  // The producer's line: the published tail (plus the closed bit, which close() and abort() set)
  // and the producer's private copies.
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  std::uint64_t producer_tail_ = 0;
  std::uint64_t cached_head_ = 0;
  std::size_t producer_slot_ = 0;
  [[no_unique_address]] detail::QueueRoleGuard producer_role_;

  // The consumer's line.
  alignas(64) std::atomic<std::uint64_t> head_{0};
  std::uint64_t consumer_head_ = 0;
  std::uint64_t cached_tail_ = 0;
  std::size_t consumer_slot_ = 0;
  [[no_unique_address]] detail::QueueRoleGuard consumer_role_;

  // Read on every operation, written only when a side sleeps or the queue is aborted.
  alignas(64) std::atomic<bool> consumer_sleeping_{false};
  std::atomic<bool> producer_sleeping_{false};
  std::atomic<bool> aborted_{false};

  Semaphore items_;
  Semaphore free_slots_;
};

}  // namespace conveyor::sync
