// TaskSequencer: strict FIFO from several submitting threads, no overlap, exceptions to their own
// callers only, cancellation before the turn, and abandoned runs leaving the queue.
#include "conveyor/sync/task_sequencer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>

#include "watchdog.hpp"

namespace asio = boost::asio;
using conveyor::sync::TaskSequencer;

namespace {

asio::awaitable<void> yield_to_executor() {
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
}

// Awaits `operation` in a coroutine of its own on `io`; `aborted` is set if it throws (a stopped
// run's operation_aborted).
void spawn_awaiting(asio::io_context& io, asio::awaitable<void> operation, bool& aborted) {
  asio::co_spawn(
      io,
      [&aborted, operation = std::move(operation)]() mutable -> asio::awaitable<void> {
        try {
          co_await std::move(operation);
        } catch (const boost::system::system_error&) {
          aborted = true;
        }
      },
      asio::detached);
}

// Four threads submit at once; each records the order its `run` calls were made in (under a
// lock, so the recorded call order is the queue's). The operations start in that order and never
// overlap, while suspending inside.
TEST(TaskSequencer, StrictFifoFromSeveralThreadsWithoutOverlap) {
  conveyor::testing::Watchdog watchdog(std::chrono::seconds(120));
  constexpr int per_thread = 2000;
  asio::io_context io(4);
  auto work = asio::make_work_guard(io);
  std::vector<std::thread> pool;
  for (int i = 0; i < 4; ++i)
    pool.emplace_back([&io] { io.run(); });

  TaskSequencer sequencer;
  std::mutex order_mutex;
  std::vector<int> called;   // ids in the order run() was called
  std::vector<int> started;  // ids in the order the operations started (only one runs at a time)
  std::atomic<bool> running{false};
  std::atomic<int> overlaps{0};
  std::atomic<int> finished{0};

  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        const int id = t * per_thread + i;
        std::lock_guard lock(order_mutex);  // the call order is recorded with the call
        called.push_back(id);
        auto operation = sequencer.run([&, id]() -> asio::awaitable<int> {
          if (running.exchange(true)) overlaps.fetch_add(1);
          started.push_back(id);  // ordered by the sequencer itself
          co_await yield_to_executor();
          running.store(false);
          co_return id;
        });
        asio::co_spawn(
            io,
            [&, id, operation = std::move(operation)]() mutable -> asio::awaitable<void> {
              const int result = co_await std::move(operation);
              EXPECT_EQ(result, id);
              finished.fetch_add(1);
            },
            asio::detached);
      }
    });
  }
  for (auto& thread : submitters)
    thread.join();
  while (finished.load() < 4 * per_thread)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  work.reset();
  for (auto& thread : pool)
    thread.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(started, called);
  EXPECT_EQ(sequencer.size(), 0U);
}

TEST(TaskSequencer, ExceptionsReachTheirOwnCallersOnly) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io;
  TaskSequencer sequencer;
  std::vector<std::string> outcomes(3);
  for (int i = 0; i < 3; ++i) {
    auto operation = sequencer.run([i]() -> asio::awaitable<int> {
      co_await yield_to_executor();
      if (i == 1) throw std::runtime_error("second");
      co_return i;
    });
    asio::co_spawn(
        io,
        [&, i, operation = std::move(operation)]() mutable -> asio::awaitable<void> {
          try {
            outcomes[i] = std::to_string(co_await std::move(operation));
          } catch (const std::runtime_error& error) {
            outcomes[i] = error.what();
          }
        },
        asio::detached);
  }
  io.run();
  EXPECT_EQ(outcomes, (std::vector<std::string>{"0", "second", "2"}));
}

TEST(TaskSequencer, CancelledBeforeItsTurnNeverStartsAndIsSkipped) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io;
  TaskSequencer sequencer;
  std::vector<int> started;
  std::vector<std::string> outcomes(3);
  std::stop_source stop;
  asio::steady_timer gate(io, asio::steady_timer::time_point::max());
  for (int i = 0; i < 3; ++i) {
    auto operation = sequencer.run(
        [&, i]() -> asio::awaitable<void> {
          started.push_back(i);
          if (i == 0) {
            // Holds the queue until the middle one was cancelled.
            boost::system::error_code ignored;
            co_await gate.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
          }
        },
        i == 1 ? stop.get_token() : std::stop_token());
    asio::co_spawn(
        io,
        [&, i, operation = std::move(operation)]() mutable -> asio::awaitable<void> {
          try {
            co_await std::move(operation);
            outcomes[i] = "done";
          } catch (const boost::system::system_error& error) {
            outcomes[i] = error.code() == asio::error::operation_aborted ? "aborted" : "other";
          }
        },
        asio::detached);
  }
  io.poll();  // the first runs and waits at the gate; the others wait for their turn
  EXPECT_EQ(started, std::vector<int>{0});
  stop.request_stop();
  io.poll();
  EXPECT_EQ(outcomes[1], "aborted");
  gate.cancel();
  io.run();
  EXPECT_EQ(started, (std::vector<int>{0, 2}));
  EXPECT_EQ(outcomes, (std::vector<std::string>{"done", "aborted", "done"}));
}

