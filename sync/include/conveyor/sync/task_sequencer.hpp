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
//   coroutine, never the thread, and it resumes through its own executor (an operation whose
//   turn has come when it is awaited goes on at once). A queued operation allocates nothing
//   beyond its coroutine frames, except when the queue outgrows its table.
// - Cancellation: `run(fn, stop_token)`. If a stop is requested before the operation's turn, `fn`
//   is never called, the awaitable throws boost::system::system_error(operation_aborted), and the
//   operations behind it do not wait for it. The awaitable is lazy: the token is looked at once it
//   is awaited, so a stopped run that is kept unawaited holds up those behind it until it is
//   awaited or destroyed. A `run` whose awaitable is destroyed without being awaited (or before
//   its turn) leaves the queue. (Boost 1.74, which Debian ships, has no Asio cancellation slots;
//   they came in 1.77.)
// - Destroying the sequencer while operations are queued (awaited or not) is a contract violation,
//   checked in every build. Filing a waiting operation, or marking one cancelled or abandoned,
//   may grow the table; that happens inside a suspension, a stop callback or a destructor, none
//   of which can throw, so running out of memory there terminates.
// Memory ordering: run() takes its number with one relaxed RMW, whose modification order is the
// queue's order. Turns change only under one std::mutex, and a waiting operation is resumed by a
// post (or defer) after the previous one left, so each sees all its predecessors wrote.
// Protocol: docs/design/async-mutex.md#tasksequencer.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>
#include <vector>

#include "conveyor/sync/detail/asio_coroutines.hpp"
#include "conveyor/sync/detail/suspended_awaitable.hpp"

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

namespace conveyor::sync {

class TaskSequencer {
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
  class TurnWait;

  // An operation's place in the queue, a number; leaving it (destroyed) lets the next one start.
  // The fields other than the number change under the sequencer's mutex.
  class Ticket {
   public:
    explicit Ticket(TaskSequencer& sequencer) noexcept
        : sequencer_(&sequencer),
          number_(sequencer.issued_.fetch_add(1, std::memory_order_relaxed)) {}
    // Moved only before it is awaited, while no other thread knows it.
    Ticket(Ticket&& other) noexcept
        : sequencer_(std::exchange(other.sequencer_, nullptr)), number_(other.number_) {}
    Ticket& operator=(Ticket&&) = delete;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() {
      if (sequencer_ != nullptr) sequencer_->leave(*this);
    }

    // co_await ticket.turn(): once it is this operation's turn (throws operation_aborted once
    // cancelled instead).
    [[nodiscard]] TurnWait turn() noexcept;
    void cancel() { sequencer_->cancel(*this); }

   private:
    friend class TaskSequencer;
    TaskSequencer* sequencer_;
    const std::uint64_t number_;
    bool started_ = false;
    bool left_ = false;  // cancelled, or left after it ran
    TurnWait* waiting_ = nullptr;
  };

  struct Canceller {
    Ticket* ticket;
    void operator()() const { ticket->cancel(); }
  };

  template <class Result, class F>
  static boost::asio::awaitable<Result> run_in_turn(Ticket queued, F fn, std::stop_token stop);

  // Goes on at once if it is the ticket's turn or it was cancelled; otherwise takes the coroutine
  // off its thread and files `waiter` under its number.
  void wait(Ticket& ticket, TurnWait& waiter, detail::AwaitableFrame* frame);
  void cancel(Ticket& ticket);
  void leave(Ticket& ticket);
  // Under mutex_: the turn passes to the next number that has not left; returns its waiter if it
  // waits (started), or nullptr.
  TurnWait* next_turn();
  // Under mutex_: the slot of a number in [serving_, serving_ + slots_.size()), growing the table
  // first if the number lies beyond it.
  struct Slot {
    TurnWait* waiter = nullptr;  // the operation that waits under the number
    bool gone = false;           // it left before its turn
  };
  Slot& slot(std::uint64_t number);

  std::atomic<std::uint64_t> issued_{0};  // numbers handed out
  mutable std::mutex mutex_;
  std::uint64_t serving_ = 0;  // the number whose turn it is
  // By number modulo the table's size, a power of two that grows with the queue, from the
  // number served to the highest filed or gone, and shrinks back once the queue is empty.
  static constexpr std::size_t initial_slots = 64;
  std::vector<Slot> slots_ = std::vector<Slot>(initial_slots);
  std::size_t gone_ = 0;  // slots marked gone
};

// The co_await of a turn (suspended_awaitable.hpp): lives in the awaiting frame while the
// coroutine waits, filed in the sequencer's table.
class TaskSequencer::TurnWait {
 public:
  explicit TurnWait(Ticket& ticket) noexcept : ticket_(ticket) {}
  TurnWait(TurnWait&& other) noexcept : ticket_(other.ticket_) {}
  TurnWait& operator=(TurnWait&&) = delete;
  TurnWait(const TurnWait&) = delete;
  TurnWait& operator=(const TurnWait&) = delete;
  ~TurnWait() = default;

  detail::AwaitableThread* operator()(detail::AwaitableFrame* frame) {
    ticket_.sequencer_->wait(ticket_, *this, frame);
    return nullptr;
  }

 private:
  friend class TaskSequencer;

  // Posts the coroutine's resumption (cancelled), or defers it as the continuation of the
  // operation that just left (its turn); it runs from the handler's storage.
  void resume_through_executor(bool turn) {
    detail::SuspendedAwaitable suspended = std::move(*suspended_);
    suspended_.reset();
    if (turn) {
      std::move(suspended).continue_through_executor();
    } else {
      std::move(suspended).resume_through_executor();
    }
  }

  Ticket& ticket_;
  std::optional<detail::SuspendedAwaitable> suspended_;  // while filed
};

inline TaskSequencer::TurnWait TaskSequencer::Ticket::turn() noexcept {
  return TurnWait(*this);
}

// NOLINTBEGIN(bugprone-use-after-move): clang-tidy counts the coroutine frame's copy of `queued`
// as a use after the move below.
template <class Result, class F>
boost::asio::awaitable<Result> TaskSequencer::run_in_turn(Ticket queued, F fn,
                                                          std::stop_token stop) {
  Ticket ticket = std::move(queued);  // a local: it leaves the queue before the caller resumes
  {
    std::optional<std::stop_callback<Canceller>> on_stop;
    if (stop.stop_possible()) on_stop.emplace(stop, Canceller{&ticket});
    co_await ticket.turn();
  }
  if (!ticket.started_) throw boost::system::system_error(boost::asio::error::operation_aborted);
  if constexpr (std::is_void_v<Result>) {
    co_await fn();
  } else {
    co_return co_await fn();
  }
}
// NOLINTEND(bugprone-use-after-move)

}  // namespace conveyor::sync
