// Failure and shutdown: a throw from any position cancels the pipeline and is rethrown, every
// blocked worker wakes (whatever it waits for), nothing leaks, request_stop() drains and abort()
// drops, also when asked from a signal handler.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "conveyor/framework/async.hpp"
#include "conveyor/framework/detail/io_pool.hpp"
#include "conveyor/framework/emit.hpp"
#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/stage.hpp"
#include "pipeline_support.hpp"
#include "settle_time.hpp"
#include "task_suspension.hpp"
#include "tracked.hpp"
#include "watchdog.hpp"

namespace {
// Threads that may still be created before one cannot be (EAGAIN, as when the process has none
// left); -1: no limit.
std::atomic<int> threads_before_failure{-1};
}  // namespace

// Every thread the test binary creates comes through here (std::thread included).
extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attributes,
                              void* (*start)(void*), void* argument) noexcept {
  using Create = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const auto real = reinterpret_cast<Create>(::dlsym(RTLD_NEXT, "pthread_create"));
  int left = threads_before_failure.load(std::memory_order_relaxed);
  while (left >= 0) {
    if (left == 0) return EAGAIN;
    if (threads_before_failure.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
      break;
    }
  }
  return real(thread, attributes, start, argument);
}

namespace {

using conveyor::Channel;
using conveyor::Emit;
using conveyor::Executor;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::PipelineState;
using conveyor::sink;
using conveyor::stage;
using conveyor::testing::settle_time;
using conveyor::testing::Tracked;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

enum class Position { source, stage, sink, stage_flush, sink_flush };

std::string position_name(Position position) {
  switch (position) {
    case Position::source:
      return "source";
    case Position::stage:
      return "stage";
    case Position::sink:
      return "sink";
    case Position::stage_flush:
      return "stage_flush";
    case Position::sink_flush:
      return "sink_flush";
  }
  return "?";
}

struct ThrowingStage {
  bool throw_in_process;
  bool throw_in_flush;
  Tracked process(Tracked item) {
    if (throw_in_process && item.value() == 500) throw std::runtime_error("stage failed");
    return item;
  }
  void flush(Emit<Tracked>&) {
    if (throw_in_flush) throw std::runtime_error("stage_flush failed");
  }
};

struct ThrowingSink {
  bool throw_in_process;
  bool throw_in_flush;
  void process(Tracked item) {
    if (throw_in_process && item.value() == 500) throw std::runtime_error("sink failed");
  }
  void flush() {
    if (throw_in_flush) throw std::runtime_error("sink_flush failed");
  }
};

class FailureTest : public conveyor::testing::TrackedLeakCheck,
                    public ::testing::WithParamInterface<std::tuple<Position, bool>> {};

TEST_P(FailureTest, AThrowCancelsThePipelineAndIsRethrown) {
  Watchdog watchdog;
  const auto [position, tbb] = GetParam();
  if (tbb && !conveyor::testing::throw_after_suspension_checkable) {
    GTEST_SKIP() << "this sanitizer cannot follow an exception on a resumed oneTBB task";
  }
  {
    std::atomic<int> handled{0};
    std::string handled_what;
    Pipeline p({.executor = tbb ? Executor::tbb(2) : Executor::threads(),
                .on_failure = [&](const std::exception_ptr& error) {
                  handled.fetch_add(1);
                  try {
                    std::rethrow_exception(error);
                  } catch (const std::runtime_error& failure) {
                    handled_what = failure.what();
                  }
                }});
    std::int64_t next = 0;
    p.source([&]() -> std::optional<Tracked> {
      if (position == Position::source && next == 500) throw std::runtime_error("source failed");
      if (next == 100'000) return std::nullopt;
      return Tracked(next++);
    }) |
        stage(ThrowingStage{position == Position::stage, position == Position::stage_flush},
              {.mode = Mode::parallel, .workers = 2, .channel = Channel::queue(4)}) |
        sink(ThrowingSink{position == Position::sink, position == Position::sink_flush},
             {.mode = Mode::serial_in_order, .channel = Channel::queue(2)});
    try {
      p.run();
      FAIL() << "run() returned normally";
    } catch (const std::runtime_error& error) {
      EXPECT_EQ(std::string(error.what()), position_name(position) + " failed");
    }
    EXPECT_EQ(p.state(), PipelineState::failed);
    EXPECT_EQ(handled.load(), 1);  // once, however many workers throw
    EXPECT_EQ(handled_what, position_name(position) + " failed");
    const auto stats = p.stats();
    const std::size_t failed_stage =
        position == Position::source                                     ? 0
        : position == Position::sink || position == Position::sink_flush ? 2
                                                                         : 1;
    std::uint64_t errors = 0;
    for (const auto& stage : stats.stages)
      errors += stage.errors;
    // Each of the stage's two workers may throw from its flush before it sees the cancellation.
    const std::uint64_t most = position == Position::stage_flush ? 2 : 1;
    EXPECT_GE(stats.stages[failed_stage].errors, 1U);
    EXPECT_LE(stats.stages[failed_stage].errors, most);
    EXPECT_EQ(errors, stats.stages[failed_stage].errors);
  }
  // TrackedLeakCheck: every item was destroyed, in the lanes or in the workers' hands.
}

INSTANTIATE_TEST_SUITE_P(Positions, FailureTest,
                         ::testing::Combine(::testing::Values(Position::source, Position::stage,
                                                              Position::sink, Position::stage_flush,
                                                              Position::sink_flush),
                                            ::testing::Bool()),
                         [](const auto& param_info) {
                           return position_name(std::get<0>(param_info.param)) +
                                  (std::get<1>(param_info.param) ? "_tbb" : "_threads");
                         });

// An item that knows whether a sink took it, and tells `dropped_early` if it is destroyed without
// that, and not by an exception, before the pipeline's failure handler ran.
struct Probe {
  struct Shared {
    std::atomic<bool> handled{false};
    std::atomic<int> dropped_early{0};
  };
  Probe(std::int64_t v, Shared* s) : value(v), shared(s) {}
  Probe(Probe&& other) noexcept
      : value(other.value), shared(std::exchange(other.shared, nullptr)) {}
  Probe& operator=(Probe&& other) noexcept {
    value = other.value;
    shared = std::exchange(other.shared, nullptr);
    return *this;
  }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;
  ~Probe() {
    // The item that threw, and those its worker held with it, go as its exception unwinds,
    // before anyone can be told (an acknowledgement token fails then: ack.hpp).
    if (shared != nullptr && !taken && std::uncaught_exceptions() == 0 && !shared->handled.load()) {
      shared->dropped_early.fetch_add(1);
    }
  }
  std::int64_t value;
  Shared* shared;
  bool taken = false;
};

// PipelineOptions::on_failure runs before the items in flight are dropped: a source that
// acknowledges what it emitted can stop trusting acknowledgements first.
TEST(PipelineFailure, TheFailureHandlerRunsBeforeTheItemsInFlightAreDropped) {
  Watchdog watchdog;
  for (int round = 0; round < 20; ++round) {
    Probe::Shared shared;
    Pipeline p({.on_failure = [&](const std::exception_ptr&) {
      std::this_thread::sleep_for(1ms);  // the others would drop their items meanwhile
      shared.handled.store(true);
    }});
    std::int64_t next = 0;
    p.source([&]() -> std::optional<Probe> {
      if (next == 10'000) return std::nullopt;
      return Probe(next++, &shared);
    }) |
        stage([](Probe item) { return item; },
              {.mode = Mode::parallel, .workers = 2, .channel = Channel::queue(8)}) |
        sink(
            [](Probe item) {
              if (item.value == 500) throw std::runtime_error("sink failed");
              item.taken = true;
            },
            {.mode = Mode::serial_in_order, .channel = Channel::queue(8)});
    EXPECT_THROW(p.run(), std::runtime_error);
    EXPECT_TRUE(shared.handled.load());
    EXPECT_EQ(shared.dropped_early.load(), 0) << "round " << round;
  }
}

using ShutdownTest = conveyor::testing::TrackedLeakCheck;

// Stage and sink code for the tests below where it only has to be there: one type each, so that
// the pipeline's typed code is compiled once for it rather than once per test.
constexpr auto pass_on = [](Tracked t) { return t; };
constexpr auto drop = [](Tracked) {};

// An endless source that only stops when asked.
auto endless(std::atomic<std::int64_t>& emitted) {
  return [&emitted](Emit<Tracked>& emit) {
    while (!emit.stop_requested()) {
      // After a stop the item is still sent, and emit() returns false: it counts either way.
      const bool more = emit(Tracked(emitted.load(std::memory_order_relaxed)));
      emitted.fetch_add(1, std::memory_order_relaxed);
      if (!more) return;
    }
  };
}

TEST_F(ShutdownTest, AbortWakesWorkersBlockedOnPush) {
  Watchdog watchdog;
  std::atomic<std::int64_t> emitted{0};
  std::atomic<std::int64_t> consumed{0};
  Pipeline p;
  p.source(endless(emitted)) |
      stage(pass_on, {.mode = Mode::parallel, .workers = 2, .channel = Channel::queue(2)}) |
      sink(
          [&](Tracked) {
            consumed.fetch_add(1, std::memory_order_relaxed);
            std::this_thread::sleep_for(1ms);
          },
          {.channel = Channel::mailbox()});
  p.start();
  std::this_thread::sleep_for(settle_time());
  p.abort();
  p.wait();
  EXPECT_EQ(p.state(), PipelineState::finished);
  EXPECT_LT(consumed.load(), emitted.load() + 1);
}

TEST_F(ShutdownTest, AbortWakesWorkersBlockedOnPop) {
  Watchdog watchdog;
  Pipeline p;
  p.source([](Emit<Tracked>& emit) {
    emit(Tracked(1));
    while (!emit.stop_requested())
      std::this_thread::sleep_for(1ms);
  }) | stage(pass_on, {.mode = Mode::parallel, .workers = 3}) |
      sink(drop, {.mode = Mode::serial_in_order});
  p.start();
  std::this_thread::sleep_for(settle_time());
  p.abort();
  p.wait();
}

TEST_F(ShutdownTest, AbortWakesASourceWaitingForTheOrderingWindow) {
  Watchdog watchdog;
  std::atomic<std::int64_t> emitted{0};
  Pipeline p;
  p.source(endless(emitted)) |
      stage(
          [](Tracked t) {
            // Item 0 takes long, so the in-order sink waits for it and
            // the source fills the window.
            if (t.value() == 0) std::this_thread::sleep_for(200ms);
            return t;
          },
          {.mode = Mode::parallel, .workers = 2}) |
      sink(drop, {.mode = Mode::serial_in_order});
  p.start();
  std::this_thread::sleep_for(settle_time());
  p.abort();
  p.wait();
}

TEST_F(ShutdownTest, AThrowWakesWorkersBlockedElsewhere) {
  Watchdog watchdog;
  std::atomic<std::int64_t> emitted{0};
  Pipeline p;
  p.source(endless(emitted)) |
      stage(pass_on, {.mode = Mode::parallel, .workers = 2, .channel = Channel::mailbox()}) |
      sink(
          [](Tracked) {
            std::this_thread::sleep_for(50ms);
            throw std::runtime_error("slow sink gave up");
          },
          {.channel = Channel::mailbox()});
  EXPECT_THROW(p.run(), std::runtime_error);
}

TEST_F(ShutdownTest, RequestStopDrainsWhatIsInFlight) {
  Watchdog watchdog;
  for (bool tbb : {false, true}) {
    if (tbb && !conveyor::testing::task_suspension_checkable) continue;
    std::atomic<std::int64_t> emitted{0};
    std::atomic<std::int64_t> consumed{0};
    std::atomic<bool> flushed{false};
    struct Flushing {
      std::atomic<bool>* flushed;
      Tracked process(Tracked t) { return t; }
      void flush(Emit<Tracked>&) { flushed->store(true); }
    };
    Pipeline p({.executor = tbb ? Executor::tbb(2) : Executor::threads()});
    p.source(endless(emitted)) |
        stage(Flushing{&flushed}, {.mode = Mode::parallel, .workers = 2, .batch = 8}) |
        sink([&](Tracked) { consumed.fetch_add(1, std::memory_order_relaxed); },
             {.mode = Mode::serial_in_order});
    p.start();
    std::this_thread::sleep_for(settle_time());
    p.request_stop();
    p.wait();
    EXPECT_EQ(p.state(), PipelineState::finished);
    EXPECT_GT(emitted.load(), 0);
    EXPECT_EQ(consumed.load(), emitted.load()) << "request_stop must not drop items";
    EXPECT_TRUE(flushed.load());
  }
}

Pipeline* signalled_pipeline = nullptr;
std::atomic<int> signal_action{0};  // 0: stop, 1: abort

void on_signal(int) {
  if (signal_action.load(std::memory_order_relaxed) == 0) {
    signalled_pipeline->request_stop();
  } else {
    signalled_pipeline->abort();
  }
}

TEST_F(ShutdownTest, StopAndAbortWorkFromASignalHandler) {
  Watchdog watchdog;
  for (int action : {0, 1}) {
    std::atomic<std::int64_t> emitted{0};
    std::atomic<std::int64_t> consumed{0};
    Pipeline p;
    p.source(endless(emitted)) | stage(pass_on, {.mode = Mode::parallel, .workers = 2}) |
        sink([&](Tracked) { consumed.fetch_add(1, std::memory_order_relaxed); });
    signalled_pipeline = &p;
    signal_action.store(action);
    struct sigaction handler {};
    handler.sa_handler = on_signal;
    sigemptyset(&handler.sa_mask);
    struct sigaction previous {};
    ASSERT_EQ(sigaction(SIGUSR1, &handler, &previous), 0);
    p.start();
    const pthread_t waiter = pthread_self();
    std::thread signaller([waiter] {
      std::this_thread::sleep_for(settle_time());
      pthread_kill(waiter, SIGUSR1);
    });
    p.wait();  // the signal lands on this thread, inside wait()
    signaller.join();
    sigaction(SIGUSR1, &previous, nullptr);
    if (action == 0) {
      EXPECT_EQ(consumed.load(), emitted.load());
    }
  }
}

TEST_F(ShutdownTest, TheDestructorAbortsARunningPipeline) {
  Watchdog watchdog;
  std::atomic<std::int64_t> emitted{0};
  {
    Pipeline p;
    p.source(endless(emitted)) | stage(pass_on, {.mode = Mode::parallel, .workers = 2}) |
        sink([](Tracked) { std::this_thread::sleep_for(100us); });
    p.start();
    std::this_thread::sleep_for(settle_time());
  }
  EXPECT_GT(emitted.load(), 0);
}

TEST_F(ShutdownTest, AbortBeforeTheFirstItemStillEnds) {
  Watchdog watchdog;
  std::atomic<std::int64_t> emitted{0};
  Pipeline p;
  p.source(endless(emitted)) | sink(drop);
  p.abort();
  p.start();
  p.wait();
}

// A worker that cannot be started (no thread left) fails the pipeline as a throw would: the
// workers that did start are cancelled, and wait() rethrows the error instead of waiting for
// workers that never ran. Four workers (source, two of the stage, sink), none to all but one.
TEST_F(ShutdownTest, AWorkerThatCannotStartFailsThePipeline) {
  Watchdog watchdog;
  for (int started = 0; started < 4; ++started) {
    std::atomic<std::int64_t> emitted{0};
    bool handled = false;
    Pipeline p({.on_failure = [&](const std::exception_ptr&) { handled = true; }});
    p.source(endless(emitted)) | stage(pass_on, {.mode = Mode::parallel, .workers = 2}) |
        sink(drop);
    threads_before_failure.store(started, std::memory_order_relaxed);
    p.start();
    threads_before_failure.store(-1, std::memory_order_relaxed);
    EXPECT_THROW(p.wait(), std::system_error) << started << " started";
    EXPECT_EQ(p.state(), PipelineState::failed);
    EXPECT_TRUE(handled);
  }
}

// An I/O thread that cannot be made: the pool ends the threads it made before the error goes on
// (a joinable std::thread destroyed would end the program), for every thread that can fail.
TEST(PipelineFailure, AnIoThreadThatCannotBeMadeEndsTheOnesMadeBefore) {
  Watchdog watchdog;
  for (int made = 0; made < 3; ++made) {
    threads_before_failure.store(made, std::memory_order_relaxed);
    EXPECT_THROW({ conveyor::detail::IoPool pool(3); }, std::system_error) << made << " made";
    threads_before_failure.store(-1, std::memory_order_relaxed);
  }
}

// In a pipeline, start() throws that error, nothing has run, and the pipeline goes away cleanly.
TEST(PipelineFailure, StartThrowsWhenAnIoThreadCannotBeMade) {
  Watchdog watchdog;
  std::atomic<std::int64_t> emitted{0};
  {
    Pipeline p({.io_threads = 2});
    p.source(endless(emitted)) |
        stage([](Tracked t) -> boost::asio::awaitable<Tracked> { co_return t; }) | sink(drop);
    threads_before_failure.store(1, std::memory_order_relaxed);
    EXPECT_THROW(p.start(), std::system_error);
    threads_before_failure.store(-1, std::memory_order_relaxed);
    EXPECT_EQ(p.state(), PipelineState::idle);
  }
  EXPECT_EQ(emitted.load(), 0);
}

// Two failures at once: the second does not cancel while the first's handler runs, so that
// nothing is dropped before the handler has run (the stage's two workers throw together).
TEST(PipelineFailure, ASecondFailureDoesNotCancelBeforeTheFirstsHandlerRan) {
  Watchdog watchdog;
  for (int round = 0; round < 10; ++round) {
    Probe::Shared shared;
    std::atomic<int> handlers{0};
    Pipeline p({.on_failure = [&](const std::exception_ptr&) {
      handlers.fetch_add(1);
      std::this_thread::sleep_for(20ms);  // the other failure comes meanwhile
      shared.handled.store(true);
    }});
    std::int64_t next = 0;
    std::atomic<int> throwing{0};
    p.source([&]() -> std::optional<Probe> {
      if (next == 10'000) return std::nullopt;
      return Probe(next++, &shared);
    }) |
        stage(
            [&](Probe item) {
              if (item.value >= 500) {
                // The first worker here waits for the other, which throws second.
                const int arrival = throwing.fetch_add(1);
                const auto deadline = std::chrono::steady_clock::now() + 2s;
                while (throwing.load() < 2 && std::chrono::steady_clock::now() < deadline)
                  std::this_thread::yield();
                if (arrival == 1) std::this_thread::sleep_for(2ms);
                throw std::runtime_error("stage failed");
              }
              return item;
            },
            {.mode = Mode::parallel, .workers = 2, .channel = Channel::queue(8)}) |
        sink([](Probe item) { item.taken = true; },
             {.mode = Mode::serial_in_order, .channel = Channel::queue(8)});
    EXPECT_THROW(p.run(), std::runtime_error);
    EXPECT_EQ(throwing.load(), 2);
    EXPECT_EQ(handlers.load(), 1);
    EXPECT_EQ(shared.dropped_early.load(), 0) << "round " << round;
  }
}

}  // namespace
