// SpscRing<T>: a non-blocking ring of `capacity` elements between one producer and one consumer,
// with an end mark. The one ring of the library: BoundedQueue and the framework's channels stand
// on it. With capacity 1 it is the seed-002 mailbox: one slot, empty or full, and done.
// SpscRing<T, RingLayout::inline_slot> is that ring of one, its slot held beside its indices on
// one cache line (Mailbox); the algorithm is the same.
// It never waits; a side that finds it full or empty sleeps on its own Doorbell (doorbell.hpp),
// which the other side rings. docs/design/hand-over.md explains the whole hand-over.
//
// Contract:
// - Producer (one thread at a time): `try_push`, `try_emplace`, `try_push_bulk`, `free_slots`,
//   `close`. Consumer (one thread at a time): `try_pop`, `try_pop_into`, `try_pop_bulk`,
//   `discard`, `has_element`, `finished`, `free_after_pop`. Any thread: `size_approx`,
//   `capacity`, `closed`.
// - A push moves from (or uses) its arguments only when it succeeds; a throwing construction
//   leaves the ring as it was. `close` is the done sentinel, after the producer's last push; the
//   consumer sees `finished` once the ring is closed and drained.
// - T must be nothrow move constructible and destructible; the destructor destroys what is left.
//
// Memory ordering: the producer constructs elements, then publishes `tail_` (release); the
// consumer's acquire of `tail_` pairs with it. The consumer moves elements out and destroys them,
// then publishes `head_` (release); the producer's acquire of `head_` pairs with it before a slot
// is reused. `close` stores `closed_` (release) after the last `tail_` store; `finished` loads it
// (acquire), then re-reads `tail_`. Each side caches the other's index and re-reads it only when
// the cache says full or empty. The indices are also the data of the Doorbell's pairings.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/ring_indices.hpp"
#include "conveyor/sync/detail/ring_slot.hpp"

namespace conveyor::sync {

// Where a ring's fields lie (ring_indices.hpp): `allocated` slots, each side's fields on lines of
// their own; or one `inline_slot`, with the indices (capacity 1).
enum class RingLayout : std::uint8_t { allocated, inline_slot };

namespace detail {
template <class T, RingLayout Layout>
using RingIndicesFor =
    std::conditional_t<Layout == RingLayout::allocated, RingIndices,
                       BasicRingIndices<sizeof(RingSlot<T>), alignof(RingSlot<T>)>>;
}  // namespace detail

template <class T, RingLayout Layout = RingLayout::allocated>
class SpscRing : public detail::RingIndicesFor<T, Layout> {
  static_assert(std::is_nothrow_move_constructible_v<T> && std::is_nothrow_destructible_v<T>,
                "SpscRing<T>: T must be nothrow move constructible and destructible");
  using Indices = detail::RingIndicesFor<T, Layout>;
  static constexpr bool allocated = Layout == RingLayout::allocated;

 public:
  // With RingLayout::inline_slot, the capacity must be 1.
  explicit SpscRing(std::size_t capacity)
      : Indices(capacity, allocated ? new detail::RingSlot<T>[capacity] : nullptr) {}

  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  ~SpscRing() {
    const std::uint64_t end = tail_.load(std::memory_order_acquire);
    for (std::uint64_t position = head_.load(std::memory_order_acquire); position != end;
         ++position) {
      slots()[position % capacity_].destroy();
    }
    if constexpr (allocated) delete[] slots();
  }

  // RingLayout::inline_slot: a word on the ring's line for its owner's own use.
  [[nodiscard]] std::atomic<std::uint32_t>& owner_word() noexcept requires(!allocated) {
    return this->inline_.owner_word;
  }
  [[nodiscard]] const std::atomic<std::uint32_t>& owner_word() const noexcept requires(!allocated) {
    return this->inline_.owner_word;
  }

  // --- producer ---

  [[nodiscard]] bool try_push(T& element) noexcept { return try_emplace(std::move(element)); }

  // try_push of an element constructed in its slot from `args`.
  template <class... Args>
  [[nodiscard]] bool try_emplace(Args&&... args) {
    if (this->free_slots() == 0) return false;
    slots()[producer_slot_].construct(std::forward<Args>(args)...);
    producer_slot_ = next_slot(producer_slot_);
    ++producer_tail_;
    // Release: the element, for the consumer's acquire of tail_.
    tail_.store(producer_tail_, std::memory_order_release);
    return true;
  }

