// AsyncMutex: exclusion across suspended holders on a multi-threaded io_context, release on a
// throw and on another thread, try_lock, the handler and plain-coroutine forms, no allocation on a
// free mutex, and the destruction contract.
#include "conveyor/sync/async_mutex.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "allocation_hooks.hpp"
#include "stress.hpp"
#include "watchdog.hpp"

namespace asio = boost::asio;
using conveyor::sync::AsyncMutex;

using conveyor::testing::allocations;  // the no-allocation check counts them (allocation_hooks.hpp)

namespace {

// Runs `threads` threads on `io` until it runs out of work.
void run_on(asio::io_context& io, int threads) {
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&io] { io.run(); });
  for (auto& thread : pool)
    thread.join();
}

// Suspends the coroutine and resumes it through its executor, possibly on another thread.
asio::awaitable<void> yield_to_executor() {
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
}

TEST(AsyncMutex, TryLockAndGuard) {
  AsyncMutex mutex;
  {
    std::optional<AsyncMutex::Guard> guard = mutex.try_lock();
    ASSERT_TRUE(guard);
    EXPECT_TRUE(mutex.locked());
    EXPECT_FALSE(mutex.try_lock());
    AsyncMutex::Guard moved = std::move(*guard);
    EXPECT_FALSE(guard->owns_lock());
    EXPECT_TRUE(moved.owns_lock());
  }
  EXPECT_FALSE(mutex.locked());
  auto guard = mutex.try_lock();
  ASSERT_TRUE(guard);
  guard->unlock();
  EXPECT_FALSE(mutex.locked());
  EXPECT_TRUE(mutex.try_lock());
}

// How a coroutine takes the mutex: `co_await lock()`, `co_await lock(guard)`, or
// `co_await async_lock(executor, use_awaitable)`.
enum class Form { returned, filled, operation };

asio::awaitable<AsyncMutex::Guard> take(AsyncMutex& mutex, Form form) {
  if (form == Form::returned) co_return co_await mutex.lock();
  if (form == Form::operation) {
    co_return co_await mutex.async_lock(co_await asio::this_coro::executor, asio::use_awaitable);
  }
  AsyncMutex::Guard guard;
  co_await mutex.lock(guard);
  EXPECT_TRUE(guard.owns_lock());
  co_return guard;
}

// The test: 10,000 coroutines on four threads each add to a plain counter 100 times under
// the lock, suspending inside the region every time. `take` adds a frame to the filled form; the
// form itself is used inline below, as a user would. Under the sanitizers each coroutine adds
// fewer times (10 under ThreadSanitizer, where the full count took 25 s): as many coroutines
// contend, and each still suspends while it holds the lock.
void exclude_suspended_holders(Form form) {
  conveyor::testing::Watchdog watchdog(std::chrono::seconds(120));
  constexpr int coroutines = 10'000;
  const int increments = 100 / conveyor::testing::sanitizer_slowdown();
  asio::io_context io(4);
  AsyncMutex mutex;
  long counter = 0;  // not atomic: the mutex orders every access
  std::atomic<bool> inside{false};
  std::atomic<int> overlaps{0};
  std::atomic<int> finished{0};
  for (int c = 0; c < coroutines; ++c) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          for (int i = 0; i < increments; ++i) {
            AsyncMutex::Guard guard;
            if (form == Form::filled) {
              co_await mutex.lock(guard);
            } else {
              guard = co_await mutex.lock();
            }
            if (inside.exchange(true, std::memory_order_relaxed)) {
              overlaps.fetch_add(1, std::memory_order_relaxed);
            }
            const long seen = counter;
            co_await yield_to_executor();  // a holder that is really suspended
            counter = seen + 1;
            inside.store(false, std::memory_order_relaxed);
          }
          finished.fetch_add(1, std::memory_order_relaxed);
        },
        asio::detached);
  }
  run_on(io, 4);
  EXPECT_EQ(finished.load(), coroutines);
  EXPECT_EQ(counter, long{coroutines} * increments);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_FALSE(mutex.locked());
}

TEST(AsyncMutex, ExcludesSuspendedHolders) {
  exclude_suspended_holders(Form::returned);
}

