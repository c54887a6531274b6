// CooperativeSemaphore's waiting paths: the FIFO hand-off, task suspension, the blocking fallback,
// and the timer thread that resumes suspended tasks whose deadline has passed.
#include "conveyor/sync/cooperative_semaphore.hpp"

#include <oneapi/tbb/task.h>
#include <oneapi/tbb/task_arena.h>

#include <condition_variable>
#include <set>
#include <thread>
#include <utility>

namespace conveyor::sync {

namespace detail {

using Clock = std::chrono::steady_clock;
constexpr Clock::time_point no_deadline = Clock::time_point::max();

namespace {

// True when the caller runs inside a oneTBB task that may suspend; see "How a caller waits".
bool inside_suspendable_task() noexcept {
#if __TBB_RESUMABLE_TASKS
  // current_thread_index() first: unlike current_context(), it does not attach a thread that has
  // never used oneTBB to an implicit arena.
  if (tbb::this_task_arena::current_thread_index() == tbb::task_arena::not_initialized) {
    return false;
  }
  // Null at the outermost level of a thread (no task is executing), where we block instead.
  return tbb::task::current_context() != nullptr;
#else
  return false;
#endif
}

}  // namespace

// Resumes suspended tasks whose deadline has passed. One per process, started by the first timed
// wait of a task and joined when the process exits.
class CooperativeTimer {
 public:
  static CooperativeTimer& instance() {
    static CooperativeTimer timer;
    return timer;
  }

  CooperativeTimer(const CooperativeTimer&) = delete;
  CooperativeTimer& operator=(const CooperativeTimer&) = delete;

  void add(CooperativeWaiter& waiter) {
    bool earliest = false;
    {
      std::lock_guard lock(mutex_);
      earliest = entries_.empty() || waiter.deadline < entries_.begin()->first;
      entries_.emplace(waiter.deadline, &waiter);
    }
    if (earliest) wake_.notify_one();
  }

  // Once this returns, the timer no longer touches `waiter`: an expiry in progress runs under
  // mutex_, so it has finished.
  void remove(CooperativeWaiter& waiter) {
    std::lock_guard lock(mutex_);
    entries_.erase({waiter.deadline, &waiter});
  }

 private:
  CooperativeTimer() : thread_([this] { run(); }) {}

