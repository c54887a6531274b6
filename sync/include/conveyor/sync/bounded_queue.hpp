// BoundedQueue<T>: a single-producer, single-consumer ring of exactly `capacity` elements, with
// blocking, non-blocking and bulk forms, and an end of stream.
//
// Contract:
// - One producer thread at a time calls push/try_push/push_bulk; one consumer thread at a time
//   calls pop/try_pop/pop_bulk. The roles may move between threads if the hand-over is
//   synchronised. Debug builds (no NDEBUG) catch two threads inside the same role at once and
//   report a contract violation.
// - close() belongs to the producer's role, like push: the producer calls it after its last push
//   (or another thread does, once the producer has stopped pushing). It ends the stream the way a
//   sender closes a Go channel; to stop a stream from elsewhere, call abort(). abort(), closed(),
//   capacity() and size_approx() may be called from any thread, at any time, any number of times,
//   concurrently with blocked callers.
// - `capacity >= 1`, or the constructor reports a contract violation. At most `capacity` elements
//   are held at any time. Not copyable, not movable: sleepers wait on the addresses of members.
// - T must be nothrow move constructible and nothrow destructible; it needs neither a default
//   constructor nor assignment. Elements live in raw storage and are constructed and destroyed
//   explicitly; the destructor destroys whatever is still queued. No calls may be in progress when
//   the destructor runs.
// - push blocks while the ring is full and returns false, dropping its value, once the queue is
//   closed or aborted. try_push never blocks and moves from its argument only when it returns true.
//   push_bulk moves items in until all are in or the queue is aborted, and returns how many went
//   in (those were moved from).
// - pop blocks while the ring is empty. After close() it returns the items left, in order, and
//   then nullopt. After abort() it returns nullopt at once. try_pop never blocks. pop_bulk (max >=
//   1) blocks until there is at least one item or the end, and returns 0 only at the end.
// - close() is the done sentinel: every item pushed before it is popped (unless the queue is
//   aborted), then pop() reports the end; a push after it fails. close() may be called again.
// - abort() wakes every blocked caller. Pending items are destroyed by the consumer's next call, or
//   by the destructor, whichever comes first; abort() itself never touches a slot, because it may
//   run on any thread while the producer or the consumer is using one.
//
// Progress and cost: a push or pop that finds room or an item costs the ring's index operations
// (a release store of its own index; the other side's index is read only when the cached copy
// says full or empty) plus a load of a rarely written "is the other side asleep?" flag. No
// read-modify-write, no fence instruction and no semaphore on that path: the store-load pairings
// that keep a wake-up from being lost are asymmetric (detail/asymmetric_fence.hpp), so their full
// barrier is paid by the side that is about to sleep, or by close(), not by every operation. A side
// that finds the ring full or empty spins for an adaptive while, then announces that it sleeps and
// blocks on a Semaphore (free slots for the producer, items for the consumer). The bulk forms
// publish a whole batch with one index update and at most one wake-up.
//
// Memory ordering:
// - Elements: the producer constructs an element, then publishes `tail_` with a release store;
//   the consumer's acquire load of `tail_` pairs with it and makes the element visible. The
//   consumer moves an element out and destroys it, then publishes `head_` with a release store;
//   the producer's acquire load of `head_` pairs with it, so a slot is reused only after its old
//   element is gone.
// - Sleeping without a lost wake-up is a store-load (Dekker) pairing. The consumer stores
//   `consumer_sleeping_`, runs the heavy asymmetric fence, and re-reads `tail_` and `ended_`; the
//   producer stores `tail_`, runs the light fence, and reads `consumer_sleeping_`. One of the two
//   reads sees the other's store: the consumer sees the item and does not sleep, or the producer
//   sees the flag and wakes it. The producer's sleep on a full ring is the same with `head_` and
//   `producer_sleeping_`. close() takes part with seq_cst operations, which pair with the sleeper's
//   seq_cst store and loads around its heavy fence.
// - A waker clears the flag with an exchange and releases one token only if it found the flag
//   set, so each announcement yields at most one token. A side that announced and then found it
//   need not sleep clears its own flag with an exchange; if a waker got there first, it acquires
//   the token that waker is about to release. So the semaphores hold no token whenever no side is
//   asleep.
// - End of stream: the producer's close() stores `ended_` (seq_cst, a release) after its last
//   store of `tail_`; a consumer that reads `ended_` with acquire knows that `tail_` is final.
// - abort() stores `aborted_` (seq_cst) before `ended_`, so a consumer that has seen `ended_` sees
//   the abort on its next call. A push that races with abort() may still publish; the consumer
//   and the destructor drop what it published.
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