TEST(AsyncMutex, ExcludesSuspendedHoldersWithLockIntoAGuard) {
  exclude_suspended_holders(Form::filled);
}

// Counts live coroutine frames (one of these in each).
struct Alive {
  int& count;
  explicit Alive(int& c) : count(c) { ++count; }
  Alive(const Alive&) = delete;
  Alive& operator=(const Alive&) = delete;
  ~Alive() { --count; }
};

// A waiter whose retry was posted to a context that is then destroyed without running it: its
// coroutine's frames are destroyed with the retry, not leaked, and the mutex is left free.
void retry_dropped_with_its_context(Form form) {
  conveyor::testing::Watchdog watchdog;
  AsyncMutex mutex;
  std::optional<AsyncMutex::Guard> holder = mutex.try_lock();
  int live = 0;
  bool ran = false;
  {
    asio::io_context io;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          const Alive alive(live);
          const AsyncMutex::Guard guard = co_await take(mutex, form);
          ran = true;
        },
        asio::detached);
    io.poll();  // the coroutine waits
    EXPECT_EQ(live, 1);
    holder.reset();  // posts the waiter's retry, which never runs
  }
  EXPECT_FALSE(ran);
  EXPECT_EQ(live, 0);
  EXPECT_FALSE(mutex.locked());
}

TEST(AsyncMutex, LockIntoAGuardRetryDroppedWithItsContextLeavesNoFrame) {
  retry_dropped_with_its_context(Form::filled);
}

TEST(AsyncMutex, AsyncLockRetryDroppedWithItsContextLeavesNoFrame) {
  retry_dropped_with_its_context(Form::operation);
}

// Two waiters on two contexts: the first is woken, but its context is destroyed before it runs
// the retry. Only the first would have woken the second, so the dropped retry passes it on.
void dropped_retry_passes_the_wake_on(Form form) {
  conveyor::testing::Watchdog watchdog;
  AsyncMutex mutex;
  std::optional<AsyncMutex::Guard> holder = mutex.try_lock();
  asio::io_context second_context;
  bool first_ran = false;
  bool second_ran = false;
  {
    asio::io_context first_context;
    for (auto [io, ran] :
         {std::pair{&first_context, &first_ran}, std::pair{&second_context, &second_ran}}) {
      asio::co_spawn(
          *io,
          [&mutex, form, ran]() -> asio::awaitable<void> {
            const AsyncMutex::Guard guard = co_await take(mutex, form);
            *ran = true;
          },
          asio::detached);
      io->poll();  // waits, in this order
    }
    holder.reset();  // wakes the first waiter, whose retry is then dropped with its context
  }
  second_context.run_for(std::chrono::seconds(10));
  EXPECT_FALSE(first_ran);
  EXPECT_TRUE(second_ran);
  EXPECT_FALSE(mutex.locked());
}

TEST(AsyncMutex, LockIntoAGuardDroppedRetryPassesTheWakeOn) {
  dropped_retry_passes_the_wake_on(Form::filled);
}

TEST(AsyncMutex, AsyncLockDroppedRetryPassesTheWakeOn) {
  dropped_retry_passes_the_wake_on(Form::operation);
}

// async_lock on a free mutex posts its completion with the mutex held; a context destroyed
// before running it frees the mutex.
TEST(AsyncMutex, AsyncLockCompletionDroppedWithItsContextUnlocks) {
  AsyncMutex mutex;
  bool ran = false;
  {
    asio::io_context io;
    mutex.async_lock(io.get_executor(), [&](AsyncMutex::Guard) { ran = true; });
    EXPECT_TRUE(mutex.locked());
  }
  EXPECT_FALSE(ran);
  EXPECT_FALSE(mutex.locked());
}

// A throw inside the region releases the mutex, in both awaitable forms.
void release_on_a_throw(Form form) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io;
  AsyncMutex mutex;
  int caught = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        try {
          const AsyncMutex::Guard guard = co_await take(mutex, form);
          co_await yield_to_executor();
          throw std::runtime_error("inside");
        } catch (const std::runtime_error&) {
          ++caught;
        }
        // Would wait forever if the throw kept it.
        const AsyncMutex::Guard again = co_await take(mutex, form);
        EXPECT_TRUE(again.owns_lock());
      },
      asio::detached);
  io.run();
  EXPECT_EQ(caught, 1);
  EXPECT_FALSE(mutex.locked());
}

