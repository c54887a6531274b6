// AsyncMutex: a mutex for coroutines (seed 003's unfair async mutex). Waiting suspends the
// coroutine, never the thread, so the region may hold co_awaits that need the thread.
//
//   auto guard = co_await m.lock();  // in an asio::awaitable; unlocks when `guard` goes
//
// Contract:
// - `lock()` (asio::awaitable), `async_lock(executor, token)` (any Asio completion token) and
//   `lock_on(executor)` (any coroutine) give a move-only Guard once held; `try_lock()` only if
//   free now. Any thread may call any of them. A waiter counts as work of its executor.
// - No thread affinity, no reentrancy: a Guard may be released on any thread, also by a throw.
// - Unfair: unlock() wakes the longest waiter, which then competes with arrivals (as the seed's
//   auto-reset event). It resumes through its executor, never inside unlock(), so a long chain of
//   hand-overs grows no stack.
// - A free mutex is taken with one atomic operation and no allocation. A lock_on() waiter is
//   linked through its awaiter; an async_lock() one holds its handler in a node from the
//   handler's allocator.
// - Destroying the mutex while held or waited for is a contract violation (checked without NDEBUG).
//
// Memory ordering: taking the mutex is an acquire RMW on `state_` and unlock() a release RMW, so
// a holder sees all its predecessor wrote. No wake-up is lost: every change of `state_` is an RMW
// on that one atomic, and the `waiting` bit changes only under the list mutex, so an unlock that
// a waiter's failed try precedes in the modification order sees the bit
// (docs/design/async-mutex.md).
#pragma once

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "conveyor/sync/detail/asio_coroutines.hpp"

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>

namespace conveyor::sync {

class AsyncMutex {
 public:
  // Holds the mutex until destroyed, moved from into nothing, or unlock()ed.
  class [[nodiscard]] Guard {
   public:
    Guard(Guard&& other) noexcept : mutex_(std::exchange(other.mutex_, nullptr)) {}
    Guard& operator=(Guard&& other) noexcept {
      if (this != &other) {
        unlock();
        mutex_ = std::exchange(other.mutex_, nullptr);
      }
      return *this;
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() { unlock(); }

    void unlock() noexcept {
      if (mutex_ != nullptr) std::exchange(mutex_, nullptr)->unlock();
    }
    [[nodiscard]] bool owns_lock() const noexcept { return mutex_ != nullptr; }

   private:
    friend class AsyncMutex;
    explicit Guard(AsyncMutex* mutex) noexcept : mutex_(mutex) {}
    AsyncMutex* mutex_;
  };

  AsyncMutex() = default;
  ~AsyncMutex();
  AsyncMutex(const AsyncMutex&) = delete;
  AsyncMutex& operator=(const AsyncMutex&) = delete;

  [[nodiscard]] std::optional<Guard> try_lock() noexcept {
    if (!try_acquire()) return std::nullopt;
    return Guard(this);
  }

  // co_await m.lock_on(executor) in any coroutine: resumes through `executor` once held.
  template <class Executor>
  class LockAwaiter;
  template <class Executor>
  [[nodiscard]] LockAwaiter<Executor> lock_on(Executor executor) {
    return LockAwaiter<Executor>(*this, std::move(executor));
  }

  // An Asio asynchronous operation with the signature void(Guard): completes through the handler's
  // associated executor (`executor` if it has none), never inside this call.
  template <class Executor, class Token>
  auto async_lock(const Executor& executor, Token&& token);

  // co_await m.lock() in an asio::awaitable. Boost 1.74's awaitable may co_await only Asio
  // awaitables and operations given use_awaitable, so this is async_lock with use_awaitable behind
  // a try_lock().
  boost::asio::awaitable<Guard> lock();

  // For diagnostics and tests: a snapshot that may be stale at once.
  [[nodiscard]] bool locked() const noexcept {
    return (state_.load(std::memory_order_relaxed) & held) != 0;
  }

 private:
  // A coroutine or handler waiting for the mutex, linked through `next`. `wake` is called once
  // it reaches the head of the list and the mutex was released; it must post the retry.
  struct Waiter {
    Waiter* next = nullptr;
    void (*wake)(Waiter*) = nullptr;
  };

  template <class Handler, class Executor>
  struct HandlerWaiter;

  static constexpr std::uint32_t held = 1;
  static constexpr std::uint32_t waiting = 2;

  boost::asio::awaitable<Guard> lock_slowly();
  bool try_acquire() noexcept {
    if ((state_.load(std::memory_order_relaxed) & held) != 0) return false;
    return (state_.fetch_or(held, std::memory_order_acquire) & held) == 0;
  }
  // Takes the mutex (true), or links `waiter` to be woken once it is released (false).
  bool acquire_or_wait(Waiter& waiter);
  void unlock() noexcept;

