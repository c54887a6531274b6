// BoundedQueue<T>: a blocking single-producer, single-consumer queue of exactly `capacity`
// elements, with non-blocking and bulk forms and an end of stream. One SpscRing and two Doorbells.
//
// Contract:
// - Producer role (one thread at a time): push, try_push, push_bulk, close. Consumer role (one
//   thread at a time): pop, try_pop, pop_bulk. Any thread, at any time: abort, closed, capacity,
//   size_approx. Two threads in one role at once is a contract violation, caught without NDEBUG.
// - `capacity >= 1`. T is nothrow move constructible and destructible; no default constructor or
//   assignment needed. The destructor destroys what is queued; no call may be in progress then.
// - push blocks while full, and returns false (dropping its value) once closed or aborted.
//   try_push never blocks and moves from its argument only when it returns true. push_bulk moves
//   items in until all are in or the queue is aborted, and returns how many went in.
// - pop blocks while empty; after close it returns what is left, in order, then nullopt; after
//   abort, nullopt at once. try_pop never blocks. pop_bulk (max >= 1) blocks until there is at
//   least one item or the end, and returns 0 only at the end.
// - close is the done sentinel, after the producer's last push; it may be called again. abort
//   wakes every blocked caller; what is queued is destroyed by the consumer's next call or the
//   destructor (abort itself never touches a slot).
//
// Memory ordering: the ring's release/acquire pairs on its indices carry the elements; the
// Doorbell's pairing carries the wake-ups, with a cheap check on every push and pop whose miss the
// sleeper's heavy fence covers (Waiter::Recovery::fence_first). close and abort ring with a full
// fence; abort's flags are read behind those fences. docs/design/hand-over.md has the reasoning.
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>

#include "conveyor/sync/detail/adaptive_spin.hpp"
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/queue_role_guard.hpp"
#include "conveyor/sync/doorbell.hpp"
#include "conveyor/sync/spsc_ring.hpp"
#include "conveyor/sync/waiter.hpp"

namespace conveyor::sync {

template <class T>
class BoundedQueue {
  static_assert(std::is_nothrow_move_constructible_v<T> && std::is_nothrow_destructible_v<T>,
                "BoundedQueue<T>: T must be nothrow move constructible and destructible");

 public:
  explicit BoundedQueue(std::size_t capacity) : ring_(checked_capacity(capacity)) {}

  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;
  BoundedQueue(BoundedQueue&&) = delete;
  BoundedQueue& operator=(BoundedQueue&&) = delete;

  bool push(T value) {
    detail::QueueRoleGuard::Scope role(producer_role_, producer_violation);
    if (!wait_for_space()) return false;
    (void)ring_.try_push(value);  // there is room: only this thread fills it
    consumer_bell_.ring_after_hand_over(WaitReason::items);
    return true;
  }

  [[nodiscard]] bool try_push(T& value) {
    detail::QueueRoleGuard::Scope role(producer_role_, producer_violation);
    // Relaxed: a hint; after an abort, a push that races with it may still publish.
    if (closed_.load(std::memory_order_relaxed) || !ring_.try_push(value)) return false;
    consumer_bell_.ring_after_hand_over(WaitReason::items);
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
    detail::QueueRoleGuard::Scope role(producer_role_, producer_violation);
    std::size_t pushed = 0;
    while (first != last) {
      if (!wait_for_space()) break;
      pushed += ring_.try_push_bulk(first, last);
      consumer_bell_.ring_after_hand_over(WaitReason::items);
    }
    return pushed;
  }

