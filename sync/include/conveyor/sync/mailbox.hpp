// Mailbox<T>: a single slot handed between one producer and one consumer (seed 002): an
// SpscRing of capacity 1 whose consumer sleeps on its own Doorbell. It is empty, holds one item,
// or holds done, the final end-of-stream sentinel.
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
// Memory ordering: the ring's release/acquire pairs carry the item. The consumer claims the ring
// (compare-exchange to `taking`, acquire) and releases it (fetch_and, release); abort's acq_rel
// fetch_or of `aborted` bars later claims, and whoever destroys what is left (abort, or a put
// that raced with it and won) holds the `locked` bit, acquired and released likewise. A put runs
// a full fence between its push and its look at `aborted` and at the consumer's doorbell.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>

#include "conveyor/sync/detail/asymmetric_fence.hpp"
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/mailbox_role_guard.hpp"
#include "conveyor/sync/doorbell.hpp"
#include "conveyor/sync/semaphore.hpp"
#include "conveyor/sync/spsc_ring.hpp"
#include "conveyor/sync/waiter.hpp"

namespace conveyor::sync {

// At least a cache line's alignment, and T's, whose slot it holds.
template <class T>
class alignas(std::max<std::size_t>(64, alignof(T))) Mailbox {
  static_assert(std::is_object_v<T> && !std::is_const_v<T> && !std::is_array_v<T>,
                "Mailbox<T>: T must be a non-const object type that is not an array");
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "Mailbox<T>: T must be nothrow move constructible");
  static_assert(std::is_nothrow_destructible_v<T>, "Mailbox<T>: T must be nothrow destructible");

 public:
  // `on_emptied`, if given, is released each time the consumer empties the slot.
  explicit Mailbox(Semaphore* on_emptied = nullptr) : ring_(1), on_emptied_(on_emptied) {}

  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;
  Mailbox(Mailbox&&) = delete;
  Mailbox& operator=(Mailbox&&) = delete;

  ~Mailbox() {
    // Acquire: pairs with the last release of whichever thread claimed the ring.
    CONVEYOR_DEBUG_CONTRACT((claim().load(std::memory_order_acquire) & taking) == 0,
                            "Mailbox destroyed while its consumer takes an item");
  }

  // Producer: empty -> item. Moves from `value` only when it returns true.
  [[nodiscard]] bool try_put(T& value) {
    Scope producer(producer_guard_, "Mailbox: two threads in the producer role at once");
    if (aborted() || ring_.closed() || !ring_.try_push(value)) return false;
    // A full fence between the push and the looks that follow: an abort either finds the item,
    // or is seen here and the item is destroyed; a consumer announcing its wait is not missed.
    detail::full_fence();
    if (aborted()) return !took_back_after_abort(value);
    consumer_bell_.ring_on_recheck(WaitReason::items, [] { return true; });
    return true;
  }

  // Producer: empty -> done, the end-of-stream sentinel.
  [[nodiscard]] bool try_put_done() {
    Scope producer(producer_guard_, "Mailbox: two threads in the producer role at once");
    if (aborted() || ring_.closed() || ring_.free_slots() == 0) return false;
    ring_.close();
    consumer_bell_.ring(WaitReason::items);
    return true;
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
          // Atomics only: an abort may be destroying what is left meanwhile.
          (void)waiter_.wait(
              WaitReason::items,
              [this] { return ring_.size_approx() > 0 || ring_.closed() || aborted(); },
              [] { return false; });
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
    // acq_rel: bars later claims, and orders a finished take's pop before what follows.
    if ((claim().fetch_or(aborted_bit, std::memory_order_acq_rel) & aborted_bit) != 0) return;
    // The other side of a put's fence: either the put sees the bit, or the sweep sees its item.
    detail::full_fence();
    lock_the_ring();
    (void)ring_.discard();
    unlock_the_ring(swept);
    consumer_bell_.ring_any();
  }

