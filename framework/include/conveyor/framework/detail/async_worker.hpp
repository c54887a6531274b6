// The worker's side of an asynchronous stage: it launches a coroutine per item, at most `limit` at
// once, and takes their results back, through a Completions list, on its own thread.
//
// - Completions<R>: what the coroutines of one worker have finished. A coroutine adds its result
//   on an I/O thread and rings the worker's doorbell (WaitReason::items).
// - AsyncWorker<In, R>: wraps the worker's InPort with the same interface (try_pop, pop,
//   recycle), so that the usual consume loops (worker_loop.hpp) drive it. Waiting for input also
//   ends when a result comes back, and results are handed to `deliver` between parcels, so an
//   idle input never holds a finished result back. `launch` waits for a free slot the same way.
//
// Contract: `AsyncWorker` is used by its worker only. A result is delivered in launch order when
// asked (a serial_in_order stage, which numbers what it emits), otherwise as it comes. A result
// holding an exception is rethrown from the call that takes it (the worker's failure counts it);
// every other failed result is counted in the stage's `errors` once: by the worker as it leaves
// (`AsyncWorker`'s destructor, for those it took and those still listed), or, once it has left,
// by the coroutine that adds it.
//
// Memory ordering: a result is published under the list's mutex; `count_` is raised (release)
// under it, and the doorbell's ring (a full fence, then the waiter's announcement) pairs with the
// worker's announce-then-check (sync/doorbell.hpp), whose check loads `count_` with acquire.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/in_port.hpp"
#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/framework/detail/worker_context.hpp"
#include "conveyor/framework/detail/worker_counters.hpp"
#include "conveyor/sync/detail/ticks.hpp"
#include "conveyor/sync/doorbell.hpp"

namespace conveyor::detail {

template <class R>
struct AsyncResult {
  std::uint64_t launch = 0;  // the worker's launch number
  Tag tag;
  std::optional<R> value;  // empty: filtered out (or failed)
  std::exception_ptr error;
  std::uint64_t started = 0;  // ticks, for the item-duration histogram
  std::uint64_t ended = 0;
};

template <class R>
class Completions {
 public:
  Completions(Doorbell& worker, SharedCounter& errors) noexcept
      : worker_(worker), errors_(errors) {}

  // A coroutine's last step, on an I/O thread. Once the worker has left, a failed result is
  // counted and every result dropped.
  void add(AsyncResult<R>&& result) {
    {
      std::lock_guard lock(mutex_);
      if (abandoned_) {
        if (result.error) errors_.add(1);
        return;
      }
      results_.push_back(std::move(result));
      // Release: the result, for the worker's acquire load in any().
      count_.store(results_.size(), std::memory_order_release);
    }
    worker_.ring(WaitReason::items);
  }

  // The worker leaves: the failures among the results it did not take are counted, and so are
  // those added from now on.
  void abandon() noexcept {
    std::lock_guard lock(mutex_);
    abandoned_ = true;
    for (const AsyncResult<R>& result : results_)
      if (result.error) errors_.add(1);
    results_.clear();
    // Relaxed: nothing is published; the worker does not read it again.
    count_.store(0, std::memory_order_relaxed);
  }

  [[nodiscard]] bool any() const noexcept { return count_.load(std::memory_order_acquire) != 0; }

  // Moves every result into `into` (emptied first).
  void take(std::vector<AsyncResult<R>>& into) {
    into.clear();
    std::lock_guard lock(mutex_);
    into.swap(results_);
    // Relaxed: only the worker reads it after this, and the mutex orders later adds.
    count_.store(0, std::memory_order_relaxed);
  }

 private:
  Doorbell& worker_;
  SharedCounter& errors_;
  std::mutex mutex_;
  std::vector<AsyncResult<R>> results_;  // guarded by mutex_
  bool abandoned_ = false;               // guarded by mutex_
  std::atomic<std::size_t> count_{0};
};

template <class In, class R, class Deliver, class BeforeSleep>
class AsyncWorker {
 public:
  using item_type = In;

