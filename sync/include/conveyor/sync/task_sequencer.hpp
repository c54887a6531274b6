// TaskSequencer: runs asynchronous operations strictly one after another, in the order `run` was
// called (the fair task sequencer seed 003 contrasts with its unfair mutex).
//
//   asio::awaitable<Reply> send(TaskSequencer& seq, Request r) {
//     co_return co_await seq.run([&] { return post_request(r); });   // fn() -> awaitable<Reply>
//   }
//
// Contract:
// - `run(fn)` takes its place in the queue when it is called, on any thread, and returns an
//   asio::awaitable that, once awaited, waits until every operation queued before it has
//   finished, then awaits `fn()` and gives its result or rethrows its exception. One failing
//   operation does not stop those behind it. No two operations overlap; waiting suspends the
//   coroutine, never the thread, and it resumes through its own executor.
// - Cancellation: `run(fn, stop_token)`. If a stop is requested before the operation's turn, `fn`
//   is never called, the awaitable throws boost::system::system_error(operation_aborted), and the
//   operations behind it do not wait for it. A `run` whose awaitable is destroyed without being
//   awaited (or before its turn) leaves the queue the same way. (Boost 1.74, which Debian ships,
//   has no Asio cancellation slots; they came in 1.77.)
// - Destroying the sequencer while operations are queued is a contract violation (checked when
//   NDEBUG is not defined).
// Memory ordering: the queue changes only under one std::mutex, and a turn passes by a post to the
// next operation's executor after the previous one left, so each sees all its predecessors wrote.
// Protocol: docs/design/async-mutex.md#tasksequencer.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "conveyor/sync/detail/asio_coroutines.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>

namespace conveyor::sync {

class TaskSequencer {
  struct Entry;

 public:
  TaskSequencer() = default;
  ~TaskSequencer();
  TaskSequencer(const TaskSequencer&) = delete;
  TaskSequencer& operator=(const TaskSequencer&) = delete;

  template <class F>
  auto run(F fn, std::stop_token stop = {}) {
    using Result = typename std::invoke_result_t<F&>::value_type;
    return run_in_turn<Result>(Ticket(*this), std::move(fn), std::move(stop));
  }

  // For diagnostics and tests: how many operations are queued or running (may be stale at once).
  [[nodiscard]] std::size_t size() const;

 private:
  // How a waiting operation is resumed: posts its handler with the outcome.
  struct Waker {
    virtual ~Waker() = default;
    virtual void post(boost::system::error_code outcome) = 0;
  };

  template <class Handler>
  struct HandlerWaker final : Waker {
    using Executor = boost::asio::associated_executor_t<Handler>;
    explicit HandlerWaker(Handler h)
        : executor(boost::asio::get_associated_executor(h)),
          work(executor),
          handler(std::move(h)) {}
    void post(boost::system::error_code outcome) override {
      boost::asio::post(executor, [handler = std::move(handler), outcome]() mutable {
        std::move(handler)(outcome);
      });
    }
    Executor executor;
    boost::asio::executor_work_guard<Executor> work;
    Handler handler;
  };

  struct Entry {
    std::unique_ptr<Waker> waker;  // set while its coroutine waits for its turn
    bool started = false;
    bool cancelled = false;
    bool queued = true;
  };

  // An operation's place in the queue; leaving it (destroyed) lets the next one start.
  class Ticket {
   public:
    explicit Ticket(TaskSequencer& sequencer);
    Ticket(Ticket&& other) noexcept
        : sequencer_(std::exchange(other.sequencer_, nullptr)), entry_(std::move(other.entry_)) {}
    Ticket& operator=(Ticket&&) = delete;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket();

    // Completes at its turn, or with operation_aborted once cancelled.
    auto async_wait() {
      return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                         void(boost::system::error_code)>(
          [this](auto handler) {
            sequencer_->wait(entry_,
                             std::make_unique<HandlerWaker<decltype(handler)>>(std::move(handler)));
          },
          boost::asio::use_awaitable);
    }
    void cancel() { sequencer_->cancel(entry_); }

   private:
    TaskSequencer* sequencer_;
    std::shared_ptr<Entry> entry_;
  };

  struct Canceller {
    Ticket* ticket;
    void operator()() const { ticket->cancel(); }
  };

  // NOLINTBEGIN(bugprone-use-after-move): clang-tidy counts the coroutine frame's copy of
  // `queued` as a use after the move below.
  template <class Result, class F>
  static boost::asio::awaitable<Result> run_in_turn(Ticket queued, F fn, std::stop_token stop) {
    Ticket ticket = std::move(queued);  // a local: it leaves the queue before the caller resumes
    {
      std::optional<std::stop_callback<Canceller>> on_stop;
      if (stop.stop_possible()) on_stop.emplace(stop, Canceller{&ticket});
      // use_awaitable throws boost::system::system_error for an error code (operation_aborted).
      co_await ticket.async_wait();
    }
    if constexpr (std::is_void_v<Result>) {
      co_await fn();
    } else {
      co_return co_await fn();
    }
  }
  // NOLINTEND(bugprone-use-after-move)

  std::shared_ptr<Entry> enqueue();
  void wait(const std::shared_ptr<Entry>& entry, std::unique_ptr<Waker> waker);
  void cancel(const std::shared_ptr<Entry>& entry);
  void leave(const std::shared_ptr<Entry>& entry);
  // Under mutex_: starts the first entry still wanted, if it waits; returns whom to wake.
  std::unique_ptr<Waker> next_turn();

  mutable std::mutex mutex_;
  std::deque<std::shared_ptr<Entry>> queue_;
};

}  // namespace conveyor::sync
