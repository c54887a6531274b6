// conveyor::sync against its peers, in one binary: each scenario is written once, as a template
// over an adapter (sync_adapters.hpp), and runs the same work for every library. After the Google
// Benchmark table the binary prints ours/peer ratios against the targets of the sync primitives.
//
// Options: those of bench_main.hpp (--ratios_json=<file>) and Google Benchmark's own.
//
// Threaded scenarios spawn their partner threads inside the benchmark function (once per run) and
// stop them with an end-of-stream item after the timed loop. Every item popped is counted and
// summed, and the totals are compared with what was pushed: a queue that loses, duplicates or
// (single-producer) reorders items reports an error instead of a time.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "bench_main.hpp"
#include "ratio_reporter.hpp"
#include "sync_adapters.hpp"

namespace conveyor::bench {
namespace {

constexpr Item end_of_stream = std::numeric_limits<Item>::max();
constexpr std::size_t bulk_batch = 64;

// 1 + 2 + ... + n, modulo 2^64 like the running sums it is compared with.
constexpr Item sum_up_to(Item n) {
  return n % 2 == 0 ? (n / 2) * (n + 1) : n * ((n + 1) / 2);
}

// What one consumer saw. Padded: each consumer thread owns one.
struct alignas(64) Tally {
  Item count = 0;
  Item sum = 0;
  Item out_of_order = 0;
  Item next_expected = 1;

