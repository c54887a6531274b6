// RingIndices: the part of SpscRing (spsc_ring.hpp) that does not depend on the element type:
// the two indices, their cached copies, the end mark, and every call that only reads them.
// Code that watches many rings of different element types (the framework's ports) holds them
// through this base; the contract and the memory ordering are SpscRing's.
//
// Two layouts (docs/design/hand-over.md, "Where the fields lie"): RingIndices gives the tail,
// the head and each side's own fields a cache line each; BasicRingIndices<Bytes, Align> with
// Bytes > 0 (a ring of one slot held inline, SpscRing's RingLayout::inline_slot) puts the tail,
// the end mark, the head, the slot and a word for the ring's owner on one line (for a slot of up
// to 32 bytes, aligned to at most 8; a larger one spills onto the next), which every hand-over
// of a one-slot ring moves between the two sides anyway.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::sync::detail {

// Bytes for one slot kept beside the indices, and a word that the ring's owner uses as it
// likes (a Mailbox's claim); nothing for a ring whose slots are allocated.
template <std::size_t Bytes, std::size_t Align>
struct InlineSlot {
  alignas(Align) std::byte bytes[Bytes];
  std::atomic<std::uint32_t> owner_word{0};
};
template <std::size_t Align>
struct InlineSlot<0, Align> {};

template <std::size_t InlineBytes = 0, std::size_t InlineAlign = 1>
class BasicRingIndices {
  static constexpr bool packed = InlineBytes != 0;

 public:
  // `storage`: the typed slots, which SpscRing<T> allocates and frees (null with an inline slot,
  // which SpscRing reaches through `inline_`).
  BasicRingIndices(std::size_t capacity, void* storage) : capacity_(capacity), storage_(storage) {
    CONVEYOR_CONTRACT(capacity >= 1, "SpscRing: the capacity must be at least 1");
    CONVEYOR_CONTRACT(!packed || capacity == 1, "SpscRing: an inline slot is a ring of one");
  }

  BasicRingIndices(const BasicRingIndices&) = delete;
  BasicRingIndices& operator=(const BasicRingIndices&) = delete;

  // --- producer ---

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

  // Whether an element is waiting, without taking it.
  [[nodiscard]] bool has_element() noexcept {
    if (consumer_head_ != cached_tail_) return true;
    // Acquire pairs with the producer's release of tail_: the element is constructed.
    cached_tail_ = tail_.load(std::memory_order_acquire);
    return consumer_head_ != cached_tail_;
  }

  // True once the producer has closed the ring and every element has been popped.
  [[nodiscard]] bool finished() noexcept {
    if (!closed_.load(std::memory_order_acquire)) return false;
    cached_tail_ = tail_.load(std::memory_order_acquire);
    return consumer_head_ == cached_tail_;
  }

  // Free slots after the consumer's own pops, for deciding whether to wake a sleeping producer.
  [[nodiscard]] std::size_t free_after_pop() const noexcept {
    // Relaxed: only the count matters, and the producer re-checks with acquire.
    return static_cast<std::size_t>(capacity_ -
                                    (tail_.load(std::memory_order_relaxed) - consumer_head_));
  }

  // --- anyone ---

  [[nodiscard]] std::size_t size_approx() const noexcept {
    // Relaxed: a snapshot for metrics. Head first, so that the difference cannot go negative.
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    return static_cast<std::size_t>(std::min<std::uint64_t>(tail - head, capacity_));
  }

  // Whether `close` has been called (a snapshot).
  [[nodiscard]] bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

 protected:
  ~BasicRingIndices() = default;

  std::size_t next_slot(std::size_t slot) const noexcept {
    return slot + 1 == capacity_ ? 0 : slot + 1;
  }

  void release_slots(std::uint64_t count) noexcept {
    consumer_head_ += count;
    // Release: the slots are empty again, for the producer's acquire of head_.
    head_.store(consumer_head_, std::memory_order_release);
  }

  // Read by both sides, written by neither: one line of their own, away from the written ones.
  const std::size_t capacity_;
  void* const storage_;

  alignas(64) std::atomic<std::uint64_t> tail_{0};
  std::atomic<bool> closed_{false};
  // A line of its own, or (packed) beside the tail, followed by the inline slot.
  alignas(packed ? alignof(std::atomic<std::uint64_t>) : 64) std::atomic<std::uint64_t> head_{0};
  [[no_unique_address]] InlineSlot<InlineBytes, InlineAlign> inline_;

  alignas(64) std::uint64_t producer_tail_ = 0;
  std::uint64_t cached_head_ = 0;
  std::size_t producer_slot_ = 0;

  alignas(64) std::uint64_t consumer_head_ = 0;
  std::uint64_t cached_tail_ = 0;
  std::size_t consumer_slot_ = 0;
};

using RingIndices = BasicRingIndices<>;

}  // namespace conveyor::sync::detail
