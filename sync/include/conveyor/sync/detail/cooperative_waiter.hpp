// The waiter node and FIFO queue behind CooperativeSemaphore. Not a public header.
//
// A node lives on the waiting caller's stack (a suspended task's stack stays valid while it is
// suspended) and is linked into its semaphore's queue under the semaphore's mutex. `state` starts
// as `waiting`; exactly one compare-exchange moves it to `granted` (a release handed it a token) or
// `cancelled` (its deadline passed first), always under the semaphore's mutex. It is read without
// the mutex by the waiter itself: a blocked thread sleeps on it as a futex word.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "conveyor/sync/detail/futex.hpp"

namespace conveyor::sync {
class CooperativeSemaphore;
}

namespace conveyor::sync::detail {

enum class WaiterState : std::int32_t { waiting = 0, granted = 1, cancelled = 2 };

struct CooperativeWaiter {
  // A thread blocks on `state`; a task is suspended and `suspend_point` resumes it.
  enum class Kind { thread, task };

  explicit CooperativeWaiter(CooperativeSemaphore& owner_semaphore, Kind waiter_kind,
                             std::chrono::steady_clock::time_point wait_deadline)
      : owner(&owner_semaphore), kind(waiter_kind), deadline(wait_deadline) {}

  CooperativeWaiter(const CooperativeWaiter&) = delete;
  CooperativeWaiter& operator=(const CooperativeWaiter&) = delete;

  [[nodiscard]] WaiterState load_state(std::memory_order order) const noexcept {
    return static_cast<WaiterState>(state.load(order));
  }

  // Under the owner's mutex. Release pairs with the waiter's acquire load of `state`, so that
  // what the releasing thread wrote before `release` is visible to the woken waiter.
  bool try_resolve(WaiterState outcome) noexcept {
    std::int32_t expected = static_cast<std::int32_t>(WaiterState::waiting);
    return state.compare_exchange_strong(expected, static_cast<std::int32_t>(outcome),
                                         std::memory_order_release, std::memory_order_relaxed);
  }

  FutexWord state{static_cast<std::int32_t>(WaiterState::waiting)};
  CooperativeSemaphore* owner;
  Kind kind;
  std::chrono::steady_clock::time_point deadline;
  // tbb::task::suspend_point, kept opaque so that this header does not need oneTBB.
  void* suspend_point = nullptr;
  // Queue links and membership; guarded by the owner's mutex.
  CooperativeWaiter* previous = nullptr;
  CooperativeWaiter* next = nullptr;
  bool queued = false;
};

// An intrusive FIFO of waiters. Every member is called under the owning semaphore's mutex.
class WaiterQueue {
 public:
  [[nodiscard]] bool empty() const noexcept { return head_ == nullptr; }

  void push_back(CooperativeWaiter& waiter) noexcept {
    waiter.previous = tail_;
    waiter.next = nullptr;
    if (tail_ != nullptr) {
      tail_->next = &waiter;
    } else {
      head_ = &waiter;
    }
    tail_ = &waiter;
    waiter.queued = true;
  }

  CooperativeWaiter* pop_front() noexcept {
    CooperativeWaiter* first = head_;
    if (first != nullptr) remove(*first);
    return first;
  }

  void remove(CooperativeWaiter& waiter) noexcept {
    if (waiter.previous != nullptr) {
      waiter.previous->next = waiter.next;
    } else {
      head_ = waiter.next;
    }
    if (waiter.next != nullptr) {
      waiter.next->previous = waiter.previous;
    } else {
      tail_ = waiter.previous;
    }
    waiter.previous = nullptr;
    waiter.next = nullptr;
    waiter.queued = false;
  }

 private:
  CooperativeWaiter* head_ = nullptr;
  CooperativeWaiter* tail_ = nullptr;
};

}  // namespace conveyor::sync::detail
