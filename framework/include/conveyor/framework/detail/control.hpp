// Control: a running pipeline's shared state: stop and abort requests, cancellation, the first
// error, and the count of workers still running.
//
// Contract:
// - `request_stop()` and `request_abort()` may be called from any thread and from a signal
//   handler: each is one atomic read-modify-write on a futex word and one futex wake. The
//   supervisor (the thread in Pipeline::wait()) sleeps on that word and acts on the request.
// - `cancel()` ends every wait at once: it is called by the supervisor for an abort, and by a
//   worker whose stage threw. `cancelled()` and `stop_requested()` are cheap polls for workers;
//   an abort request alone is not a stop: workers carry on until the supervisor cancels.
//   The first call runs the cancel handlers first, on its thread, before any worker can see the
//   cancellation (a later one may run them again while the first is still at it).
// - `fail()` keeps the first exception, and calls the failure handler with it on the failing
//   thread before it cancels; later ones are counted by their stages but dropped, and leave the
//   cancelling to the first (a second failure while the handler runs cancels nothing).
//
// Memory ordering:
// - `cancelled_` is stored seq_cst before the doorbells are rung (`ring_any` runs a full fence
//   first); a worker about to sleep announces itself and runs a full fence before it polls
//   `cancelled_` (sync/doorbell.hpp), so either it sees the flag or the ring sees it.
// - The request bits and `running_workers_` are read-modify-writes on one word each (acq_rel):
//   the last worker's decrement, and the supervisor's acquire load that sees it, order every
//   worker's writes before the supervisor's return. The first error is guarded by a mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

#include "conveyor/sync/detail/futex.hpp"
#include "conveyor/sync/doorbell.hpp"

namespace conveyor::detail {

class Control {
 public:
  static constexpr std::int32_t stop_bit = 1;
  static constexpr std::int32_t abort_bit = 2;
  static constexpr std::int32_t failed_bit = 4;
  static constexpr std::int32_t finished_bit = 8;

  // --- any thread, signal handlers included ---

  void request_stop() noexcept { raise(stop_bit); }
  void request_abort() noexcept { raise(abort_bit); }

  // --- workers ---

  [[nodiscard]] bool cancelled() const noexcept {
    return cancelled_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] bool stop_requested() const noexcept {
    return (word_.load(std::memory_order_relaxed) & stop_bit) != 0;
  }

  // Records `error` if it is the first (and calls the failure handler with it), and cancels the
  // pipeline.
  void fail(const std::exception_ptr& error);

  // Ends every wait: workers return as soon as they look.
  void cancel();

  // Before any worker starts.
  void expect_workers(std::int32_t count) noexcept {
    running_workers_.store(count, std::memory_order_relaxed);
    if (count == 0) raise(finished_bit);
  }
  void worker_finished() noexcept {
    // acq_rel: the last decrement carries every worker's writes to the supervisor.
    if (running_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) raise(finished_bit);
  }

  // --- supervisor ---

  void set_doorbells(std::vector<sync::Doorbell*> doorbells) { doorbells_ = std::move(doorbells); }
  // Before any worker starts: PipelineOptions::on_failure.
  void set_failure_handler(std::function<void(const std::exception_ptr&)> handler) {
    on_failure_ = std::move(handler);
  }
  // Before any worker starts: what cancel() runs first (Pipeline::fail_on_cancel).
  void set_cancel_handlers(std::vector<std::function<void()>> handlers) {
    on_cancel_ = std::move(handlers);
  }

  [[nodiscard]] std::int32_t requests() const noexcept {
    return word_.load(std::memory_order_acquire);
  }
  // Sleeps until the word differs from `seen` (or spuriously).
  void wait_for_change(std::int32_t seen) noexcept;
  // The same, but not past `deadline`.
  void wait_for_change_until(std::int32_t seen,
                             std::chrono::steady_clock::time_point deadline) noexcept;

  [[nodiscard]] std::exception_ptr first_error() const;

 private:
  void raise(std::int32_t bit) noexcept;

  sync::detail::FutexWord word_{0};
  std::atomic<bool> cancelled_{false};
  std::atomic<std::int32_t> running_workers_{0};
  std::vector<sync::Doorbell*> doorbells_;                     // set before any worker starts
  std::function<void(const std::exception_ptr&)> on_failure_;  // likewise
  std::vector<std::function<void()>> on_cancel_;               // likewise
  mutable std::mutex error_mutex_;
  std::exception_ptr first_error_;
};

}  // namespace conveyor::detail