  // True when the slot holds neither an item nor done (a snapshot, possibly stale).
  [[nodiscard]] bool empty() const noexcept { return !ring_.closed() && ring_.size_approx() == 0; }
  // True once the slot holds the done sentinel; it never leaves.
  [[nodiscard]] bool done() const noexcept { return ring_.closed(); }
  [[nodiscard]] bool aborted() const noexcept {
    return (claim().load(std::memory_order_acquire) & aborted_bit) != 0;
  }

 private:
  using Scope = detail::MailboxRoleGuard::Scope;
  enum class Poll { took, empty, finished };

  // The claim word: on the ring's line.
  std::atomic<std::uint32_t>& claim() noexcept { return ring_.owner_word(); }
  const std::atomic<std::uint32_t>& claim() const noexcept { return ring_.owner_word(); }

  // The claim's bits: the consumer is inside the ring; abort was called; somebody destroys what is
  // left; abort has done so.
  static constexpr std::uint32_t taking = 1;
  static constexpr std::uint32_t aborted_bit = 2;
  static constexpr std::uint32_t locked = 4;
  static constexpr std::uint32_t swept = 8;  // abort has destroyed what the slot held

  Poll poll(std::optional<T>& taken) {
    if (ring_.size_approx() == 0) {
      return aborted() || ring_.closed() ? Poll::finished : Poll::empty;
    }
    std::uint32_t expected = 0;
    // Acquire: pairs with the release of the last one to hold the ring. Fails once aborted.
    if (!claim().compare_exchange_strong(expected, taking, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
      return Poll::finished;
    }
    (void)ring_.try_pop_into(taken);  // the size said one is there, and only we take
    // Release: the pop, for whoever claims the ring next.
    claim().fetch_and(~taking, std::memory_order_release);
    if (on_emptied_ != nullptr) on_emptied_->release();
    return Poll::took;
  }

  // A put that saw the abort only after its push. If the abort emptied the slot before the push,
  // the put lost: its item goes back to `value` (true). Otherwise the put came first and won: its
  // item is destroyed, by the abort's sweep or here (false).
  bool took_back_after_abort(T& value) {
    lock_the_ring();
    // Relaxed: the lock's acquire orders it. Swept and still there: the sweep came first.
    const bool lost = (claim().load(std::memory_order_relaxed) & swept) != 0 && ring_.has_element();
    std::optional<T> back;
    if (lost) {
      (void)ring_.try_pop_into(back);  // our item: nothing else can be there after the sweep
      std::destroy_at(std::addressof(value));
      std::construct_at(std::addressof(value), std::move(*back));
    } else {
      (void)ring_.discard();
    }
    unlock_the_ring(0);
    return lost;
  }

  // Takes the consumer's side of the ring after an abort, once no take is inside it.
  void lock_the_ring() {
    // Relaxed: the compare-exchange decides.
    std::uint32_t seen = claim().load(std::memory_order_relaxed);
    for (;;) {
      if ((seen & (taking | locked)) != 0) {
        // A take finishing its move, or the other destroyer: a few instructions away.
        std::this_thread::yield();
        seen = claim().load(std::memory_order_relaxed);
        continue;
      }
      // Acquire: pairs with the release of the last take or destroyer.
      if (claim().compare_exchange_weak(seen, seen | locked, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
        return;
      }
    }
  }

  void unlock_the_ring(std::uint32_t also_set) {
    // Release: what was destroyed or taken back, for the next holder and the destructor.
    claim().fetch_xor(locked | also_set, std::memory_order_release);
  }

  // The slot, the ring's indices and the claim share one line, which every hand-over moves (for
  // a T of up to 32 bytes).
  SpscRing<T, RingLayout::inline_slot> ring_;
  Semaphore* const on_emptied_;
  [[no_unique_address]] detail::MailboxRoleGuard producer_guard_;
  [[no_unique_address]] detail::MailboxRoleGuard consumer_guard_;
  // The consumer's wake-ups: every ringer rings behind a full fence, so none is missed.
  Doorbell consumer_bell_;
  Waiter waiter_{consumer_bell_, Waiter::Recovery::none};
};

}  // namespace conveyor::sync
