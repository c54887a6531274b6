#include "conveyor/sync/async_mutex.hpp"

#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::sync {

AsyncMutex::~AsyncMutex() {
  CONVEYOR_DEBUG_CONTRACT(state_.load(std::memory_order_relaxed) == 0 && head_ == nullptr,
                          "AsyncMutex destroyed while held or waited for");
}

bool AsyncMutex::acquire_or_wait(Waiter& waiter) {
  std::lock_guard lock(list_mutex_);
  // Announce the waiter before trying: an unlock() that the try below does not see (its
  // fetch_and comes later in state_'s modification order) sees `waiting` and wakes one. Relaxed:
  // the bit orders nothing but itself, through that modification order and the list mutex; the
  // acquire that pairs with the last holder's release is the try's.
  state_.fetch_or(waiting, std::memory_order_relaxed);
  if ((state_.fetch_or(held, std::memory_order_acquire) & held) == 0) {
    // Nobody else waits: clear the bit (relaxed, as it is only ever changed under the mutex).
    if (head_ == nullptr) state_.fetch_and(~waiting, std::memory_order_relaxed);
    return true;
  }
  waiter.next = nullptr;
  if (tail_ == nullptr) {
    head_ = &waiter;
  } else {
    tail_->next = &waiter;
  }
  tail_ = &waiter;
  return false;
}

void AsyncMutex::wake_next() noexcept {
  Waiter* woken = nullptr;
  {
    std::lock_guard lock(list_mutex_);
    woken = head_;
    if (woken != nullptr) {
      head_ = woken->next;
      if (head_ == nullptr) {
        tail_ = nullptr;
        state_.fetch_and(~waiting, std::memory_order_relaxed);
      }
    }
  }
  // Posts the waiter's retry; it competes with arrivals (unfair).
  if (woken != nullptr) woken->wake(woken);
}

}  // namespace conveyor::sync