  // Moves elements from [first, last) into the free slots and publishes them together; advances
  // `first` past what went in, and returns how many did.
  template <class InputIt>
  std::size_t try_push_bulk(InputIt& first, InputIt last) {
    static_assert(std::is_nothrow_constructible_v<T, decltype(std::move(*first))>,
                  "SpscRing::try_push_bulk: T must be nothrow constructible from the elements");
    // The freshest view of the consumer's progress, so that the bulk is as large as it can be.
    cached_head_ = head_.load(std::memory_order_acquire);
    const std::uint64_t room = capacity_ - (producer_tail_ - cached_head_);
    std::uint64_t built = 0;
    // A local index: a store of an element could alias the member, which would then be reloaded
    // and stored on every element.
    std::size_t slot = producer_slot_;
    for (; built < room && first != last; ++built, ++first) {
      slots()[slot].construct(std::move(*first));
      slot = next_slot(slot);
    }
    producer_slot_ = slot;
    if (built > 0) {
      producer_tail_ += built;
      // Release: the elements, for the consumer's acquire of tail_.
      tail_.store(producer_tail_, std::memory_order_release);
    }
    return static_cast<std::size_t>(built);
  }

  // --- consumer ---

  [[nodiscard]] std::optional<T> try_pop() noexcept {
    std::optional<T> element;
    (void)try_pop_into(element);
    return element;
  }

  // try_pop into `out`, which must be empty: the element moves straight from its slot.
  [[nodiscard]] bool try_pop_into(std::optional<T>& out) noexcept {
    if (!this->has_element()) return false;
    out.emplace(std::move(slots()[consumer_slot_].get()));
    slots()[consumer_slot_].destroy();
    consumer_slot_ = next_slot(consumer_slot_);
    release_slots(1);
    return true;
  }

  // Moves up to `max` elements to `out`, and returns how many. The slots taken are handed back
  // even if writing to `out` throws (the element being written is then lost).
  template <class OutputIt>
  std::size_t try_pop_bulk(OutputIt& out, std::size_t max) {
    if (cached_tail_ - consumer_head_ < max) {
      // Acquire pairs with the producer's release of tail_: take everything that is there.
      cached_tail_ = tail_.load(std::memory_order_acquire);
    }
    const std::uint64_t count = std::min<std::uint64_t>(cached_tail_ - consumer_head_, max);
    struct Release {
      SpscRing& ring;
      std::uint64_t taken = 0;
      ~Release() {
        if (taken > 0) ring.release_slots(taken);
      }
    } release{*this};
    // A local index, as in try_push_bulk; the member follows every element, for a throw.
    std::size_t slot = consumer_slot_;
    for (std::uint64_t i = 0; i < count; ++i) {
      T element = slots()[slot].take();
      slot = next_slot(slot);
      ++release.taken;
      consumer_slot_ = slot;
      *out = std::move(element);
      ++out;
    }
    return static_cast<std::size_t>(count);
  }

  // Destroys every element published so far, and returns how many.
  std::size_t discard() noexcept {
    // Acquire pairs with the producer's release of tail_: the elements are complete.
    cached_tail_ = tail_.load(std::memory_order_acquire);
    const std::uint64_t count = cached_tail_ - consumer_head_;
    for (std::uint64_t i = 0; i < count; ++i) {
      slots()[consumer_slot_].destroy();
      consumer_slot_ = next_slot(consumer_slot_);
    }
    if (count > 0) release_slots(count);
    return static_cast<std::size_t>(count);
  }

 private:
  using Indices::cached_head_;
  using Indices::cached_tail_;
  using Indices::capacity_;
  using Indices::consumer_head_;
  using Indices::consumer_slot_;
  using Indices::head_;
  using Indices::next_slot;
  using Indices::producer_slot_;
  using Indices::producer_tail_;
  using Indices::release_slots;
  using Indices::storage_;
  using Indices::tail_;

  // Where the slots are: allocated, the pointer to them lives beside the capacity, on the line
  // both sides only read (ring_indices.hpp); inline, the slot is in the indices' own bytes.
  [[nodiscard]] detail::RingSlot<T>* slots() const noexcept {
    if constexpr (allocated) {
      return static_cast<detail::RingSlot<T>*>(storage_);
    } else {
      // The bytes' storage holds the slot (an implicit-lifetime type) from the ring's start.
      return std::launder(
          reinterpret_cast<detail::RingSlot<T>*>(const_cast<std::byte*>(this->inline_.bytes)));
    }
  }
};

}  // namespace conveyor::sync
