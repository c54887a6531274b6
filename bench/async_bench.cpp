// AsyncMutex, TaskSequencer and asynchronous stages against what they replace, in one binary:
// - AsyncMutex uncontended, lock and unlock inside one coroutine, against an uncontended
//   std::mutex;
// - a region that holds a lock across a wait, beside unrelated work that also waits: AsyncMutex
//   with coroutines against std::mutex held across a blocking wait on a thread pool;
// - TaskSequencer: 1 M trivial asynchronous operations from 4 submitting threads, against the same
//   operations spawned onto one asio::strand (the usual way to run them one at a time);
// - an asynchronous sink (10,000 requests of 1 ms simulated latency, in_flight 64, 2 workers and 2
//   I/O threads) against a blocking sink on 2 workers.
// After the Google Benchmark table the binary prints ours/peer ratios against the targets of
// docs/benchmarks.md.
//
// Options: those of bench_main.hpp (--ratios_json=<file>) and Google Benchmark's own.
//
// Every scenario checks its count (operations run, items delivered, the protected counter), and
// reports an error instead of a time when it is off.
#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "bench_main.hpp"
#include "conveyor/framework.hpp"
#include "conveyor/framework/async.hpp"
#include "conveyor/sync/async_mutex.hpp"
#include "conveyor/sync/task_sequencer.hpp"
#include "ratio_reporter.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

namespace conveyor::bench {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// ---- AsyncMutex, uncontended ----

// In an asio::awaitable: `auto guard = co_await m.lock()` (Filled false), or
// `Guard guard; co_await m.lock(guard)` (Filled true).
template <bool Filled>
void mutex_uncontended_awaitable(benchmark::State& state) {
  asio::io_context context(1);
  sync::AsyncMutex mutex;
  std::uint64_t counter = 0;
  asio::co_spawn(
      context,
      [&]() -> asio::awaitable<void> {
        for (auto _ : state) {
          sync::AsyncMutex::Guard guard;
          if constexpr (Filled) {
            co_await mutex.lock(guard);
          } else {
            guard = co_await mutex.lock();
          }
          benchmark::DoNotOptimize(++counter);
        }
      },
      asio::detached);
  context.run();
  if (counter != static_cast<std::uint64_t>(state.iterations())) {
    state.SkipWithError("the coroutine lost count");
  }
}

// The least a co_await of an asio::awaitable costs in Boost 1.74: a call of an empty one, whose
// frame is what `co_await m.lock()` pays beyond its one atomic operation.
asio::awaitable<std::uint64_t> empty_awaitable(std::uint64_t value) {
  co_return value;
}

void awaitable_call_empty(benchmark::State& state) {
  asio::io_context context(1);
  std::uint64_t counter = 0;
  asio::co_spawn(
      context,
      [&]() -> asio::awaitable<void> {
        for (auto _ : state)
          benchmark::DoNotOptimize(counter = co_await empty_awaitable(counter + 1));
      },
      asio::detached);
  context.run();
}

// A minimal eager coroutine type, as a user of lock_on() might have: no executor of its own.
struct Eager {
  struct promise_type {
    Eager get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
};

Eager lock_on_loop(benchmark::State& state, sync::AsyncMutex& mutex,
                   asio::io_context::executor_type executor, std::uint64_t& counter) {
  for (auto _ : state) {
    const sync::AsyncMutex::Guard guard = co_await mutex.lock_on(executor);
    benchmark::DoNotOptimize(++counter);
  }
}

void mutex_uncontended_lock_on(benchmark::State& state) {
  asio::io_context context(1);
  sync::AsyncMutex mutex;
  std::uint64_t counter = 0;
  // Never contended, so the coroutine never suspends and runs to its end inside this call.
  lock_on_loop(state, mutex, context.get_executor(), counter);
  if (counter != static_cast<std::uint64_t>(state.iterations())) {
    state.SkipWithError("the coroutine lost count");
  }
}

void mutex_uncontended_std(benchmark::State& state) {
  std::mutex mutex;
  std::uint64_t counter = 0;
  for (auto _ : state) {
    const std::lock_guard lock(mutex);
    benchmark::DoNotOptimize(++counter);
  }
}

// ---- a lock held across a wait, beside unrelated waits ----
//
// 200 operations each hold the lock across a 200 us wait; 2,000 others wait 200 us without it.
// Two threads run them all.
constexpr int locked_ops = 200;
constexpr int free_ops = 2'000;
constexpr auto op_wait = 200us;

asio::awaitable<void> wait_on_timer(std::chrono::microseconds delay) {
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(asio::use_awaitable);
}

void held_across_wait_async(benchmark::State& state) {
  for (auto _ : state) {
    asio::thread_pool pool(2);
    sync::AsyncMutex mutex;
    int inside = 0;  // guarded by the mutex
    std::atomic<int> done{0};
    for (int i = 0; i < locked_ops + free_ops; ++i) {
      const bool locked = i % ((locked_ops + free_ops) / locked_ops) == 0;
      asio::co_spawn(
          pool,
          [&, locked]() -> asio::awaitable<void> {
            if (locked) {
              const sync::AsyncMutex::Guard guard = co_await mutex.lock();
              ++inside;
              co_await wait_on_timer(op_wait);
            } else {
              co_await wait_on_timer(op_wait);
            }
            done.fetch_add(1, std::memory_order_relaxed);
          },
          asio::detached);
    }
    pool.join();
    if (inside != locked_ops || done.load() != locked_ops + free_ops) {
      state.SkipWithError("operations lost");
    }
  }
}

void held_across_wait_std(benchmark::State& state) {
  for (auto _ : state) {
    asio::thread_pool pool(2);
    std::mutex mutex;
    int inside = 0;  // guarded by the mutex
    std::atomic<int> done{0};
    for (int i = 0; i < locked_ops + free_ops; ++i) {
      const bool locked = i % ((locked_ops + free_ops) / locked_ops) == 0;
      asio::post(pool, [&, locked] {
        if (locked) {
          const std::lock_guard lock(mutex);
          ++inside;
          std::this_thread::sleep_for(op_wait);
        } else {
          std::this_thread::sleep_for(op_wait);
        }
        done.fetch_add(1, std::memory_order_relaxed);
      });
    }
    pool.join();
    if (inside != locked_ops || done.load() != locked_ops + free_ops) {
      state.SkipWithError("operations lost");
    }
  }
}

// ---- sequencing 1 M trivial operations from 4 submitters ----

constexpr int submitters = 4;
constexpr std::uint64_t sequenced_ops = 1'000'000;

// A trivial asynchronous operation: checks that none overlaps another, and counts itself.
struct Tally {
  std::atomic<bool> inside{false};
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::uint64_t> overlaps{0};