TEST(AsyncMutex, ExceptionInsideTheRegionReleasesIt) {
  release_on_a_throw(Form::returned);
}

TEST(AsyncMutex, ExceptionInsideTheRegionReleasesALockIntoAGuard) {
  release_on_a_throw(Form::filled);
}

TEST(AsyncMutex, GuardReleasedOnAnotherThread) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context first;
  AsyncMutex mutex;
  std::optional<AsyncMutex::Guard> taken;
  std::thread::id locked_on;
  std::thread::id released_on;
  asio::co_spawn(
      first,
      [&]() -> asio::awaitable<void> {
        taken.emplace(co_await mutex.lock());
        locked_on = std::this_thread::get_id();
      },
      asio::detached);
  first.run();
  ASSERT_TRUE(taken);
  std::thread([&] {
    released_on = std::this_thread::get_id();
    taken.reset();
  }).join();
  EXPECT_NE(locked_on, released_on);
  EXPECT_FALSE(mutex.locked());
  bool waiter_ran = false;
  asio::io_context second;
  asio::co_spawn(
      second,
      [&]() -> asio::awaitable<void> {
        auto guard = co_await mutex.lock();
        waiter_ran = true;
      },
      asio::detached);
  second.run();
  EXPECT_TRUE(waiter_ran);
}

// A waiter resumes through its executor, not inside unlock(): the unlocking code finishes first.
TEST(AsyncMutex, WaiterResumesThroughItsExecutorNotInsideUnlock) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io;
  AsyncMutex mutex;
  std::vector<int> events;
  auto holder = mutex.try_lock();
  ASSERT_TRUE(holder);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto guard = co_await mutex.lock();
        events.push_back(2);
      },
      asio::detached);
  io.poll();  // the coroutine now waits
  EXPECT_TRUE(events.empty());
  holder->unlock();
  events.push_back(1);
  io.run();
  EXPECT_EQ(events, (std::vector<int>{1, 2}));
}

// A long chain of waiters, each taking the mutex as the previous one leaves, grows no stack.
TEST(AsyncMutex, LongHandOverChainDoesNotRecurse) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io;
  AsyncMutex mutex;
  constexpr int chain = 100'000;
  int done = 0;
  auto holder = mutex.try_lock();
  for (int i = 0; i < chain; ++i) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          auto guard = co_await mutex.lock();
          ++done;
        },
        asio::detached);
  }
  io.poll();
  holder->unlock();
  io.run();
  EXPECT_EQ(done, chain);
}

TEST(AsyncMutex, HandlerForm) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io;
  AsyncMutex mutex;
  std::vector<int> order;
  auto holder = mutex.try_lock();
  bool called_inline = true;
  mutex.async_lock(io.get_executor(), [&](AsyncMutex::Guard guard) {
    EXPECT_TRUE(guard.owns_lock());
    order.push_back(1);
  });
  called_inline = !order.empty();
  holder->unlock();
  io.run();
  EXPECT_FALSE(called_inline);
  EXPECT_EQ(order, std::vector<int>{1});
  EXPECT_FALSE(mutex.locked());
  // Free at once: still not called inside async_lock.
  io.restart();
  mutex.async_lock(io.get_executor(), [&](AsyncMutex::Guard) { order.push_back(2); });
  EXPECT_EQ(order.size(), 1U);
  io.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

// Any coroutine type: a minimal fire-and-forget task awaits lock_on(executor).
struct Task {
  struct promise_type {
    Task get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
};

TEST(AsyncMutex, PlainCoroutineWithLockOn) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io(4);
  AsyncMutex mutex;
  long counter = 0;
  constexpr int coroutines = 1000;
  std::atomic<int> finished{0};
  auto body = [&](asio::io_context::executor_type executor) -> Task {
    for (int i = 0; i < 10; ++i) {
      auto guard = co_await mutex.lock_on(executor);
      ++counter;
    }
    finished.fetch_add(1, std::memory_order_relaxed);
  };
  auto work = asio::make_work_guard(io);
  std::vector<std::thread> pool;
  for (int i = 0; i < 4; ++i)
    pool.emplace_back([&io] { io.run(); });
  for (int c = 0; c < coroutines; ++c) {
    asio::post(io, [&] { body(io.get_executor()); });
  }
  while (finished.load(std::memory_order_relaxed) < coroutines)
    std::this_thread::yield();
  work.reset();
  for (auto& thread : pool)
    thread.join();
  EXPECT_EQ(counter, coroutines * 10L);
}