TEST(TaskSequencer, StopRequestedBeforeTheCallNeverStarts) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io;
  TaskSequencer sequencer;
  std::stop_source stop;
  stop.request_stop();
  bool started = false;
  bool aborted = false;
  auto operation = sequencer.run(
      [&]() -> asio::awaitable<void> {
        started = true;
        co_return;
      },
      stop.get_token());
  spawn_awaiting(io, std::move(operation), aborted);
  io.run();
  EXPECT_FALSE(started);
  EXPECT_TRUE(aborted);
  EXPECT_EQ(sequencer.size(), 0U);
}

// A run whose awaitable is dropped unawaited leaves the queue: those behind it do not wait.
TEST(TaskSequencer, AbandonedRunLeavesTheQueue) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io;
  TaskSequencer sequencer;
  bool second_ran = false;
  {
    auto dropped = sequencer.run([]() -> asio::awaitable<void> { co_return; });
  }
  auto operation = sequencer.run([&]() -> asio::awaitable<void> {
    second_ran = true;
    co_return;
  });
  asio::co_spawn(io, std::move(operation), asio::detached);
  io.run();
  EXPECT_TRUE(second_ran);
  EXPECT_EQ(sequencer.size(), 0U);
}

// The awaitable is lazy: a run stopped while it is kept unawaited holds up the one behind it, and
// lets it go as soon as it is awaited (without starting its own operation).
TEST(TaskSequencer, AStoppedRunLetsThoseBehindItGoOnceItIsAwaited) {
  conveyor::testing::Watchdog watchdog;
  asio::io_context io;
  TaskSequencer sequencer;
  std::stop_source stop;
  bool first_started = false;
  bool second_ran = false;
  bool aborted = false;
  auto first = sequencer.run(
      [&]() -> asio::awaitable<void> {
        first_started = true;
        co_return;
      },
      stop.get_token());
  asio::co_spawn(io, sequencer.run([&]() -> asio::awaitable<void> {
    second_ran = true;
    co_return;
  }),
                 asio::detached);
  stop.request_stop();
  io.poll();
  EXPECT_FALSE(second_ran) << "a run not yet awaited keeps its place";
  spawn_awaiting(io, std::move(first), aborted);
  io.run();
  EXPECT_TRUE(aborted);
  EXPECT_FALSE(first_started);
  EXPECT_TRUE(second_ran);
  EXPECT_EQ(sequencer.size(), 0U);
}

// Order is the order of the calls, not of the awaits: operations awaited in reverse, with every
// seventh dropped unawaited, still start in call order (and the queue outgrows its first table).
TEST(TaskSequencer, CallOrderHoldsWhateverOrderTheyAreAwaitedIn) {
  conveyor::testing::Watchdog watchdog;
  constexpr int count = 1000;
  asio::io_context io;
  TaskSequencer sequencer;
  std::vector<int> started;
  std::vector<asio::awaitable<void>> operations;
  for (int i = 0; i < count; ++i) {
    operations.push_back(sequencer.run([&started, i]() -> asio::awaitable<void> {
      started.push_back(i);
      co_await yield_to_executor();
    }));
  }
  std::vector<int> expected;
  for (int i = 0; i < count; ++i) {
    if (i % 7 == 3) {
      auto dropped = std::move(operations[i]);
    } else {
      expected.push_back(i);
    }
  }
  for (int i = count - 1; i >= 0; --i) {
    if (i % 7 != 3) asio::co_spawn(io, std::move(operations[i]), asio::detached);
  }
  io.run();
  EXPECT_EQ(started, expected);
  EXPECT_EQ(sequencer.size(), 0U);
}

// In every build: the queued operation would reach the destroyed sequencer later.
TEST(TaskSequencerDeathTest, DestroyedWithAnOperationQueued) {
  EXPECT_DEATH(
      {
        auto* sequencer = new TaskSequencer;
        // Never awaited, never dropped: its number stays queued.
        (void)new auto(sequencer->run([]() -> asio::awaitable<void> { co_return; }));
        delete sequencer;
      },
      "TaskSequencer destroyed with operations queued");
}

}  // namespace