  asio::awaitable<void> operation() {
    if (inside.exchange(true, std::memory_order_acquire)) {
      overlaps.fetch_add(1, std::memory_order_relaxed);
    }
    inside.store(false, std::memory_order_release);
    done.fetch_add(1, std::memory_order_relaxed);
    co_return;
  }
};

// Runs `submit()` from 4 threads, sequenced_ops / 4 times each, onto a 2-thread io_context;
// `make(context, tally)` makes `submit`, which owns what sequences the operations.
template <class Make>
void sequence_from_submitters(benchmark::State& state, Make make) {
  for (auto _ : state) {
    asio::io_context context(2);
    auto work = asio::make_work_guard(context);
    std::vector<std::thread> runners;
    for (int i = 0; i < 2; ++i)
      runners.emplace_back([&] { context.run(); });
    Tally tally;
    {
      const auto submit = make(context, tally);
      {
        std::vector<std::jthread> threads;
        for (int t = 0; t < submitters; ++t) {
          threads.emplace_back([&] {
            for (std::uint64_t i = 0; i < sequenced_ops / submitters; ++i)
              submit();
          });
        }
      }
      work.reset();
      for (auto& runner : runners)
        runner.join();
    }
    if (tally.done.load() != sequenced_ops || tally.overlaps.load() != 0) {
      state.SkipWithError("operations lost or overlapping");
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(sequenced_ops));
}

void sequencer_ops(benchmark::State& state) {
  sequence_from_submitters(state, [](asio::io_context& context, Tally& tally) {
    return [&context, &tally, sequencer = std::make_unique<sync::TaskSequencer>()] {
      asio::co_spawn(context, sequencer->run([&tally] { return tally.operation(); }),
                     asio::detached);
    };
  });
}

void strand_ops(benchmark::State& state) {
  sequence_from_submitters(state, [](asio::io_context& context, Tally& tally) {
    return [&tally, strand = asio::make_strand(context)] {
      asio::co_spawn(strand, tally.operation(), asio::detached);
    };
  });
}

// ---- an asynchronous sink against a blocking one ----

constexpr std::uint64_t requests = 10'000;

void sink_async(benchmark::State& state) {
  for (auto _ : state) {
    std::atomic<std::uint64_t> served{0};
    Pipeline p({.io_threads = 2});
    p.source([next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
      if (next == requests) return std::nullopt;
      return next++;
    }) |
        sink(
            [&](std::uint64_t) -> asio::awaitable<void> {
              co_await wait_on_timer(1ms);
              served.fetch_add(1, std::memory_order_relaxed);
            },
            {.mode = Mode::parallel, .workers = 2, .in_flight = 64});
    p.run();
    if (served.load() != requests) state.SkipWithError("requests lost");
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(requests));
}

void sink_blocking(benchmark::State& state) {
  for (auto _ : state) {
    std::atomic<std::uint64_t> served{0};
    Pipeline p;
    p.source([next = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
      if (next == requests) return std::nullopt;
      return next++;
    }) |
        sink(
            [&](std::uint64_t) {
              std::this_thread::sleep_for(1ms);
              served.fetch_add(1, std::memory_order_relaxed);
            },
            {.mode = Mode::parallel, .workers = 2});
    p.run();
    if (served.load() != requests) state.SkipWithError("requests lost");
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(requests));
}

void register_benchmarks() {
  using benchmark::RegisterBenchmark;
  RegisterBenchmark("mutex/uncontended/conveyor_async_mutex", mutex_uncontended_awaitable<false>);
  RegisterBenchmark("mutex/uncontended/conveyor_async_mutex_lock_into",
                    mutex_uncontended_awaitable<true>);
  RegisterBenchmark("mutex/uncontended/conveyor_async_mutex_lock_on", mutex_uncontended_lock_on);
  RegisterBenchmark("mutex/uncontended/std_mutex", mutex_uncontended_std);
  RegisterBenchmark("mutex/uncontended/asio_awaitable_empty_call", awaitable_call_empty);
  RegisterBenchmark("mutex/held_across_wait/conveyor_async_mutex", held_across_wait_async)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  RegisterBenchmark("mutex/held_across_wait/std_mutex_blocking", held_across_wait_std)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  RegisterBenchmark("sequence/1M_ops_4_submitters/conveyor_task_sequencer", sequencer_ops)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  RegisterBenchmark("sequence/1M_ops_4_submitters/asio_strand", strand_ops)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  RegisterBenchmark("sink/10k_requests_1ms/conveyor_async_in_flight_64", sink_async)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  RegisterBenchmark("sink/10k_requests_1ms/blocking", sink_blocking)
      ->UseRealTime()
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
}

std::vector<Comparison> comparisons() {
  constexpr auto time = Figure::time;
  constexpr auto throughput = Figure::items_per_second;
  return {
      {"AsyncMutex uncontended, co_await lock() in asio::awaitable",
       "mutex/uncontended/conveyor_async_mutex", "mutex/uncontended/std_mutex", time, std::nullopt},
      {"AsyncMutex uncontended, co_await lock(guard) in asio::awaitable",
       "mutex/uncontended/conveyor_async_mutex_lock_into", "mutex/uncontended/std_mutex", time,
       2.0},
      {"AsyncMutex uncontended, co_await lock_on() in a plain coroutine",
       "mutex/uncontended/conveyor_async_mutex_lock_on", "mutex/uncontended/std_mutex", time, 2.0},
      {"co_await lock() against an empty asio::awaitable call",
       "mutex/uncontended/conveyor_async_mutex", "mutex/uncontended/asio_awaitable_empty_call",
       time, std::nullopt},
      {"lock held across a wait, beside unrelated waits",
       "mutex/held_across_wait/conveyor_async_mutex", "mutex/held_across_wait/std_mutex_blocking",
       time, std::nullopt},
      {"TaskSequencer, 1 M ops from 4 submitters",
       "sequence/1M_ops_4_submitters/conveyor_task_sequencer",
       "sequence/1M_ops_4_submitters/asio_strand", throughput, 1.0},
      {"async sink, 10k requests of 1 ms, in_flight 64",
       "sink/10k_requests_1ms/conveyor_async_in_flight_64", "sink/10k_requests_1ms/blocking",
       throughput, 30.0},
  };
}

}  // namespace
}  // namespace conveyor::bench

int main(int argc, char** argv) {
  using namespace conveyor::bench;
  end_single_threaded_state();
  return run_benchmarks(argc, argv, register_benchmarks, comparisons);
}