  AsyncWorker(WorkerContext& worker, InPort<In>& in, Completions<R>& done, std::size_t limit,
              bool launch_order, Deliver deliver, BeforeSleep before_sleep)
      : worker_(worker),
        in_(in),
        done_(done),
        limit_(limit),
        launch_order_(launch_order),
        deliver_(std::move(deliver)),
        before_sleep_(std::move(before_sleep)),
        waiting_(launch_order ? limit : 0) {}
  // Counts the failures that a throw (this worker's failure, or `deliver`'s) left untaken in the
  // batch being collected, then abandons the list.
  ~AsyncWorker() {
    for (const AsyncResult<R>& result : taken_)
      if (result.error) worker_.counters().errors.add(1);
    done_.abandon();
  }
  AsyncWorker(const AsyncWorker&) = delete;
  AsyncWorker& operator=(const AsyncWorker&) = delete;

  // --- the InPort interface, for consume_unordered and consume_in_order ---

  std::optional<Parcel<In>> try_pop() {
    collect();
    return in_.try_pop();
  }

  template <class Ignored>
  std::optional<Parcel<In>> pop(Ignored&& /*before_sleep: the worker's own is used*/) {
    for (;;) {
      collect();
      if (auto parcel = in_.try_pop()) return parcel;
      if (in_.ended() || worker_.cancelled()) return std::nullopt;
      if (!sleep([this] { return done_.any() || in_.has_input(); })) return std::nullopt;
    }
  }

  void recycle(Batch<In>&& batch) { in_.recycle(std::move(batch)); }
  void recycle(Batch<In>&& batch, std::size_t lane) { in_.recycle(std::move(batch), lane); }
  [[nodiscard]] std::size_t last_lane() const noexcept { return in_.last_lane(); }

  // --- launching ---

  // Waits for a free slot, then calls `spawn(launch_number)`, which starts the coroutine. False
  // (nothing launched) if the pipeline was cancelled first.
  template <class Spawn>
  bool launch(Spawn&& spawn) {
    while (in_flight_ >= limit_) {
      collect();
      if (in_flight_ < limit_) break;
      if (!sleep([this] { return done_.any(); })) return false;
    }
    ++in_flight_;
    spawn(launched_++);
    return true;
  }

  // Waits until every launched coroutine has finished and its result is delivered. False if the
  // pipeline was cancelled first.
  bool drain() {
    for (;;) {
      collect();
      if (in_flight_ == 0) return true;
      if (!sleep([this] { return done_.any(); })) return false;
    }
  }

 private:
  template <class Ready>
  bool sleep(Ready&& ready) {
    return worker_.wait(WaitReason::items, ready, before_sleep_,
                        worker_.counters().blocked_pop_ticks);
  }

  // Delivers what has come back: as it comes, or in launch order.
  void collect() {
    if (!done_.any()) return;
    done_.take(taken_);
    for (AsyncResult<R>& result : taken_) {
      if (result.error) {
        in_flight_ = 0;  // what is still out is abandoned: the pipeline fails
        // Taken out, so that the destructor counts only the failures behind it.
        std::rethrow_exception(std::exchange(result.error, nullptr));
      }
      worker_.counters().record_items(result.ended - result.started, 1);
      if (!launch_order_) {
        --in_flight_;
        deliver_(std::move(result));
        continue;
      }
      waiting_[result.launch % limit_].emplace(std::move(result));
    }
    if (!launch_order_) return;
    for (;;) {
      std::optional<AsyncResult<R>>& next = waiting_[delivered_ % limit_];
      if (!next) return;
      AsyncResult<R> result = std::move(*next);
      next.reset();
      ++delivered_;
      --in_flight_;
      deliver_(std::move(result));
    }
  }

  WorkerContext& worker_;
  InPort<In>& in_;
  Completions<R>& done_;
  const std::size_t limit_;
  const bool launch_order_;
  Deliver deliver_;
  BeforeSleep before_sleep_;
  std::vector<AsyncResult<R>> taken_;
  // launch_order: results that came back before an earlier one, by launch number modulo limit.
  std::vector<std::optional<AsyncResult<R>>> waiting_;
  std::uint64_t launched_ = 0;
  std::uint64_t delivered_ = 0;
  std::size_t in_flight_ = 0;
};

}  // namespace conveyor::detail
