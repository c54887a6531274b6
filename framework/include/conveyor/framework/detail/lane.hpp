// Lane<E>: the channel between one producer worker and one consumer worker, a non-blocking ring
// of `capacity` elements with an end mark.
//
// With capacity 1 this is the seed-002 mailbox: one slot that is empty (the producer owns it),
// full (the consumer owns it) or, once the producer has closed the lane and the slot is drained,
// done. A larger capacity is the bounded queue the seed's closing note generalises it to. Waiting
// is not done here: a worker that finds every lane it can use empty or full sleeps on its own
// Doorbell, and the other side rings it (see in_port.hpp and out_port.hpp).
//
// Contract:
// - Producer role (one thread at a time): `try_push`, `free_slots`, `close`. Consumer role (one
//   thread at a time): `try_pop`, `finished`. Any thread: `size_approx`, `capacity`.
// - `try_push` moves from its argument (`try_emplace` uses its arguments) only when it returns
//   true. `close` is the done sentinel: it comes after the producer's last push, and a consumer
//   that has drained the lane and sees it reports `finished`.
// - E must be nothrow move constructible and destructible; the destructor destroys what is left.
//
// Memory ordering:
// - The producer constructs an element and publishes `tail_` with a release store; the consumer's
//   acquire load of `tail_` pairs with it. The consumer moves the element out, destroys it and
//   publishes `head_` with a release store; the producer's acquire load pairs with that before the
//   slot is reused. Each side caches the other's index and re-reads it only when the cache says
//   full or empty.
// - `close` stores `closed_` with release after the last `tail_` store; `finished` loads it with
//   acquire and then re-reads `tail_`, so a lane is finished only when every element is out.
// - The indices are also the data of the Dekker pairings of the Doorbell protocol: a pusher reads
//   the consumer's announcement after its store of `tail_`, a popper the producer's after its store
//   of `head_`, each behind the Doorbell's hand-over fence (whose light side may miss an
//   announcement; see doorbell.hpp for how the owner recovers).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/ring_slot.hpp"

namespace conveyor::detail {

template <class E>
class Lane {
  static_assert(std::is_nothrow_move_constructible_v<E> && std::is_nothrow_destructible_v<E>,
                "Lane<E>: E must be nothrow move constructible and destructible");

 public:
  explicit Lane(std::size_t capacity)
      : capacity_(capacity), slots_(std::make_unique<sync::detail::RingSlot<E>[]>(capacity)) {
    CONVEYOR_CONTRACT(capacity >= 1, "Lane: the capacity must be at least 1");
  }

  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  ~Lane() {
    const std::uint64_t end = tail_.load(std::memory_order_acquire);
    for (std::uint64_t position = head_.load(std::memory_order_acquire); position != end;
         ++position) {
      slots_[position % capacity_].destroy();
    }
  }

  // --- producer ---

  [[nodiscard]] bool try_push(E& element) noexcept { return try_emplace(std::move(element)); }

  // try_push of an element constructed in its slot from `args`, which are used only when it
  // returns true. Saves moving a temporary, whose copy can stall on the store of the previous
  // push's tail (the other core holds that line). If the construction throws, the lane is as it
  // was.
  template <class... Args>
  [[nodiscard]] bool try_emplace(Args&&... args) {
    if (free_slots() == 0) return false;
    slots_[producer_slot_].construct(std::forward<Args>(args)...);
    producer_slot_ = next_slot(producer_slot_);
    ++producer_tail_;
    // Release: the element, for the consumer's acquire of tail_.
    tail_.store(producer_tail_, std::memory_order_release);
    return true;
  }

  // Free slots as the producer sees them; re-reads the consumer's index only when the cached one
  // says full.
  [[nodiscard]] std::size_t free_slots() noexcept {
    std::uint64_t used = producer_tail_ - cached_head_;
    if (used == capacity_) {
      // Acquire pairs with the consumer's release of head_: the freed slots' elements are gone.
      cached_head_ = head_.load(std::memory_order_acquire);
      used = producer_tail_ - cached_head_;
    }
    return static_cast<std::size_t>(capacity_ - used);
  }

  void close() noexcept {
    // Release: every tail_ store before it, for the consumer's acquire in finished().
    closed_.store(true, std::memory_order_release);
  }

  // --- consumer ---

  [[nodiscard]] std::optional<E> try_pop() noexcept {
    std::optional<E> element;
    (void)try_pop_into(element);
    return element;
  }

  // try_pop into `out`, which must be empty: the element moves straight from its slot, with no
  // temporary whose copy could stall (see try_emplace). True if it popped one.
  [[nodiscard]] bool try_pop_into(std::optional<E>& out) noexcept {
    if (consumer_head_ == cached_tail_) {
      // Acquire pairs with try_push's release of tail_: the element is constructed.
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (consumer_head_ == cached_tail_) return false;
    }
    out.emplace(std::move(slots_[consumer_slot_].get()));
    slots_[consumer_slot_].destroy();
    consumer_slot_ = next_slot(consumer_slot_);
    ++consumer_head_;
    // Release: the slot is empty again, for the producer's acquire of head_.
    head_.store(consumer_head_, std::memory_order_release);
    return true;
  }

  // Consumer: true once the producer has closed the lane and every element has been popped.
  [[nodiscard]] bool finished() noexcept {
    if (!closed_.load(std::memory_order_acquire)) return false;
    cached_tail_ = tail_.load(std::memory_order_acquire);
    return consumer_head_ == cached_tail_;
  }

  // Consumer: free slots after its own pops, for deciding whether to wake a sleeping producer.
  [[nodiscard]] std::size_t free_after_pop() const noexcept {
    // Relaxed: only the count matters, and the producer re-checks with acquire.
    return static_cast<std::size_t>(capacity_ -
                                    (tail_.load(std::memory_order_relaxed) - consumer_head_));
  }

  // Consumer: whether an element is waiting, without taking it (for the Doorbell re-check).
  [[nodiscard]] bool has_element() noexcept {
    if (consumer_head_ != cached_tail_) return true;
    cached_tail_ = tail_.load(std::memory_order_acquire);
    return consumer_head_ != cached_tail_;
  }

  // --- anyone ---

  [[nodiscard]] std::size_t size_approx() const noexcept {
    // Relaxed: a snapshot for metrics. Head first, so that the difference cannot go negative.
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    return static_cast<std::size_t>(std::min<std::uint64_t>(tail - head, capacity_));
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

 private:
  std::size_t next_slot(std::size_t slot) const noexcept {
    return slot + 1 == capacity_ ? 0 : slot + 1;
  }

  const std::size_t capacity_;
  const std::unique_ptr<sync::detail::RingSlot<E>[]> slots_;

  alignas(64) std::atomic<std::uint64_t> tail_{0};
  std::atomic<bool> closed_{false};
  alignas(64) std::atomic<std::uint64_t> head_{0};

  alignas(64) std::uint64_t producer_tail_ = 0;
  std::uint64_t cached_head_ = 0;
  std::size_t producer_slot_ = 0;

  alignas(64) std::uint64_t consumer_head_ = 0;
  std::uint64_t cached_tail_ = 0;
  std::size_t consumer_slot_ = 0;
};

}  // namespace conveyor::detail