// A waiter counts as work of its executor's context, in both forms: io_context::run() does not
// return while one waits for a holder that unlocks on another thread.
void expect_run_waits_for(asio::io_context& io, AsyncMutex& mutex,
                          std::optional<AsyncMutex::Guard>& holder, const bool& ran) {
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    holder.reset();
  });
  io.run();
  releaser.join();
  EXPECT_TRUE(ran);
  EXPECT_FALSE(mutex.locked());
}

TEST(AsyncMutex, LockOnWaiterKeepsItsContextRunning) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io;
  AsyncMutex mutex;
  std::optional<AsyncMutex::Guard> holder = mutex.try_lock();
  bool ran = false;
  auto body = [&](asio::io_context::executor_type executor) -> Task {
    auto guard = co_await mutex.lock_on(executor);
    ran = true;
  };
  body(io.get_executor());  // waits: `holder` has the mutex
  expect_run_waits_for(io, mutex, holder, ran);
}

TEST(AsyncMutex, AsyncLockWaiterKeepsItsContextRunning) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io;
  AsyncMutex mutex;
  std::optional<AsyncMutex::Guard> holder = mutex.try_lock();
  bool ran = false;
  mutex.async_lock(io.get_executor(), [&](AsyncMutex::Guard) { ran = true; });
  expect_run_waits_for(io, mutex, holder, ran);
}

// A lock(guard) waiter counts as work of its context (the co_spawn that started it keeps it), and
// is woken through it once a holder on another thread unlocks.
TEST(AsyncMutex, LockIntoAGuardWaiterKeepsItsContextRunning) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io;
  AsyncMutex mutex;
  std::optional<AsyncMutex::Guard> holder = mutex.try_lock();
  bool ran = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        AsyncMutex::Guard guard;
        co_await mutex.lock(guard);
        ran = true;
      },
      asio::detached);
  expect_run_waits_for(io, mutex, holder, ran);
}

TEST(AsyncMutex, NoAllocationOnAFreeMutex) {
  AsyncMutex mutex;
  const std::size_t before = allocations.load();
  for (int i = 0; i < 10'000; ++i) {
    auto guard = mutex.try_lock();
    ASSERT_TRUE(guard);
  }
  EXPECT_EQ(allocations.load(), before);
  // Through lock_on in a coroutine that never waits.
  asio::io_context io;
  std::size_t during = 0;
  auto body = [&](asio::io_context::executor_type executor) -> Task {
    const std::size_t start = allocations.load();
    for (int i = 0; i < 10'000; ++i) {
      auto guard = co_await mutex.lock_on(executor);
    }
    during = allocations.load() - start;
  };
  body(io.get_executor());
  EXPECT_EQ(during, 0U);
  // Through lock(guard) in an asio::awaitable.
  during = 1;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const std::size_t start = allocations.load();
        for (int i = 0; i < 10'000; ++i) {
          AsyncMutex::Guard guard;
          co_await mutex.lock(guard);
        }
        during = allocations.load() - start;
      },
      asio::detached);
  io.run();
  EXPECT_EQ(during, 0U);
}

#ifndef NDEBUG
TEST(AsyncMutexDeathTest, DestroyedWhileWaitedFor) {
  EXPECT_DEATH(
      {
        asio::io_context io;
        auto* mutex = new AsyncMutex;
        auto holder = mutex->try_lock();
        mutex->async_lock(io.get_executor(), [](AsyncMutex::Guard) {});
        // Never unlocks: the guard is leaked.
        (void)new AsyncMutex::Guard(std::move(*holder));
        delete mutex;
      },
      "AsyncMutex destroyed while held or waited for");
}
#endif

}  // namespace
