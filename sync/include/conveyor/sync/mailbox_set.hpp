// MailboxSet<T>: one producer dispatching round-robin to K consumers, one Mailbox each (seed 002).
//
// Contract: K = `size()` >= 1, fixed at construction (K == 0 is a contract violation).
// - Producer role (one thread at a time): `put`, `close`. Consumer i (one thread at a time per i):
//   `take(i)`, `try_take(i)`. Any thread: `abort`, `aborted`, `finished(i)`, `size`. A consumer
//   index i >= K is a contract violation.
// - `put(value)` waits until some slot is empty, then fills the first empty slot at or after the
//   finger and moves the finger past it (with no consumer taking, K puts land in slots 0..K-1).
//   True once the item is in a slot (a later abort may still drop it); false once aborted.
// - `close()` puts done into every mailbox, waiting for a slot that holds an item to be emptied
//   first. True once every consumer has its done; false if aborted first. After close, `put` and
//   `close` are contract violations.
// - `take(i)` waits for consumer i's next item; nullopt once its done arrives or after abort.
//   `try_take(i)` never waits: nullopt also while the slot is empty (`finished(i)` tells).
// - `abort()` is final and idempotent: it wakes the producer (put and close return false) and
//   every consumer (take returns nullopt) at once, and destroys every item still in a slot.
// - Nobody busy-waits. The destructor destroys the items held; no thread may be inside a member.
//
// Memory ordering (seed's terms; per slot, those of Mailbox<T>): a consumer releases the free-slot
// semaphore after its "release null", and the producer's acquire of it pairs with that, so a token
// always comes with a slot the producer sees empty. `aborted_` is set by an acq_rel exchange before
// any mailbox is aborted and before the producer's wake-up token is released; the producer reads
// it (acquire) after taking a token, so a token that abort released is always seen with the flag.
// Design notes: docs/design/sync-primitives.md#mailboxset.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/mailbox_role_guard.hpp"
#include "conveyor/sync/mailbox.hpp"
#include "conveyor/sync/semaphore.hpp"

namespace conveyor::sync {

template <class T>
class MailboxSet {
 public:
  explicit MailboxSet(std::size_t consumers) : free_slots_(checked_slot_count(consumers)) {
    mailboxes_.reserve(consumers);
    for (std::size_t i = 0; i < consumers; ++i) {
      mailboxes_.push_back(std::make_unique<Mailbox<T>>(&free_slots_));
    }
  }

  MailboxSet(const MailboxSet&) = delete;
  MailboxSet& operator=(const MailboxSet&) = delete;
  MailboxSet(MailboxSet&&) = delete;
  MailboxSet& operator=(MailboxSet&&) = delete;

  // Producer, phase 1: delivers `value` to the next empty mailbox. False once aborted.
  bool put(T value) {
    Scope producer(producer_guard_, "MailboxSet: two threads in the producer role at once");
    CONVEYOR_CONTRACT(!closed_, "MailboxSet::put after close");
    return claim_free_slot() &&
           fill_next_empty([&](Mailbox<T>& box) { return box.try_put(value); });
  }

  // Producer, phase 2: stuffs every mailbox with done. False if aborted first.
  bool close() {
    Scope producer(producer_guard_, "MailboxSet: two threads in the producer role at once");
    CONVEYOR_CONTRACT(!closed_, "MailboxSet::close called twice");
    closed_ = true;
    for (std::size_t stuffed = 0; stuffed < size(); ++stuffed) {
      if (!claim_free_slot()) return false;
      if (!fill_next_empty([](Mailbox<T>& box) { return box.try_put_done(); })) return false;
    }
    return true;
  }

  // Consumer `consumer`: its next item; nullopt after its done or an abort.
  std::optional<T> take(std::size_t consumer) { return mailbox(consumer).take(); }

  // Consumer `consumer`: its item if one is there now.
  [[nodiscard]] std::optional<T> try_take(std::size_t consumer) {
    return mailbox(consumer).try_take();
  }

  // Any thread: wakes the producer and every consumer, and drops every item in a slot.
  void abort() {
    // acq_rel: see "Memory ordering"; only the first call does the work.
    if (aborted_.exchange(true, std::memory_order_acq_rel)) return;
    for (auto& box : mailboxes_)
      box->abort();
    free_slots_.release();  // one token wakes the one producer; put and close check the flag first
  }

  [[nodiscard]] bool aborted() const noexcept { return aborted_.load(std::memory_order_acquire); }

  // True once consumer `consumer` has nothing more to take: its done arrived, or abort.
  [[nodiscard]] bool finished(std::size_t consumer) const {
    const Mailbox<T>& box = mailbox(consumer);
    return box.done() || box.aborted();
  }

  [[nodiscard]] std::size_t size() const noexcept { return mailboxes_.size(); }

 private:
  using Scope = detail::MailboxRoleGuard::Scope;

  static std::int32_t checked_slot_count(std::size_t consumers) {
    CONVEYOR_CONTRACT(consumers >= 1, "MailboxSet needs at least one consumer");
    CONVEYOR_CONTRACT(consumers < static_cast<std::size_t>(Semaphore::max_count),
                      "MailboxSet: too many consumers for the free-slot count");
    return static_cast<std::int32_t>(consumers);
  }

  Mailbox<T>& mailbox(std::size_t consumer) const {
    CONVEYOR_CONTRACT(consumer < mailboxes_.size(), "MailboxSet: no such consumer");
    return *mailboxes_[consumer];
  }

  // Sleeps until an empty slot is promised to the producer. False once aborted.
  bool claim_free_slot() {
    if (aborted()) return false;
    free_slots_.acquire();
    return !aborted();  // the token may be abort's wake-up rather than an empty slot
  }

  // After a claim: fills the first slot at or after the finger that `fill` accepts, and moves the
  // finger past it. A claimed token guarantees an empty slot within K steps unless aborted.
  template <class Fill>
  bool fill_next_empty(Fill fill) {
    for (std::size_t looked = 0; looked < size(); ++looked) {
      Mailbox<T>& box = *mailboxes_[finger_];
      finger_ = finger_ + 1 == size() ? 0 : finger_ + 1;
      if (fill(box)) return true;
    }
    CONVEYOR_DEBUG_CONTRACT(aborted(), "MailboxSet: a free-slot token without an empty slot");
    return false;
  }

  Semaphore free_slots_;  // declared first: every mailbox holds a pointer to it
  std::vector<std::unique_ptr<Mailbox<T>>> mailboxes_;
  std::atomic<bool> aborted_{false};
  // Producer-owned.
  std::size_t finger_ = 0;
  bool closed_ = false;
  [[no_unique_address]] detail::MailboxRoleGuard producer_guard_;
};

}  // namespace conveyor::sync
