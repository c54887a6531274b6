#include "conveyor/sync/task_sequencer.hpp"

#include <algorithm>

#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::sync {

TaskSequencer::~TaskSequencer() {
  CONVEYOR_DEBUG_CONTRACT(queue_.empty(), "TaskSequencer destroyed with operations queued");
}

std::size_t TaskSequencer::size() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

TaskSequencer::Ticket::Ticket(TaskSequencer& sequencer)
    : sequencer_(&sequencer), entry_(sequencer.enqueue()) {}

TaskSequencer::Ticket::~Ticket() {
  if (sequencer_ != nullptr) sequencer_->leave(entry_);
}

std::shared_ptr<TaskSequencer::Entry> TaskSequencer::enqueue() {
  auto entry = std::make_shared<Entry>();
  std::lock_guard lock(mutex_);
  queue_.push_back(entry);
  return entry;
}

void TaskSequencer::wait(const std::shared_ptr<Entry>& entry, std::unique_ptr<Waker> waker) {
  boost::system::error_code outcome;
  {
    std::lock_guard lock(mutex_);
    if (entry->cancelled) {
      outcome = boost::asio::error::operation_aborted;
    } else if (queue_.front() == entry) {
      entry->started = true;
    } else {
      entry->waker = std::move(waker);
      return;
    }
  }
  // Its turn already, or cancelled before it waited: still resumed through its executor.
  waker->post(outcome);
}

void TaskSequencer::cancel(const std::shared_ptr<Entry>& entry) {
  std::unique_ptr<Waker> aborted;
  std::unique_ptr<Waker> next;
  {
    std::lock_guard lock(mutex_);
    if (entry->started || entry->cancelled) return;
    entry->cancelled = true;
    aborted = std::move(entry->waker);
    const bool first = queue_.front() == entry;
    queue_.erase(std::find(queue_.begin(), queue_.end(), entry));
    entry->queued = false;
    if (first) next = next_turn();
  }
  if (aborted) aborted->post(boost::asio::error::operation_aborted);
  if (next) next->post({});
}

void TaskSequencer::leave(const std::shared_ptr<Entry>& entry) {
  std::unique_ptr<Waker> next;
  {
    std::lock_guard lock(mutex_);
    if (!entry->queued) return;
    entry->queued = false;
    if (queue_.front() == entry) {
      queue_.pop_front();
      next = next_turn();
    } else {
      queue_.erase(std::find(queue_.begin(), queue_.end(), entry));
    }
  }
  if (next) next->post({});
}

std::unique_ptr<TaskSequencer::Waker> TaskSequencer::next_turn() {
  if (queue_.empty()) return nullptr;
  Entry& first = *queue_.front();
  // Not waiting yet: it starts when it waits (wait() finds it first).
  if (!first.waker) return nullptr;
  first.started = true;
  return std::move(first.waker);
}

}  // namespace conveyor::sync