  template <class OutputIt>
  std::size_t pop_bulk(OutputIt out, std::size_t max) {
    CONVEYOR_CONTRACT(max >= 1, "BoundedQueue::pop_bulk: max must be at least 1");
    detail::QueueRoleGuard::Scope role(consumer_role_, consumer_violation);
    for (;;) {
      switch (poll_items()) {
        case Poll::ready: {
          // The producer hears of the freed slots even if writing to `out` throws.
          struct Ring {
            Doorbell& producer;
            ~Ring() { producer.ring_after_hand_over(WaitReason::space); }
          } ring{producer_bell_};
          return ring_.try_pop_bulk(out, max);
        }
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
    // Relaxed: only the producer's own pushes read it; the ring's close publishes the end.
    closed_.store(true, std::memory_order_relaxed);
    ring_.close();
    consumer_bell_.ring(WaitReason::items);
  }

  void abort() {
    // Relaxed stores: each ring_any runs a full fence before it looks at a doorbell, and a
    // sleeper runs one after its announcement before it re-checks these flags.
    aborted_.store(true, std::memory_order_relaxed);
    closed_.store(true, std::memory_order_relaxed);
    consumer_bell_.ring_any();
    producer_bell_.ring_any();
  }

  [[nodiscard]] bool closed() const noexcept {
    return closed_.load(std::memory_order_acquire) || ring_.closed();
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return ring_.capacity(); }

  [[nodiscard]] std::size_t size_approx() const noexcept { return ring_.size_approx(); }

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

  // --- producer side ---

  // Waits until there is room; false once the queue is closed or aborted.
  bool wait_for_space() {
    // Relaxed: after close() this is the producer's own store; after abort() see abort().
    if (closed_.load(std::memory_order_relaxed)) [[unlikely]]
      return false;
    if (ring_.free_slots() > 0) [[likely]]
      return true;
    return sleep_until_space();
  }

  // Out of line, so that the push that finds room stays small enough to inline.
  [[gnu::noinline]] bool sleep_until_space() {
    auto room = [this] { return ring_.free_slots() > 0; };
    auto closed = [this] { return closed_.load(std::memory_order_relaxed); };
    while (!closed() && !room()) {
      if (producer_spin_.spin([&] { return room() || closed(); })) continue;
      (void)producer_waiter_.wait(WaitReason::space, room, closed);
    }
    return !closed();
  }

  // --- consumer side ---

  Poll poll_items() {
    // Relaxed: an abort that happened before this call is seen by coherence; one that races with
    // it may be missed, and the call then behaves as if it came first.
    if (aborted_.load(std::memory_order_relaxed)) [[unlikely]] {
      if (ring_.discard() > 0) producer_bell_.ring_after_hand_over(WaitReason::space);
      return Poll::ended;
    }
    if (ring_.has_element()) return Poll::ready;
    if (!ring_.finished()) return ring_.has_element() ? Poll::ready : Poll::empty;
    return Poll::ended;
  }

  void wait_for_items() {
    auto ready = [this] {
      // Relaxed: the Waiter's fences order it (see abort()).
      return ring_.has_element() || ring_.closed() || aborted_.load(std::memory_order_relaxed);
    };
    if (consumer_spin_.spin(ready)) return;
    (void)consumer_waiter_.wait(WaitReason::items, ready, [] { return false; });
  }

  std::optional<T> take_one() {
    std::optional<T> value;
    (void)ring_.try_pop_into(value);  // poll_items() saw it
    producer_bell_.ring_after_hand_over(WaitReason::space);
    return value;
  }

  SpscRing<T> ring_;

  // The producer's.
  alignas(64) Doorbell producer_bell_;
  Waiter producer_waiter_{producer_bell_, Waiter::Recovery::fence_first};
  detail::AdaptiveSpin producer_spin_;
  [[no_unique_address]] detail::QueueRoleGuard producer_role_;

  // The consumer's.
  alignas(64) Doorbell consumer_bell_;
  Waiter consumer_waiter_{consumer_bell_, Waiter::Recovery::fence_first};
  detail::AdaptiveSpin consumer_spin_;
  [[no_unique_address]] detail::QueueRoleGuard consumer_role_;

  // Read on every push, written only by close() and abort().
  alignas(64) std::atomic<bool> closed_{false};  // pushes fail
  std::atomic<bool> aborted_{false};             // pops end, and drop what is left
};

}  // namespace conveyor::sync
