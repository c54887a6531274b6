#include "conveyor/sync/task_sequencer.hpp"

#include <bit>

#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::sync {

TaskSequencer::~TaskSequencer() {
  // In every build: a queued operation's ticket, its stop callback and its waiting frame would
  // each reach the destroyed sequencer later.
  CONVEYOR_CONTRACT(serving_ == issued_.load(std::memory_order_relaxed),
                    "TaskSequencer destroyed with operations queued");
}

std::size_t TaskSequencer::size() const {
  std::lock_guard lock(mutex_);
  return issued_.load(std::memory_order_relaxed) - serving_ - gone_;
}

void TaskSequencer::wait(Ticket& ticket, TurnWait& waiter, detail::AwaitableFrame* frame) {
  std::lock_guard lock(mutex_);
  if (ticket.left_) return;  // cancelled: goes on at once and throws
  if (ticket.number_ == serving_) {
    ticket.started_ = true;
    return;  // its turn: goes on at once, without a post
  }
  // Under the mutex, which every wake takes, so no wake finds it half filed.
  Slot& filed = slot(ticket.number_);
  waiter.suspended_.emplace(frame);
  filed.waiter = &waiter;
  ticket.waiting_ = &waiter;
}

void TaskSequencer::cancel(Ticket& ticket) {
  TurnWait* aborted = nullptr;
  TurnWait* next = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (ticket.started_ || ticket.left_) return;
    ticket.left_ = true;
    if (ticket.number_ == serving_) {
      next = next_turn();  // it does not wait yet: waiting in its turn would have started it
    } else {
      Slot& filed = slot(ticket.number_);
      filed.waiter = nullptr;
      filed.gone = true;
      ++gone_;
      aborted = std::exchange(ticket.waiting_, nullptr);
    }
  }
  if (aborted != nullptr) aborted->resume_through_executor(false);
  if (next != nullptr) next->resume_through_executor(true);
}

void TaskSequencer::leave(Ticket& ticket) {
  TurnWait* next = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (ticket.left_) return;  // cancelled before
    ticket.left_ = true;
    if (ticket.number_ == serving_) {
      next = next_turn();
    } else {
      // Abandoned before its turn (its awaitable destroyed unawaited): later ones skip it.
      slot(ticket.number_).gone = true;
      ++gone_;
    }
  }
  if (next != nullptr) next->resume_through_executor(true);
}

TaskSequencer::TurnWait* TaskSequencer::next_turn() {
  const std::size_t mask = slots_.size() - 1;
  ++serving_;
  while (slots_[serving_ & mask].gone) {
    slots_[serving_ & mask].gone = false;
    --gone_;
    ++serving_;
  }
  if (serving_ == issued_.load(std::memory_order_relaxed) && slots_.size() > initial_slots) {
    // Nothing queued, so nothing filed: give back what a long queue, or numbers cancelled behind
    // a long operation, made the table grow to (shrink_to_fit keeps the old storage rather than
    // throw).
    slots_.resize(initial_slots);
    slots_.shrink_to_fit();
  }
  // Not waiting yet: it starts when it waits (wait() finds its number served).
  TurnWait* waiter = std::exchange(slots_[serving_ & (slots_.size() - 1)].waiter, nullptr);
  if (waiter == nullptr) return nullptr;
  waiter->ticket_.waiting_ = nullptr;
  waiter->ticket_.started_ = true;
  return waiter;
}

TaskSequencer::Slot& TaskSequencer::slot(std::uint64_t number) {
  const std::uint64_t distance = number - serving_;
  if (distance >= slots_.size()) {
    // Every number in [serving_, serving_ + size) has a slot of its own; so has the new one after.
    std::vector<Slot> grown(std::bit_ceil(distance + 1));
    const std::size_t old_mask = slots_.size() - 1;
    for (std::uint64_t n = serving_; n < serving_ + slots_.size(); ++n)
      grown[n & (grown.size() - 1)] = slots_[n & old_mask];
    slots_ = std::move(grown);
  }
  return slots_[number & (slots_.size() - 1)];
}

}  // namespace conveyor::sync