  void add(Item value) {
    ++count;
    sum += value;
    out_of_order += value != next_expected ? 1 : 0;
    next_expected = value + 1;
  }
};

// Compares what the consumers saw with the `producers` streams 1..pushed[i] that were pushed.
void settle(benchmark::State& state, const Tally* tallies, std::size_t consumers,
            const Item* pushed, std::size_t producers, bool check_order) {
  Item count = 0;
  Item sum = 0;
  Item out_of_order = 0;
  for (std::size_t i = 0; i < consumers; ++i) {
    count += tallies[i].count;
    sum += tallies[i].sum;
    out_of_order += tallies[i].out_of_order;
  }
  Item expected_count = 0;
  Item expected_sum = 0;
  for (std::size_t i = 0; i < producers; ++i) {
    expected_count += pushed[i];
    expected_sum += sum_up_to(pushed[i]);
  }
  if (count != expected_count) {
    state.SkipWithError("items were lost or duplicated: popped count != pushed count");
  } else if (sum != expected_sum) {
    state.SkipWithError("items were corrupted: popped sum != pushed sum");
  } else if (check_order && out_of_order != 0) {
    state.SkipWithError("a single-producer stream came out of order");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(expected_count));
}

// ---- how a scenario waits on a queue ----

struct Blocking {
  template <class Queue>
  static bool put(Queue& queue, Item value) {
    return queue.push(value);
  }
  template <class Queue>
  static bool take(Queue& queue, Item& value) {
    return queue.pop(value);
  }
};

// Spins on the try_ forms, with back_off between attempts.
struct Spinning {
  template <class Queue>
  static bool put(Queue& queue, Item value) {
    for (int round = 0; !queue.try_push(value); ++round)
      back_off(round);
    return true;
  }
  template <class Queue>
  static bool take(Queue& queue, Item& value) {
    for (int round = 0; !queue.try_pop(value); ++round)
      back_off(round);
    return true;
  }
};

// ---- semaphores ----

// One thread, one token: acquire then release, so neither call ever waits.
template <class Semaphore>
void semaphore_uncontended(benchmark::State& state) {
  Semaphore semaphore(1);
  for (auto _ : state) {
    semaphore.acquire();
    semaphore.release();
  }
  if (!semaphore.try_acquire() || semaphore.try_acquire()) {
    state.SkipWithError("the semaphore does not hold exactly the one token it started with");
  }
}

// Two threads hand a token back and forth; one iteration is one round trip.
template <class Semaphore>
void semaphore_ping_pong(benchmark::State& state) {
  // Apart, so that neither semaphore shares a cache line with the other or with `stop`.
  alignas(64) Semaphore to_partner(0);
  alignas(64) Semaphore to_main(0);
  alignas(64) std::atomic<bool> stop{false};
  std::int64_t answered = 0;  // written by the partner, read after its join
  std::jthread partner([&] {
    std::int64_t round_trips = 0;
    for (;;) {
      to_partner.acquire();
      // Acquire pairs with the release store below, made before the last token was released.
      if (stop.load(std::memory_order_acquire)) break;
      ++round_trips;
      to_main.release();
    }
    answered = round_trips;
  });
  for (auto _ : state) {
    to_partner.release();
    to_main.acquire();
  }
  stop.store(true, std::memory_order_release);
  to_partner.release();
  partner.join();
  if (answered != static_cast<std::int64_t>(state.iterations())) {
    state.SkipWithError("the partner answered a different number of round trips");
  }
  state.SetItemsProcessed(answered);
}

// ---- queues ----

// One producer (the timed loop) and one consumer thread; one item per iteration.
template <class Queue, class Wait>
void spsc_stream(benchmark::State& state, std::size_t capacity) {
  Queue queue(capacity);
  Tally tally;
  std::jthread consumer([&] {
    Item value = 0;
    while (Wait::take(queue, value) && value != end_of_stream)
      tally.add(value);
  });
  Item pushed = 0;
  for (auto _ : state) {
    if (!Wait::put(queue, pushed + 1)) {
      state.SkipWithError("push was refused");
      break;
    }
    ++pushed;
  }
  Wait::put(queue, end_of_stream);
  consumer.join();
  settle(state, &tally, 1, &pushed, 1, true);
}

// As spsc_stream, with the bulk calls: one batch of `bulk_batch` items per iteration.
template <class Queue>
void spsc_bulk(benchmark::State& state, std::size_t capacity) {
  Queue queue(capacity);
  Tally tally;
  std::jthread consumer([&] {
    std::array<Item, bulk_batch> batch{};
    for (;;) {
      const std::size_t popped = queue.pop_bulk(batch.data(), batch.size());
      if (popped == 0) return;
      for (std::size_t i = 0; i < popped; ++i) {
        if (batch[i] == end_of_stream) return;
        tally.add(batch[i]);
      }
    }
  });
  std::array<Item, bulk_batch> batch{};
  Item pushed = 0;
  for (auto _ : state) {
    for (Item& value : batch)
      value = ++pushed;
    if (!queue.push_bulk(batch.data(), batch.size())) {
      state.SkipWithError("push_bulk was refused");
      pushed -= batch.size();
      break;
    }
  }
  const Item end = end_of_stream;
  queue.push_bulk(&end, 1);
  consumer.join();
  settle(state, &tally, 1, &pushed, 1, true);
}

// Two producers (the timed loop and a helper that pushes until told to stop) and two consumers,
// all blocking. Throughput counts the items of both producers.
template <class Queue>
void mpmc_stream(benchmark::State& state, std::size_t capacity) {
  constexpr std::size_t consumers = 2;
  Queue queue(capacity);
  std::array<Tally, consumers> tallies{};
  alignas(64) std::atomic<bool> started{false};
  alignas(64) std::atomic<bool> stopping{false};
  std::array<Item, 2> pushed{};  // [0] by the timed loop, [1] by the helper; read after the joins

  std::vector<std::jthread> threads;
  for (std::size_t i = 0; i < consumers; ++i) {
    threads.emplace_back([&queue, &tally = tallies[i]] {
      Item value = 0;
      while (queue.pop(value) && value != end_of_stream)
        tally.add(value);
    });
  }
  std::jthread helper([&] {
    // Acquire pairs with the release store just before the timed loop (which orders nothing the
    // helper needs; the wait only keeps it from pushing before the clock starts).
    started.wait(false, std::memory_order_acquire);
    Item count = 0;
    // Relaxed: the flag only says when to stop; the join orders `count`.
    while (!stopping.load(std::memory_order_relaxed) && queue.push(count + 1))
      ++count;
    pushed[1] = count;
  });

  started.store(true, std::memory_order_release);
  started.notify_one();
  Item count = 0;
  for (auto _ : state) {
    if (!queue.push(count + 1)) {
      state.SkipWithError("push was refused");
      break;
    }
    ++count;
  }
  pushed[0] = count;
  stopping.store(true, std::memory_order_relaxed);
  helper.join();
  for (std::size_t i = 0; i < consumers; ++i)
    queue.push(end_of_stream);
  for (std::jthread& thread : threads)
    thread.join();
  settle(state, tallies.data(), consumers, pushed.data(), pushed.size(), false);
}

// ---- registration ----

constexpr std::size_t slots = 1024;

void register_benchmarks() {
  using benchmark::RegisterBenchmark;
  const auto single = [](benchmark::internal::Benchmark* benchmark) {
    benchmark->Unit(benchmark::kNanosecond);
  };
  const auto threaded = [](benchmark::internal::Benchmark* benchmark) {
    benchmark->Unit(benchmark::kNanosecond)->UseRealTime();
  };

  single(RegisterBenchmark("semaphore/uncontended/conveyor",
                           semaphore_uncontended<ConveyorSemaphore>));
  single(RegisterBenchmark("semaphore/uncontended/moodycamel",
                           semaphore_uncontended<MoodycamelSemaphore>));
  single(RegisterBenchmark("semaphore/uncontended/std", semaphore_uncontended<StdSemaphore>));

  threaded(
      RegisterBenchmark("semaphore/ping_pong/conveyor", semaphore_ping_pong<ConveyorSemaphore>));
  threaded(RegisterBenchmark("semaphore/ping_pong/moodycamel",
                             semaphore_ping_pong<MoodycamelSemaphore>));
  threaded(RegisterBenchmark("semaphore/ping_pong/std", semaphore_ping_pong<StdSemaphore>));

  threaded(RegisterBenchmark("spsc/blocking_1024/conveyor",
                             spsc_stream<ConveyorSpscQueue, Blocking>, slots));
  threaded(RegisterBenchmark("spsc/blocking_1024/moodycamel_circular_buffer",
                             spsc_stream<MoodycamelCircularBuffer, Blocking>, slots));
  threaded(
      RegisterBenchmark("spsc/blocking_1024/tbb", spsc_stream<TbbBoundedQueue, Blocking>, slots));

  threaded(
      RegisterBenchmark("spsc/try_1024/conveyor", spsc_stream<ConveyorSpscQueue, Spinning>, slots));
  threaded(RegisterBenchmark("spsc/try_1024/boost_lockfree",
                             spsc_stream<BoostSpscQueue<slots>, Spinning>, slots));
  threaded(RegisterBenchmark("spsc/try_1024/moodycamel_reader_writer_queue",
                             spsc_stream<MoodycamelReaderWriterQueue, Spinning>, slots));

  threaded(RegisterBenchmark("spsc/bulk64_1024/conveyor", spsc_bulk<ConveyorSpscQueue>, slots));
  threaded(RegisterBenchmark("spsc/bulk64_1024/boost_lockfree", spsc_bulk<BoostSpscQueue<slots>>,
                             slots));

  threaded(
      RegisterBenchmark("mpmc_2x2/blocking_1024/conveyor", mpmc_stream<ConveyorMpmcQueue>, slots));
  threaded(RegisterBenchmark("mpmc_2x2/blocking_1024/tbb", mpmc_stream<TbbBoundedQueue>, slots));

  threaded(RegisterBenchmark("spsc/handoff_1/conveyor", spsc_stream<ConveyorSpscQueue, Blocking>,
                             std::size_t{1}));
  threaded(RegisterBenchmark("spsc/handoff_1/moodycamel_circular_buffer",
                             spsc_stream<MoodycamelCircularBuffer, Blocking>, std::size_t{1}));
  threaded(RegisterBenchmark("spsc/handoff_1/tbb", spsc_stream<TbbBoundedQueue, Blocking>,
                             std::size_t{1}));
}

std::vector<Comparison> comparisons() {
  constexpr auto time = Figure::time;
  constexpr auto throughput = Figure::items_per_second;
  return {
      // The targets.
      {"semaphore uncontended acquire+release", "semaphore/uncontended/conveyor",
       "semaphore/uncontended/moodycamel", time, 0.8},
      {"semaphore uncontended acquire+release", "semaphore/uncontended/conveyor",
       "semaphore/uncontended/std", time, 0.1},
      {"semaphore ping-pong round trip", "semaphore/ping_pong/conveyor",
       "semaphore/ping_pong/moodycamel", time, 1.0},
      {"SPSC blocking push/pop, 1024 slots", "spsc/blocking_1024/conveyor",
       "spsc/blocking_1024/moodycamel_circular_buffer", throughput, 3.0},
      {"SPSC blocking push/pop, 1024 slots", "spsc/blocking_1024/conveyor",
       "spsc/blocking_1024/tbb", throughput, 10.0},
      {"SPSC try_push/try_pop, 1024 slots", "spsc/try_1024/conveyor",
       "spsc/try_1024/boost_lockfree", throughput, 1.0},
      // For information.
      {"semaphore ping-pong round trip", "semaphore/ping_pong/conveyor", "semaphore/ping_pong/std",
       time, std::nullopt},
      {"SPSC try_push/try_pop, 1024 slots", "spsc/try_1024/conveyor",
       "spsc/try_1024/moodycamel_reader_writer_queue", throughput, std::nullopt},
      {"SPSC bulk, batches of 64, 1024 slots", "spsc/bulk64_1024/conveyor",
       "spsc/bulk64_1024/boost_lockfree", throughput, std::nullopt},
      {"MPMC 2x2 blocking, 1024 slots", "mpmc_2x2/blocking_1024/conveyor",
       "mpmc_2x2/blocking_1024/tbb", throughput, std::nullopt},
      {"SPSC hand-off, 1 slot", "spsc/handoff_1/conveyor",
       "spsc/handoff_1/moodycamel_circular_buffer", throughput, std::nullopt},
      {"SPSC hand-off, 1 slot", "spsc/handoff_1/conveyor", "spsc/handoff_1/tbb", throughput,
       std::nullopt},
  };
}

}  // namespace
}  // namespace conveyor::bench

int main(int argc, char** argv) {
  using namespace conveyor::bench;
  return run_benchmarks(argc, argv, register_benchmarks, comparisons);
}
