// Mailbox<T>: a single slot handed between one producer and one consumer (seed 002). It is empty,
// holds one item, or holds done, the final end-of-stream sentinel.
//
// Contract: not copyable, not movable. T is nothrow move constructible. The destructor destroys a
// held item; no thread may be inside a member by then.
// - Producer role (one thread at a time): `try_put`, `try_put_done`. Consumer role (one thread at
//   a time): `take`, `try_take`. Any thread: `abort`, `empty`, `done`, `aborted`. Two threads in
//   one role at once is a contract violation, checked without NDEBUG.
// - `try_put(value)` succeeds only on an empty, not aborted slot, moves from `value` only then, and
//   wakes the consumer. `try_put_done()` likewise puts the sentinel.
// - `take()` waits for the slot to hold something: an item is moved out and the slot is empty
//   again; done or abort gives nullopt, now and on every later call. `try_take()` never waits:
//   nullopt also when empty (`done()` and `aborted()` tell). Emptying the slot releases the
//   optional `on_emptied` semaphore, which must outlive the mailbox.
// - `abort()` is final and idempotent: puts and takes fail from then on, a blocked `take` returns
//   nullopt, a held item is destroyed at once. A put or take that wins a race with it completes
//   first (a put still returns true, and its item is destroyed; a take returns its item).
//
// Memory ordering (seed's terms): "acquire null" (producer's load) pairs with "release null" (the
// consumer's fetch_and that empties the slot); "release nonnull" (fetch_or of the item) with
// "acquire nonnull" (compare-exchange item -> taking); "release done" with the consumer's acquire
// load. abort's acq_rel fetch_or acquires a published item and releases to both sides. Semaphores
// only wake (the state is re-read after each wake); `on_emptied` is released after "release null".
// Design notes: docs/design/sync-primitives.md#mailbox.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/mailbox_role_guard.hpp"
#include "conveyor/sync/detail/mailbox_state.hpp"
#include "conveyor/sync/semaphore.hpp"

namespace conveyor::sync {

template <class T>
class alignas(64) Mailbox {
  static_assert(std::is_object_v<T> && !std::is_const_v<T> && !std::is_array_v<T>,
                "Mailbox<T>: T must be a non-const object type that is not an array");
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "Mailbox<T>: T must be nothrow move constructible");
  static_assert(std::is_nothrow_destructible_v<T>, "Mailbox<T>: T must be nothrow destructible");

 public:
  // `on_emptied`, if given, is released each time the consumer empties the slot.
  explicit Mailbox(Semaphore* on_emptied = nullptr) noexcept : on_emptied_(on_emptied) {}

  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;
  Mailbox(Mailbox&&) = delete;
  Mailbox& operator=(Mailbox&&) = delete;

  ~Mailbox() {
    // Acquire: pairs with the last release of whichever thread touched the storage.
    const std::uint32_t state = state_.load(std::memory_order_acquire);
    CONVEYOR_DEBUG_CONTRACT(State::contents(state) != State::taking,
                            "Mailbox destroyed while its consumer takes an item");
    if (State::contents(state) == State::item) destroy_item();
  }

  // Producer: empty -> item. Moves from `value` only when it returns true.
  [[nodiscard]] bool try_put(T& value) {
    Scope producer(producer_guard_, "Mailbox: two threads in the producer role at once");
    if (!producer_owns_empty_slot()) return false;
    ::new (static_cast<void*>(storage_)) T(std::move(value));
    return publish(State::item);
  }

  // Producer: empty -> done, the end-of-stream sentinel.
  [[nodiscard]] bool try_put_done() {
    Scope producer(producer_guard_, "Mailbox: two threads in the producer role at once");
    if (!producer_owns_empty_slot()) return false;
    return publish(State::done);
  }

  // Consumer: waits until the slot holds something. The item, or nullopt for done or abort.
  std::optional<T> take() {
    Scope consumer(consumer_guard_, "Mailbox: two threads in the consumer role at once");
    std::optional<T> taken;
    for (;;) {
      switch (poll(taken)) {
        case Poll::took:
          return taken;
        case Poll::finished:
          return std::nullopt;
        case Poll::empty:
          items_.acquire();
          break;
      }
    }
  }

