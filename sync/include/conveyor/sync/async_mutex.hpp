// AsyncMutex: a mutex for coroutines (seed 003's unfair async mutex). Waiting suspends the
// coroutine, never the thread, so the region may hold co_awaits that need the thread.
//
//   auto guard = co_await m.lock();  // in an asio::awaitable; unlocks when `guard` goes
//   AsyncMutex::Guard guard;         // the same without the call's coroutine frame
//   co_await m.lock(guard);
//
// Contract:
// - `lock()` and `lock(guard)` (asio::awaitable), `async_lock(executor, token)` (any Asio
//   completion token) and `lock_on(executor)` (any coroutine) give a move-only Guard once held;
//   `try_lock()` only if free now. Any thread may call any of them. A waiter counts as work of its
//   executor. `lock(guard)` needs an empty guard, and fills it.
// - No thread affinity, no reentrancy: a Guard may be released on any thread, also by a throw.
// - Unfair: unlock() wakes the longest waiter, which then competes with arrivals (as the seed's
//   auto-reset event). It resumes through its executor, never inside unlock(), so a long chain of
//   hand-overs grows no stack.
// - A free mutex is taken with one atomic operation and no allocation. A lock_on() or lock(guard)
//   waiter is linked through its awaiter; an async_lock() one holds its handler in a node from the
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
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/detail/suspended_awaitable.hpp"

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>

namespace conveyor::sync {

class AsyncMutex {
 public:
  // Holds the mutex until destroyed, moved from into nothing, or unlock()ed.
  class [[nodiscard]] Guard {
   public:
    Guard() noexcept = default;  // holds nothing
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
    AsyncMutex* mutex_ = nullptr;
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

  // co_await m.lock(guard) in an asio::awaitable: fills `guard` once held. A free mutex costs one
  // atomic operation and one suspension that resumes at once, with no frame and no post.
  class LockInto;
  [[nodiscard]] LockInto lock(Guard& guard) noexcept;

  // co_await m.lock() in an asio::awaitable: lock(guard) inside a coroutine of its own, whose
  // frame is most of what a free mutex costs this way.
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

  // Goes with a woken waiter's posted retry. Only that waiter would wake the next one, so if its
  // executor's context destroys the retry unrun, this passes the wake-up on.
  class WakePasser {
   public:
    explicit WakePasser(AsyncMutex& mutex) noexcept : mutex_(&mutex) {}
    WakePasser(WakePasser&& other) noexcept : mutex_(std::exchange(other.mutex_, nullptr)) {}
    WakePasser& operator=(WakePasser&&) = delete;
    WakePasser(const WakePasser&) = delete;
    WakePasser& operator=(const WakePasser&) = delete;
    ~WakePasser() {
      if (mutex_ != nullptr) mutex_->pass_wake();
    }
    void disarm() noexcept { mutex_ = nullptr; }

   private:
    AsyncMutex* mutex_;
  };

  static constexpr std::uint32_t held = 1;
  static constexpr std::uint32_t waiting = 2;