  ~CooperativeTimer() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  void run() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      if (entries_.empty()) {
        wake_.wait(lock);
        continue;
      }
      const auto first = entries_.begin();
      // A copy: the entry may be removed while we wait, and wait_until reads its deadline again.
      const Clock::time_point earliest = first->first;
      if (Clock::now() < earliest) {
        wake_.wait_until(lock, earliest);
        continue;
      }
      CooperativeWaiter& waiter = *first->second;
      entries_.erase(first);
      // Under mutex_, so that the waiter cannot return (it calls remove() first) meanwhile.
      waiter.owner->expire(waiter);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::set<std::pair<Clock::time_point, CooperativeWaiter*>> entries_;  // guarded by mutex_
  bool stopping_ = false;                                               // guarded by mutex_
  std::thread thread_;  // last: it starts once everything above exists
};

}  // namespace detail

using detail::WaiterState;

CooperativeSemaphore::~CooperativeSemaphore() {
  CONVEYOR_DEBUG_CONTRACT(queue_.empty(),
                          "CooperativeSemaphore destroyed while somebody waits on it");
}

void CooperativeSemaphore::wait_for_grant() {
  [[maybe_unused]] const bool acquired = wait_in_queue(detail::no_deadline);
  CONVEYOR_DEBUG_CONTRACT(acquired, "CooperativeSemaphore: an untimed wait ended without a token");
}

bool CooperativeSemaphore::try_acquire_until_slow(std::chrono::steady_clock::time_point deadline) {
  // Acquire: pairs with the release fetch_add in release() when a token is taken here.
  if (count_.fetch_sub(1, std::memory_order_acquire) > 0) return true;
  return wait_in_queue(deadline);
}

bool CooperativeSemaphore::wait_in_queue(std::chrono::steady_clock::time_point deadline) {
  const bool in_task = detail::inside_suspendable_task();
  Waiter waiter(*this, in_task ? Waiter::Kind::task : Waiter::Kind::thread, deadline);
  if (in_task) {
    suspend_task(waiter);
  } else {
    block_thread(waiter);
  }
  // Acquire: pairs with the release compare-exchange that granted the token (see "Memory
  // ordering"); for a task, this is the edge that oneTBB's uninstrumented resume does not show.
  return waiter.load_state(std::memory_order_acquire) == WaiterState::granted;
}

bool CooperativeSemaphore::take_pending_grant_or_queue(Waiter& waiter) {
  if (grant_balance_ > 0) {
    --grant_balance_;
    waiter.try_resolve(WaiterState::granted);
    return true;
  }
  queue_.push_back(waiter);
  return false;
}

void CooperativeSemaphore::resolve_timeout(Waiter& waiter) {
  if (waiter.queued) queue_.remove(waiter);
  if (grant_balance_ > 0) {
    --grant_balance_;
    waiter.try_resolve(WaiterState::granted);
    return;
  }
  // While the count is negative, some waiter has no promised token yet: this one withdraws its
  // place. Acquire (on the load and on both outcomes of the compare-exchange) pairs with the
  // release fetch_add of a release whose promised token we may take below; the withdrawal itself
  // takes no token.
  std::int32_t count = count_.load(std::memory_order_acquire);
  while (count < 0) {
    if (count_.compare_exchange_weak(count, count + 1, std::memory_order_acquire,
                                     std::memory_order_acquire)) {
      waiter.try_resolve(WaiterState::cancelled);
      return;
    }
  }
  // The count is not negative, so releases have promised a token to every waiter, this one
  // included, and (as no pending grant is left) at least one of those releases has not yet
  // delivered. Take its token now; that release will skip one delivery (grant_balance_ < 0).
  --grant_balance_;
  waiter.try_resolve(WaiterState::granted);
}

void CooperativeSemaphore::hand_to_waiters(std::int32_t grants) {
  // Tasks are resumed after the mutex is released, in queue order.
  Waiter* first_to_resume = nullptr;
  Waiter* last_to_resume = nullptr;
  {
    std::lock_guard lock(mutex_);
    for (; grants > 0; --grants) {
      if (grant_balance_ < 0) {  // a timed-out waiter already took this one
        ++grant_balance_;
        continue;
      }
      Waiter* waiter = queue_.pop_front();
      if (waiter == nullptr) {  // its waiter has not queued yet: leave it pending
        ++grant_balance_;
        continue;
      }
      [[maybe_unused]] const bool granted = waiter->try_resolve(WaiterState::granted);
      CONVEYOR_DEBUG_CONTRACT(granted, "CooperativeSemaphore: a queued waiter was not waiting");
      if (waiter->kind == Waiter::Kind::thread) {
        // Under the mutex: the thread takes the mutex before it returns, so its node outlives this.
        detail::futex_wake(waiter->state, 1);
      } else {
        waiter->next = nullptr;
        if (last_to_resume != nullptr) {
          last_to_resume->next = waiter;
        } else {
          first_to_resume = waiter;
        }
        last_to_resume = waiter;
      }
    }
  }
  while (first_to_resume != nullptr) {
    // Read the link first: once resumed, the task may return and its node is gone.
    Waiter* const next = first_to_resume->next;
    tbb::task::resume(static_cast<tbb::task::suspend_point>(first_to_resume->suspend_point));
    first_to_resume = next;
  }
}

void CooperativeSemaphore::block_thread(Waiter& waiter) {
  {
    std::lock_guard lock(mutex_);
    if (take_pending_grant_or_queue(waiter)) return;
  }
  // A hand-off between running threads is over long before a futex sleep would be: spin first.
  // Relaxed: a hint; the loop below re-reads with acquire.
  thread_spin_.spin(
      [&] { return waiter.load_state(std::memory_order_relaxed) != WaiterState::waiting; });
  // A grant that lands before we sleep changes the word, and the futex returns at once.
  while (waiter.load_state(std::memory_order_acquire) == WaiterState::waiting) {
    if (waiter.deadline == detail::no_deadline) {
      detail::futex_wait(waiter.state, static_cast<std::int32_t>(WaiterState::waiting));
    } else if (!detail::futex_wait_until(waiter.state,
                                         static_cast<std::int32_t>(WaiterState::waiting),
                                         waiter.deadline) &&
               detail::Clock::now() >= waiter.deadline) {
      std::lock_guard lock(mutex_);
      if (waiter.load_state(std::memory_order_relaxed) == WaiterState::waiting) {
        resolve_timeout(waiter);
      }
      return;
    }
  }
  // A releaser wakes us under the mutex: once we have held it, nobody touches the node any more.
  std::lock_guard lock(mutex_);
}

void CooperativeSemaphore::suspend_task(Waiter& waiter) {
  {
    // A pending grant is taken without the cost of a suspension.
    std::lock_guard lock(mutex_);
    if (grant_balance_ > 0) {
      --grant_balance_;
      waiter.try_resolve(WaiterState::granted);
      return;
    }
  }
  const bool timed = waiter.deadline != detail::no_deadline;
  tbb::task::suspend([this, &waiter, timed](tbb::task::suspend_point point) {
    // Runs once the task is suspended. Registered with the timer before it is queued: an expiry
    // that comes first finds it unqueued and leaves it alone, and the deadline check below sees
    // that the deadline has passed.
    waiter.suspend_point = point;
    if (timed) detail::CooperativeTimer::instance().add(waiter);
    bool resume_now = false;
    {
      std::lock_guard lock(mutex_);
      if (timed && grant_balance_ <= 0 && detail::Clock::now() >= waiter.deadline) {
        resolve_timeout(waiter);
        resume_now = true;
      } else {
        resume_now = take_pending_grant_or_queue(waiter);
      }
    }
    // Once queued, the waiter may be resumed and return at any moment: touch nothing of it.
    if (resume_now) tbb::task::resume(point);
  });
  if (timed) detail::CooperativeTimer::instance().remove(waiter);
}

void CooperativeSemaphore::expire(Waiter& waiter) {
  {
    std::lock_guard lock(mutex_);
    // Not queued: already granted, or its suspend callback has not queued it yet (and will see
    // the deadline itself).
    if (!waiter.queued) return;
    resolve_timeout(waiter);
  }
  tbb::task::resume(static_cast<tbb::task::suspend_point>(waiter.suspend_point));
}

}  // namespace conveyor::sync