#include "conveyor/sync/detail/adaptive_spin.hpp"
#include "conveyor/sync/detail/asymmetric_fence.hpp"
#include "conveyor/sync/detail/contract.hpp"
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
    const std::uint64_t end = tail_.load(std::memory_order_acquire);
    for (; position != end; ++position)
      slots_[position % capacity_].destroy();
  }

  bool push(T value) {
    detail::QueueRoleGuard::Scope role(producer_role_, producer_violation);
    if (!wait_for_space()) return false;
    slots_[producer_slot_].construct(std::move(value));
    publish(1);
    return true;
  }

  [[nodiscard]] bool try_push(T& value) {
    detail::QueueRoleGuard::Scope role(producer_role_, producer_violation);
    // Relaxed: a hint; publish() has the last say.
    if (closed_.load(std::memory_order_relaxed) || !has_space()) return false;
    slots_[producer_slot_].construct(std::move(value));
    publish(1);
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
      publish(built);
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
    detail::QueueRoleGuard::Scope role(producer_role_, producer_violation);
    // The producer's own program order puts every push before this, so tail_ is final. seq_cst:
    // a release for the consumer's acquire of ended_, and the store half of the Dekker pairing
    // with a consumer asleep on empty.
    closed_.store(true, std::memory_order_seq_cst);
    ended_.store(true, std::memory_order_seq_cst);
    wake_consumer(std::memory_order_seq_cst);
  }

  void abort() {
    // Any thread. seq_cst throughout: stores ordered before the wake-ups' loads (the Dekker
    // pairings with both sleepers), and aborted_ before ended_, which the consumer reads with
    // acquire before it reads aborted_ again.
    aborted_.store(true, std::memory_order_seq_cst);
    closed_.store(true, std::memory_order_seq_cst);
    ended_.store(true, std::memory_order_seq_cst);
    wake_consumer(std::memory_order_seq_cst);
    wake_producer(std::memory_order_seq_cst);
  }

  [[nodiscard]] bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

  [[nodiscard]] std::size_t size_approx() const noexcept {
    // Relaxed: a snapshot. Reading head first keeps the difference from going negative.
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    return static_cast<std::size_t>(std::min<std::uint64_t>(tail - head, capacity_));
  }

 private:
  enum class Poll { ready, empty, ended };

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
    // Relaxed: after close() this is the producer's own store; after abort() a push that races
    // with it may still succeed, and its item is dropped with the rest.
    if (closed_.load(std::memory_order_relaxed)) return false;
    while (!has_space()) {
      // Relaxed: only a hint here; the sleep path re-reads it with seq_cst.
      if (closed_.load(std::memory_order_relaxed)) return false;
      sleep_until_space();
    }
    return true;
  }

  void sleep_until_space() {
    const bool changed = producer_spin_.spin([this] {
      // Relaxed: hints; the caller re-reads with acquire.
      return head_.load(std::memory_order_relaxed) != cached_head_ ||
             closed_.load(std::memory_order_relaxed);
    });
    if (changed) return;
    // The rare side of the pairings with wake_producer(): the consumer's store of head_ is
    // followed by a light fence, close()'s store of closed_ by a seq_cst load.
    producer_sleeping_.store(true, std::memory_order_seq_cst);
    detail::asymmetric_fence_heavy();
    const std::uint64_t head = head_.load(std::memory_order_seq_cst);
    const bool ended = closed_.load(std::memory_order_seq_cst);
    if (producer_tail_ - head < capacity_ || ended) {
      // acq_rel: arbitrates with a waker's exchange; if the waker won, take the token it releases.
      if (!producer_sleeping_.exchange(false, std::memory_order_acq_rel)) free_slots_.acquire();
      return;
    }
    free_slots_.acquire();
  }

  // Publishes `count` constructed elements after producer_tail_.
  void publish(std::uint64_t count) {
    producer_tail_ += count;
    // Release: the elements, for the consumer's acquire of tail_.
    tail_.store(producer_tail_, std::memory_order_release);
    producer_slot_ += static_cast<std::size_t>(count);
    if (producer_slot_ >= capacity_) producer_slot_ -= capacity_;
    // The fast side of the asymmetric pairing with wait_for_items(): tail_ against
    // consumer_sleeping_.
    detail::asymmetric_fence_light();
    wake_consumer(std::memory_order_relaxed);
  }

  // `order` is relaxed after a light fence (the asymmetric pairing) and seq_cst after a seq_cst
  // store (close(), the symmetric pairing). The exchange makes sure that one announcement yields
  // one token, whoever else is waking.
  void wake_consumer(std::memory_order order) {
    if (consumer_sleeping_.load(order) &&
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
    // Acquire pairs with publish(): the elements.
    cached_tail_ = tail_.load(std::memory_order_acquire);
    if (consumer_head_ != cached_tail_) return Poll::ready;
    // Acquire pairs with close(): every successful push has published, so tail_ is final.
    if (!ended_.load(std::memory_order_acquire)) return Poll::empty;
    cached_tail_ = tail_.load(std::memory_order_acquire);
    if (consumer_head_ != cached_tail_) return Poll::ready;
    // Closed and drained. After an abort, the next call discards whatever is left.
    return Poll::ended;
  }

  void wait_for_items() {
    // Any change of tail_ means a new item or the closed bit. Relaxed: a hint; poll_items()
    // re-reads.
    if (consumer_spin_.spin([this] {
          return tail_.load(std::memory_order_relaxed) != consumer_head_ ||
                 ended_.load(std::memory_order_relaxed);
        })) {
      return;
    }
    // The rare side of the pairings with wake_consumer(): publish() stores tail_ and then runs a
    // light fence, close() stores ended_ with seq_cst and then loads with seq_cst.
    consumer_sleeping_.store(true, std::memory_order_seq_cst);
    detail::asymmetric_fence_heavy();
    if (tail_.load(std::memory_order_seq_cst) != consumer_head_ ||
        ended_.load(std::memory_order_seq_cst)) {
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
      cached_tail_ = tail_.load(std::memory_order_acquire);
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
    // Release: the destroyed elements, for the producer's acquire of head_.
    head_.store(consumer_head_, std::memory_order_release);
    // The fast side of the asymmetric pairing with sleep_until_space(): head_ against
    // producer_sleeping_.
    detail::asymmetric_fence_light();
    wake_producer(std::memory_order_relaxed);
  }

  // As wake_consumer().
  void wake_producer(std::memory_order order) {
    if (producer_sleeping_.load(order) &&
        producer_sleeping_.exchange(false, std::memory_order_acq_rel)) {
      free_slots_.release();
    }
  }

  // Destroys every published element. Only the consumer calls it, so it owns those slots; an
  // element the producer publishes later is left for the next call or the destructor.
  void discard_pending() {
    // Acquire pairs with publish(): the elements are complete.
    const std::uint64_t end = tail_.load(std::memory_order_acquire);
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

  // Each index the other side reads has a line of its own, apart from the fields its owner
  // writes on every operation, so that reading it does not steal those.
  alignas(64) std::atomic<std::uint64_t> tail_{0};  // published by the producer
  alignas(64) std::atomic<std::uint64_t> head_{0};  // published by the consumer

  // The producer's private line.
  alignas(64) std::uint64_t producer_tail_ = 0;
  std::uint64_t cached_head_ = 0;
  std::size_t producer_slot_ = 0;
  detail::AdaptiveSpin producer_spin_;
  [[no_unique_address]] detail::QueueRoleGuard producer_role_;

  // The consumer's private line.
  alignas(64) std::uint64_t consumer_head_ = 0;
  std::uint64_t cached_tail_ = 0;
  std::size_t consumer_slot_ = 0;
  detail::AdaptiveSpin consumer_spin_;
  [[no_unique_address]] detail::QueueRoleGuard consumer_role_;

  // Read on every operation, written only when a side sleeps or the queue is aborted.
  alignas(64) std::atomic<bool> consumer_sleeping_{false};
  std::atomic<bool> producer_sleeping_{false};
  std::atomic<bool> closed_{false};  // close() or abort(): pushes fail
  std::atomic<bool> ended_{false};   // tail_ is final (close), or the stream is dropped (abort)
  std::atomic<bool> aborted_{false};

  Semaphore items_;
  Semaphore free_slots_;
};

}  // namespace conveyor::sync