  bool try_acquire() noexcept {
    if ((state_.load(std::memory_order_relaxed) & held) != 0) return false;
    return (state_.fetch_or(held, std::memory_order_acquire) & held) == 0;
  }
  // Takes the mutex (true), or links `waiter` to be woken once it is released (false).
  bool acquire_or_wait(Waiter& waiter);
  void unlock() noexcept {
    // Release: the next holder's acquire RMW sees everything this holder wrote.
    const std::uint32_t before = state_.fetch_and(~held, std::memory_order_release);
    CONVEYOR_CONTRACT((before & held) != 0, "AsyncMutex unlocked while not held");
    if ((before & waiting) != 0) wake_next();
  }
  // unlock() found the `waiting` bit: wakes the head of the list, if any.
  void wake_next() noexcept;
  // A woken waiter dropped out: the next one is woken by this unlock, or by the holder's.
  void pass_wake() noexcept {
    if (try_acquire()) unlock();
  }

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
    boost::asio::post(self->executor_, [self, passer = WakePasser(self->mutex_)]() mutable {
      passer.disarm();
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

// Boost 1.74's awaitable may co_await only Asio awaitables, operations given use_awaitable and
// callables that take the awaiting frame (suspended_awaitable.hpp). This is one of the last: it
// lives in the awaiting frame while the coroutine waits, and is the waiter linked in the list.
class AsyncMutex::LockInto : private AsyncMutex::Waiter {
 public:
  LockInto(AsyncMutex& mutex, Guard& guard) noexcept : mutex_(mutex), guard_(guard) {
    wake = &LockInto::on_wake;
  }
  LockInto(LockInto&& other) noexcept : LockInto(other.mutex_, other.guard_) {}
  LockInto& operator=(LockInto&&) = delete;
  LockInto(const LockInto&) = delete;
  LockInto& operator=(const LockInto&) = delete;
  ~LockInto() = default;

  detail::AwaitableThread* operator()(detail::AwaitableFrame* frame) {
    if (mutex_.try_acquire()) {
      guard_ = Guard(&mutex_);
      return nullptr;  // goes on at once
    }
    // Off the thread before it is linked: a wake may come from another thread at once.
    suspended_.emplace(frame);
    if (mutex_.acquire_or_wait(*this)) {
      guard_ = Guard(&mutex_);
      take_suspended().resume_through_executor();
    }
    return nullptr;
  }

 private:
  detail::SuspendedAwaitable take_suspended() {
    detail::SuspendedAwaitable suspended = std::move(*suspended_);
    suspended_.reset();
    return suspended;
  }

  // The coroutine travels with the posted retry, so that a context that never runs it destroys
  // it; it is back here before the retry links this waiter again.
  static void on_wake(Waiter* waiter) {
    auto* self = static_cast<LockInto*>(waiter);
    const detail::AwaitableExecutor executor = self->suspended_->get_executor();
    boost::asio::post(executor, [self, suspended = self->take_suspended(),
                                 passer = WakePasser(self->mutex_)]() mutable {
      passer.disarm();
      self->suspended_.emplace(std::move(suspended));
      if (!self->mutex_.acquire_or_wait(*self)) return;
      self->guard_ = Guard(&self->mutex_);
      // From a local: the coroutine destroys this waiter as it goes on.
      self->take_suspended().resume();
    });
  }

  AsyncMutex& mutex_;
  Guard& guard_;
  std::optional<detail::SuspendedAwaitable> suspended_;
};

inline AsyncMutex::LockInto AsyncMutex::lock(Guard& guard) noexcept {
  CONVEYOR_DEBUG_CONTRACT(!guard.owns_lock(), "AsyncMutex::lock(guard): the guard must be empty");
  return {*this, guard};
}

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

  // Owns a node on its way through a posted function: a context that destroys the function
  // without running it destroys the node and its handler with it, instead of leaking them, and
  // unlocks the mutex if the node held it for its handler, or else passes the wake-up on.
  class Owner {
   public:
    Owner(HandlerWaiter* node, bool holds_mutex) noexcept : node_(node), holds_(holds_mutex) {}
    Owner(Owner&& other) noexcept
        : node_(std::exchange(other.node_, nullptr)), holds_(other.holds_) {}
    Owner& operator=(Owner&&) = delete;
    Owner(const Owner&) = delete;
    Owner& operator=(const Owner&) = delete;
    ~Owner() {
      if (node_ == nullptr) return;
      AsyncMutex& owned_mutex = node_->mutex;
      // Destroyed last: the handler may own what owns the mutex.
      [[maybe_unused]] const Handler kept = node_->destroy();
      if (holds_) {
        owned_mutex.unlock();
      } else {
        owned_mutex.pass_wake();
      }
    }
    HandlerWaiter* release() noexcept { return std::exchange(node_, nullptr); }

   private:
    HandlerWaiter* node_;
    bool holds_;
  };

  // Frees the node with its handler's allocator; returns the handler.
  Handler destroy() {
    Handler moved = std::move(handler);
    Allocator allocator(boost::asio::get_associated_allocator(moved));
    std::allocator_traits<Allocator>::destroy(allocator, this);
    std::allocator_traits<Allocator>::deallocate(allocator, this, 1);
    return moved;
  }

  // Completes the operation with the mutex held: frees the node first, then calls the handler.
  void complete() {
    AsyncMutex& held_mutex = mutex;
    destroy()(Guard(&held_mutex));
  }

  // Runs complete() through the executor; the mutex is held.
  void post_completion() {
    boost::asio::post(executor,
                      [owner = Owner(this, true)]() mutable { owner.release()->complete(); });
  }

  static void on_wake(Waiter* waiter) {
    auto* self = static_cast<HandlerWaiter*>(waiter);
    boost::asio::post(self->executor, [owner = Owner(self, false)]() mutable {
      HandlerWaiter* node = owner.release();  // linked again, or completed
      if (node->mutex.acquire_or_wait(*node)) node->complete();
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
        if (acquire_or_wait(*node)) node->post_completion();
      },
      token);
}

inline boost::asio::awaitable<AsyncMutex::Guard> AsyncMutex::lock() {
  Guard guard;
  co_await lock(guard);
  co_return guard;
}

}  // namespace conveyor::sync