  std::atomic<std::uint32_t> state_{0};
  std::mutex list_mutex_;  // guards the list and the `waiting` bit's changes
  Waiter* head_ = nullptr;
  Waiter* tail_ = nullptr;
};

template <class Executor>
class AsyncMutex::LockAwaiter : private AsyncMutex::Waiter {
 public:
  LockAwaiter(AsyncMutex& mutex, Executor executor)
      : mutex_(mutex), executor_(std::move(executor)) {
    wake = &LockAwaiter::on_wake;
  }

  bool await_ready() noexcept { return mutex_.try_acquire(); }
  bool await_suspend(std::coroutine_handle<> handle) {
    handle_ = handle;
    // Before linking: the executor's context keeps running while this waits, as for any pending
    // Asio operation (a wake may resume it on another thread as soon as it is linked).
    work_.emplace(executor_);
    if (!mutex_.acquire_or_wait(*this)) return true;
    work_.reset();
    return false;
  }
  Guard await_resume() noexcept { return Guard(&mutex_); }

 private:
  static void on_wake(Waiter* waiter) {
    auto* self = static_cast<LockAwaiter*>(waiter);
    boost::asio::post(self->executor_, [self] {
      if (self->mutex_.acquire_or_wait(*self)) {
        self->work_.reset();
        self->handle_.resume();
      }
    });
  }

  AsyncMutex& mutex_;
  Executor executor_;
  std::optional<boost::asio::executor_work_guard<Executor>> work_;
  std::coroutine_handle<> handle_;
};

template <class Handler, class Executor>
struct AsyncMutex::HandlerWaiter : AsyncMutex::Waiter {
  using Allocator = typename std::allocator_traits<
      boost::asio::associated_allocator_t<Handler>>::template rebind_alloc<HandlerWaiter>;

  HandlerWaiter(AsyncMutex& owner, Handler completion, const Executor& fallback)
      : mutex(owner),
        executor(boost::asio::get_associated_executor(completion, fallback)),
        work(executor),
        handler(std::move(completion)) {
    wake = &HandlerWaiter::on_wake;
  }

  // Completes the operation with the mutex held: frees the node first, then calls the handler.
  void complete() {
    Handler moved = std::move(handler);
    Allocator allocator(boost::asio::get_associated_allocator(moved));
    AsyncMutex& held_mutex = mutex;
    std::allocator_traits<Allocator>::destroy(allocator, this);
    std::allocator_traits<Allocator>::deallocate(allocator, this, 1);
    std::move(moved)(Guard(&held_mutex));
  }

  static void on_wake(Waiter* waiter) {
    auto* self = static_cast<HandlerWaiter*>(waiter);
    boost::asio::post(self->executor, [self] {
      if (self->mutex.acquire_or_wait(*self)) self->complete();
    });
  }

  AsyncMutex& mutex;
  boost::asio::associated_executor_t<Handler, Executor> executor;
  boost::asio::executor_work_guard<boost::asio::associated_executor_t<Handler, Executor>> work;
  Handler handler;
};

template <class Executor, class Token>
auto AsyncMutex::async_lock(const Executor& executor, Token&& token) {
  return boost::asio::async_initiate<Token, void(Guard)>(
      // The executor by value: use_awaitable runs this only when the operation is awaited.
      [this, executor](auto handler) {
        using Handler = decltype(handler);
        using Node = HandlerWaiter<Handler, Executor>;
        typename Node::Allocator allocator(boost::asio::get_associated_allocator(handler));
        Node* node = std::allocator_traits<typename Node::Allocator>::allocate(allocator, 1);
        try {
          std::allocator_traits<typename Node::Allocator>::construct(allocator, node, *this,
                                                                     std::move(handler), executor);
        } catch (...) {
          std::allocator_traits<typename Node::Allocator>::deallocate(allocator, node, 1);
          throw;
        }
        // Held at once: still completed through the executor, never inside this call.
        if (acquire_or_wait(*node)) {
          boost::asio::post(node->executor, [node] { node->complete(); });
        }
      },
      token);
}

// The free mutex's path keeps its frame small: the waiting path's state is in a frame of its own.
inline boost::asio::awaitable<AsyncMutex::Guard> AsyncMutex::lock() {
  if (try_acquire()) co_return Guard(this);
  co_return co_await lock_slowly();
}

inline boost::asio::awaitable<AsyncMutex::Guard> AsyncMutex::lock_slowly() {
  co_return co_await async_lock(co_await boost::asio::this_coro::executor,
                                boost::asio::use_awaitable);
}

}  // namespace conveyor::sync
