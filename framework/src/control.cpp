#include "conveyor/framework/detail/control.hpp"

#include <mutex>
#include <utility>

namespace conveyor::detail {

void Control::fail(const std::exception_ptr& error) {
  bool first = false;
  {
    std::lock_guard lock(error_mutex_);
    if (!first_error_) {
      first_error_ = error;
      first = true;
    }
  }
  // A later failure leaves the cancelling to the first, which does it once its handler returns:
  // nothing is dropped before the handler has run.
  if (!first) return;
  if (on_failure_) {
    try {
      on_failure_(error);
    } catch (...) {  // NOLINT(bugprone-empty-catch): a handler cannot fail the pipeline twice
    }
  }
  raise(failed_bit);
  cancel();
}

void Control::cancel() {
  if (cancelled_.load(std::memory_order_relaxed)) return;
  // Before the flag: a worker that sees it, and drops what it holds, settles after the handlers.
  for (const auto& handler : on_cancel_) {
    try {
      handler();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a handler cannot fail a cancellation
    }
  }
  if (cancelled_.exchange(true, std::memory_order_seq_cst)) return;
  for (sync::Doorbell* bell : doorbells_)
    bell->ring_any();
}

void Control::wait_for_change(std::int32_t seen) noexcept {
  sync::detail::futex_wait(word_, seen);
}

void Control::wait_for_change_until(std::int32_t seen,
                                    std::chrono::steady_clock::time_point deadline) noexcept {
  sync::detail::futex_wait_until(word_, seen, deadline);
}

std::exception_ptr Control::first_error() const {
  std::lock_guard lock(error_mutex_);
  return first_error_;
}

void Control::raise(std::int32_t bit) noexcept {
  // acq_rel: a request is an event the supervisor acts on; the wake is a system call, which is
  // async-signal-safe.
  word_.fetch_or(bit, std::memory_order_acq_rel);
  sync::detail::futex_wake(word_, 1);
}

}  // namespace conveyor::detail
