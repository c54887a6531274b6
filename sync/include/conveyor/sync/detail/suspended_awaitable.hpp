// SuspendedAwaitable: an asio::awaitable coroutine taken off the thread that ran it while it
// waits, to be resumed later through its executor. It lets an operation that an awaitable
// `co_await`s decide, once the coroutine has suspended, whether it goes on at once (no frame, no
// post) or waits:
//
//   struct Op {   // co_await Op{...} inside an asio::awaitable<T>
//     AwaitableThread* operator()(AwaitableFrame* frame) {
//       if (ready()) return nullptr;               // the coroutine goes on at once, on this thread
//       park(SuspendedAwaitable(frame));           // it waits; resume_through_executor() later
//       return nullptr;
//     }
//   };
//
// Contract:
// - The constructor may be called only inside such an `operator()(frame)`, at most once per call.
//   Without it, the coroutine resumes as soon as the operator returns, on the same thread.
// - `resume()` runs the coroutine on until it next suspends or ends; call it on the coroutine's
//   executor, from storage the coroutine does not own. `resume_through_executor()` posts that;
//   `continue_through_executor()` defers it, as the continuation of the handler that calls it
//   (on an io_context thread, it is queued on that thread without waking another).
// - Destroying one that was never resumed destroys the coroutine's frames through its executor,
//   as an Asio operation's abandoned handler does.
// - The co_spawn that started the coroutine keeps its executor's work count up while it waits.
//
// This is Boost 1.74's protocol for awaitable operations (`await_transform` of a callable taking
// the frame; the one use_awaitable is built on), used for the awaitable executor only.
#pragma once

#include "conveyor/sync/detail/asio_coroutines.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/defer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/version.hpp>

#if BOOST_VERSION < 107400 || BOOST_VERSION >= 107700
#error "suspended_awaitable.hpp is written against the awaitable protocol of Boost 1.74 to 1.76"
#endif

namespace conveyor::sync::detail {

using AwaitableExecutor = boost::asio::any_io_executor;
using AwaitableFrame = boost::asio::detail::awaitable_frame_base<AwaitableExecutor>;
using AwaitableThread = boost::asio::detail::awaitable_thread<AwaitableExecutor>;

class SuspendedAwaitable : private AwaitableThread {
 public:
  explicit SuspendedAwaitable(AwaitableFrame* frame)
      : AwaitableThread(std::move(*frame->detach_thread())) {}
  SuspendedAwaitable(SuspendedAwaitable&& other) noexcept = default;
  SuspendedAwaitable& operator=(SuspendedAwaitable&&) = delete;
  SuspendedAwaitable(const SuspendedAwaitable&) = delete;
  SuspendedAwaitable& operator=(const SuspendedAwaitable&) = delete;
  ~SuspendedAwaitable() = default;

  using AwaitableThread::get_executor;

  void resume() {
    top_of_stack_->attach_thread(this);
    pump();
  }

  void resume_through_executor() && {
    AwaitableExecutor executor = get_executor();
    boost::asio::post(executor, [self = std::move(*this)]() mutable { self.resume(); });
  }

  void continue_through_executor() && {
    AwaitableExecutor executor = get_executor();
    auto handler = [self = std::move(*this)]() mutable { self.resume(); };
    // An io_context's own executor, when it is one, spares the polymorphic wrapper's conversions.
    if (const auto* io = executor.target<boost::asio::io_context::executor_type>()) {
      boost::asio::defer(*io, std::move(handler));
    } else {
      boost::asio::defer(executor, std::move(handler));
    }
  }
};

}  // namespace conveyor::sync::detail