  // Consumer: the item if there is one now; nullopt if the slot is empty, done or aborted.
  [[nodiscard]] std::optional<T> try_take() {
    Scope consumer(consumer_guard_, "Mailbox: two threads in the consumer role at once");
    std::optional<T> taken;
    (void)poll(taken);
    return taken;
  }

  // Any thread: ends the mailbox for both sides, wakes a blocked take, destroys a held item.
  void abort() {
    // acq_rel: see "Memory ordering"; the acquire lets this thread destroy an item it finds.
    const std::uint32_t before = state_.fetch_or(State::aborted, std::memory_order_acq_rel);
    if (State::is_aborted(before)) return;
    // An item not yet claimed by the consumer now belongs to this thread: the consumer's claim
    // expects exactly `item` and fails from here on, and the producer only writes an empty slot.
    if (State::contents(before) == State::item) {
      destroy_item();
      state_.fetch_and(State::aborted, std::memory_order_release);
    }
    items_.release();
  }

  // True when the slot holds neither an item nor done (a snapshot, possibly stale).
  [[nodiscard]] bool empty() const noexcept {
    return State::contents(state_.load(std::memory_order_acquire)) == State::empty;
  }
  // True once the slot holds the done sentinel; it never leaves.
  [[nodiscard]] bool done() const noexcept {
    return State::contents(state_.load(std::memory_order_acquire)) == State::done;
  }
  [[nodiscard]] bool aborted() const noexcept {
    return State::is_aborted(state_.load(std::memory_order_acquire));
  }

 private:
  using State = detail::MailboxState;
  using Scope = detail::MailboxRoleGuard::Scope;
  enum class Poll { took, empty, finished };

  bool producer_owns_empty_slot() const noexcept {
    // "acquire null": pairs with the consumer's release null in poll().
    return state_.load(std::memory_order_acquire) == State::empty;
  }

  // Hands the slot to the consumer. An abort that arrived since producer_owns_empty_slot() saw
  // an empty slot and left its storage to us, so an item is destroyed here; the put still counts
  // as done before the abort.
  bool publish(std::uint32_t contents) {
    // "release nonnull" / "release done": pairs with the consumer's acquire in poll().
    const std::uint32_t before = state_.fetch_or(contents, std::memory_order_release);
    if (State::is_aborted(before)) {
      if (contents == State::item) {
        destroy_item();
        state_.fetch_and(State::aborted, std::memory_order_release);
      }
      return true;
    }
    items_.release();
    return true;
  }

  Poll poll(std::optional<T>& taken) {
    // "acquire nonnull" for done; the item itself is acquired by the claim below.
    std::uint32_t state = state_.load(std::memory_order_acquire);
    if (state == State::empty) return Poll::empty;
    if (state != State::item) return Poll::finished;  // done, or aborted
    // "acquire nonnull": pairs with the producer's release in publish(). It fails only when an
    // abort set its bit meanwhile; the aborter then owns the item and destroys it.
    if (!state_.compare_exchange_strong(state, State::taking, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
      return Poll::finished;
    }
    T* item = item_pointer();
    taken.emplace(std::move(*item));
    item->~T();
    // Consume the token that announced this item, if it has arrived, so that tokens do not pile
    // up when the consumer finds items without waiting. The next item cannot be announced before
    // the slot is empty again, so this never eats a later item's token.
    (void)items_.try_acquire();
    // "release null": "we took it". Keeps an aborted bit that arrived during the move.
    state_.fetch_and(State::aborted, std::memory_order_release);
    if (on_emptied_ != nullptr) on_emptied_->release();
    return Poll::took;
  }

  T* item_pointer() noexcept { return std::launder(reinterpret_cast<T*>(storage_)); }
  void destroy_item() noexcept { item_pointer()->~T(); }

  // Shared by both sides: every hand-off touches the state word and the storage together.
  std::atomic<std::uint32_t> state_{State::empty};
  alignas(T) std::byte storage_[sizeof(T)];
  Semaphore* const on_emptied_;
  [[no_unique_address]] detail::MailboxRoleGuard producer_guard_;
  [[no_unique_address]] detail::MailboxRoleGuard consumer_guard_;
  Semaphore items_;  // the consumer's wake-ups; alignas(64) inside, on its own cache line
};

}  // namespace conveyor::sync
