// Pipelines against tbb::parallel_pipeline, on the same work in the same binary: a serial_in_order
// source of integers, a parallel stage, and a serial_in_order sink that sums. The parallel stage
// does trivial work (the framework's overhead is what is measured) or about 2 us of hashing per
// item (how close the pipeline gets to two cores' worth against a single-threaded loop, and against
// two plain threads splitting the same loop, which is what two cores give here).
//
// `machine/core_to_core_round_trip` records context: what one cache line's round trip between two
// cores costs on this machine at this moment, which every hand-over between workers pays.
//
// With CONVEYOR_BENCH_PROMETHEUS, the 3-stage workload also runs with the Prometheus exporter
// attached (a PipelineMetrics observer behind a MetricsServer on loopback) while a client scrapes
// /metrics ten times a second, against the same workload without it.
//
// Every run checks the sum, so a pipeline that loses or duplicates an item reports an error
// instead of a time. Options: those of bench_main.hpp and Google Benchmark's own.
#include <benchmark/benchmark.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <pthread.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_main.hpp"
#include "conveyor/framework.hpp"

#ifdef CONVEYOR_BENCH_PROMETHEUS
#include "conveyor/prometheus/metrics_server.hpp"
#include "conveyor/prometheus/pipeline_metrics.hpp"
#include "http_get.hpp"
#endif

namespace conveyor::bench {
namespace {

constexpr std::uint64_t trivial_items = 500'000;
constexpr std::uint64_t heavy_items = 200'000;
constexpr double hops = 2;  // source -> stage -> sink

std::uint64_t mix(std::uint64_t value) noexcept {
  value ^= value >> 31;
  value *= 0x7fb5d329728ea185ULL;
  value ^= value >> 27;
  value *= 0x81dadef4bc2dd44dULL;
  return value ^ (value >> 33);
}

std::uint64_t trivial_work(std::uint64_t x) noexcept {
  return 2 * x + 1;
}

// Rounds of mix() that take about 2 us on this machine, measured once.
std::uint64_t heavy_rounds() {
  static const std::uint64_t rounds = [] {
    constexpr std::uint64_t probe = 2'000'000;
    std::uint64_t value = 1;
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < probe; ++i)
      value = mix(value);
    benchmark::DoNotOptimize(value);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return static_cast<std::uint64_t>(2e-6 / (seconds / probe));
  }();
  return rounds;
}

std::uint64_t heavy_work(std::uint64_t x) noexcept {
  const std::uint64_t rounds = heavy_rounds();
  std::uint64_t value = x;
  for (std::uint64_t i = 0; i < rounds; ++i)
    value = mix(value);
  return value;
}

template <class Work>
std::uint64_t expected_sum(std::uint64_t items, Work work) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < items; ++i)
    sum += work(i);
  return sum;
}

void finish(benchmark::State& state, std::uint64_t items, std::uint64_t sum, std::uint64_t expected,
            double seconds) {
  if (sum != expected) {
    state.SkipWithError("wrong sum: an item was lost or duplicated");
    return;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(items * state.iterations()));
  state.counters["ns_per_hop"] =
      seconds * 1e9 / (static_cast<double>(items * state.iterations()) * hops);
}

// What the exporter benchmark attaches to every pipeline: nothing, by default.
struct NoObserver {
  void attach(Pipeline& /*pipeline*/) {}
  [[nodiscard]] bool healthy() const { return true; }
};

// Where the pipeline's workers run: a thread each (the default), or tasks on a oneTBB arena of
// two threads (the cooperative executor), which keeps four workers from sharing two cores
// through the kernel's scheduler.
enum class Run { threads, arena };

// `fusion`: Fuse::always runs the parallel stage on the source's worker (StageOptions::fuse).
template <std::uint64_t (*Work)(std::uint64_t), class Attached = NoObserver,
          Run where = Run::threads, Fuse fusion = Fuse::automatic>
void conveyor_pipeline(benchmark::State& state, std::uint64_t items, std::size_t batch,
                       std::size_t capacity) {
  const std::uint64_t expected = expected_sum(items, Work);
  std::uint64_t sum = 0;
  double seconds = 0;
  Attached attached;
  for (auto _ : state) {
    sum = 0;
    const auto start = std::chrono::steady_clock::now();
    Pipeline p({.name = "bench",
                .executor = where == Run::arena ? Executor::tbb(2) : Executor::threads()});
    attached.attach(p);
    p.source([next = std::uint64_t{0}, items]() mutable -> std::optional<std::uint64_t> {
      if (next == items) return std::nullopt;
      return next++;
    }) |
        stage([](std::uint64_t x) { return Work(x); }, {.mode = Mode::parallel,
                                                        .workers = 2,
                                                        .channel = Channel::queue(capacity),
                                                        .batch = batch,
                                                        .fuse = fusion}) |
        sink([&sum](std::uint64_t x) { sum += x; },
             {.mode = Mode::serial_in_order, .channel = Channel::queue(capacity), .batch = batch});
    p.run();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (!attached.healthy()) {
    state.SkipWithError("a scrape of /metrics failed");
    return;
  }
  finish(state, items, sum, expected, seconds);
}

// Numbers in [first, end), as a pulled source.
auto numbers_from(std::uint64_t first, std::uint64_t end) {
  return [next = first, end]() mutable -> std::optional<std::uint64_t> {
    if (next == end) return std::nullopt;
    return next++;
  };
}

// The parallel stage of two workers every pipeline row has, after `input`.
template <std::uint64_t (*Work)(std::uint64_t)>
Flow<std::uint64_t> working_stage(const Flow<std::uint64_t>& input, std::size_t batch,
                                  std::size_t capacity) {
  return input |
         stage([](std::uint64_t x) { return Work(x); }, {.mode = Mode::parallel,
                                                         .workers = 2,
                                                         .channel = Channel::queue(capacity),
                                                         .batch = batch});
}

// Runs a pipeline per iteration, as `build(pipeline)` makes it, and returns the seconds they took
// in all.
template <class Build>
double time_pipelines(benchmark::State& state, Executor executor, Build&& build) {
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    Pipeline p({.name = "bench", .executor = executor});
    build(p);
    p.run();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return seconds;
}

// A sink that sums on each worker and adds its sum to `total` at the end of the stream.
struct SumPerWorker {
  std::atomic<std::uint64_t>* total;
  std::uint64_t partial = 0;
  void process(std::uint64_t x) { partial += x; }
  void flush() { total->fetch_add(partial, std::memory_order_relaxed); }
};

// The same work with a tee before two sinks: the in-order sink sums, and a second, unordered sink
// sums a copy of every item as well; with `fused`, on the parallel stage's workers.
template <std::uint64_t (*Work)(std::uint64_t), Run where = Run::threads, bool fused = false>
void conveyor_tee_pipeline(benchmark::State& state, std::uint64_t items, std::size_t batch,
                           std::size_t capacity) {
  const std::uint64_t expected = expected_sum(items, Work);
  std::uint64_t sum = 0;
  std::atomic<std::uint64_t> copies{0};
  StageOptions sink_options{.channel = Channel::queue(capacity), .batch = batch};
  StageOptions in_order = sink_options;
  in_order.mode = Mode::serial_in_order;
  if (fused) {
    sink_options.mode = Mode::parallel;
    sink_options.fuse = conveyor::Fuse::always;
  }
  const double seconds = time_pipelines(
      state, where == Run::arena ? Executor::tbb(2) : Executor::threads(), [&](Pipeline& p) {
        sum = 0;
        copies.store(0, std::memory_order_relaxed);
        working_stage<Work>(p.source(numbers_from(0, items)), batch, capacity) |
            conveyor::tee(
                conveyor::chain<std::uint64_t>() |
                    sink([&sum](std::uint64_t x) { sum += x; }, in_order),
                conveyor::chain<std::uint64_t>() | sink(SumPerWorker{&copies}, sink_options));
      });
  if (copies.load(std::memory_order_relaxed) != expected) {
    state.SkipWithError("the second branch's sum is wrong");
    return;
  }
  finish(state, items, sum, expected, seconds);
}

// The same work with a route after the parallel stage: the outputs of even inputs (2x + 1 is 1 mod
// 4) to one in-order sink, the rest to another, each summing what it gets.
template <std::uint64_t (*Work)(std::uint64_t)>
void conveyor_route_pipeline(benchmark::State& state, std::uint64_t items, std::size_t batch,
                             std::size_t capacity) {
  const std::uint64_t expected = expected_sum(items, Work);
  std::uint64_t evens = 0;
  std::uint64_t odds = 0;
  const StageOptions in_order{
      .mode = Mode::serial_in_order, .channel = Channel::queue(capacity), .batch = batch};
  const double seconds = time_pipelines(state, Executor::threads(), [&](Pipeline& p) {
    evens = 0;
    odds = 0;
    working_stage<Work>(p.source(numbers_from(0, items)), batch, capacity) |
        conveyor::route(
            conveyor::when([](std::uint64_t y) { return y % 4 == 1; },
                           conveyor::chain<std::uint64_t>() |
                               sink([&evens](std::uint64_t x) { evens += x; }, in_order)),
            conveyor::otherwise(conveyor::chain<std::uint64_t>() |
                                sink([&odds](std::uint64_t x) { odds += x; }, in_order)));
  });
  finish(state, items, evens + odds, expected, seconds);
}

// The same work from one source or from two merged (each half of the items), into the parallel
// stage and a serial sink that takes items as they come: a merged stream has no common order.
template <std::uint64_t (*Work)(std::uint64_t), bool merged>
void conveyor_merge_pipeline(benchmark::State& state, std::uint64_t items, std::size_t batch,
                             std::size_t capacity) {
  const std::uint64_t expected = expected_sum(items, Work);
  std::uint64_t sum = 0;
  const double seconds = time_pipelines(state, Executor::threads(), [&](Pipeline& p) {
    sum = 0;
    const Flow<std::uint64_t> input =
        merged ? conveyor::merge(p.source(numbers_from(0, items / 2)),
                                 p.source(numbers_from(items / 2, items)))
               : p.source(numbers_from(0, items));
    working_stage<Work>(input, batch, capacity) |
        sink([&sum](std::uint64_t x) { sum += x; },
             {.channel = Channel::queue(capacity), .batch = batch});
  });
  finish(state, items, sum, expected, seconds);
}

#ifdef CONVEYOR_BENCH_PROMETHEUS
// The exporter as a service runs it: metrics served on loopback and scraped ten times a second
// (Prometheus's default is every 15 s) for as long as the benchmark runs.
class Exporter {
 public:
  Exporter() : server_({.listen = "127.0.0.1:0"}) {
    server_.add(metrics_);
    scraper_ = std::thread([this] {
      while (!done_.load(std::memory_order_acquire)) {
        try {
          const auto response = conveyor::testing::http_get(server_.port(), "/metrics");
          if (response.status != 200) failed_scrapes_.fetch_add(1, std::memory_order_relaxed);
        } catch (const std::exception&) {
          failed_scrapes_.fetch_add(1, std::memory_order_relaxed);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;
  ~Exporter() {
    done_.store(true, std::memory_order_release);
    scraper_.join();
  }
  void attach(Pipeline& pipeline) { pipeline.add_observer(metrics_); }
  [[nodiscard]] bool healthy() const {
    return failed_scrapes_.load(std::memory_order_relaxed) == 0;
  }

 private:
  std::shared_ptr<prometheus::PipelineMetrics> metrics_ =
      std::make_shared<prometheus::PipelineMetrics>();
  prometheus::MetricsServer server_;
  std::atomic<bool> done_{false};
  std::atomic<int> failed_scrapes_{0};
  std::thread scraper_;
};
#endif

template <std::uint64_t (*Work)(std::uint64_t)>
void tbb_pipeline(benchmark::State& state, std::uint64_t items, std::size_t tokens) {
  const std::uint64_t expected = expected_sum(items, Work);
  std::uint64_t sum = 0;
  double seconds = 0;
  // This thread and a worker per further core, at least two threads in all. Only while oneTBB's
  // pipeline runs: global_control takes the smallest of the limits alive, and the cooperative
  // executor's arena, whose tasks run on oneTBB's workers while this thread waits, sets its own.
  const tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism,
                                        std::max(2U, std::thread::hardware_concurrency()));
  for (auto _ : state) {
    sum = 0;
    std::uint64_t next = 0;
    const auto start = std::chrono::steady_clock::now();
    tbb::parallel_pipeline(
        tokens,
        tbb::make_filter<void, std::uint64_t>(tbb::filter_mode::serial_in_order,
                                              [&](tbb::flow_control& control) -> std::uint64_t {
                                                if (next == items) {
                                                  control.stop();
                                                  return 0;
                                                }
                                                return next++;
                                              }) &
            tbb::make_filter<std::uint64_t, std::uint64_t>(
                tbb::filter_mode::parallel, [](std::uint64_t x) { return Work(x); }) &
            tbb::make_filter<std::uint64_t, void>(tbb::filter_mode::serial_in_order,
                                                  [&](std::uint64_t x) { sum += x; }));
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  finish(state, items, sum, expected, seconds);
}

template <std::uint64_t (*Work)(std::uint64_t)>
void single_thread_loop(benchmark::State& state, std::uint64_t items) {
  const std::uint64_t expected = expected_sum(items, Work);
  std::uint64_t sum = 0;
  double seconds = 0;
  for (auto _ : state) {
    sum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < items; ++i)
      sum += Work(i);
    benchmark::DoNotOptimize(sum);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  finish(state, items, sum, expected, seconds);
}

// The same work split over two plain threads, each summing every other item, with nothing handed
// over between them: what two cores give on this machine at this moment, the ceiling of any
// two-worker pipeline on the CPU-heavy work (two virtual CPUs do not always give twice one).
template <std::uint64_t (*Work)(std::uint64_t)>
void two_threads_loop(benchmark::State& state, std::uint64_t items) {
  const std::uint64_t expected = expected_sum(items, Work);
  std::uint64_t sum = 0;
  double seconds = 0;
  for (auto _ : state) {
    std::array<std::uint64_t, 2> halves{};
    const auto start = std::chrono::steady_clock::now();
    {
      std::array<std::jthread, 2> threads;
      for (std::size_t t = 0; t < threads.size(); ++t) {
        threads[t] = std::jthread([&halves, t, items] {
          std::uint64_t half = 0;
          for (std::uint64_t i = t; i < items; i += 2)
            half += Work(i);
          halves[t] = half;
        });
      }
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sum = halves[0] + halves[1];
  }
  finish(state, items, sum, expected, seconds);
}

// Context for the ratios, not a comparison: how long a cache line takes to go from one core to
// another and back, two threads pinned to cores 0 and 1 passing a counter. Every hand-over between
// workers pays this, and on a virtual machine it may change with where the host puts the virtual
// CPUs; the single-threaded loop does not pay it at all.
void core_to_core_round_trip(benchmark::State& state) {
  constexpr std::uint64_t round_trips = 100'000;
  if (std::thread::hardware_concurrency() < 2) {
    state.SkipWithError("needs two cores");
    return;
  }
  const auto pin = [](int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    // Unpinned if it fails: the figure is context, and still a round trip between two threads.
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  };
  double seconds = 0;
  for (auto _ : state) {
    // Odd values are the pinger's, even ones the ponger's; seq_cst is not needed, only the line's
    // trip: acquire loads and release stores.
    alignas(64) std::atomic<std::uint64_t> ball{0};
    std::thread ponger([&] {
      pin(1);
      for (std::uint64_t i = 0; i < round_trips; ++i) {
        while (ball.load(std::memory_order_acquire) != 2 * i + 1) {
        }
        ball.store(2 * i + 2, std::memory_order_release);
      }
    });
    pin(0);
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < round_trips; ++i) {
      ball.store(2 * i + 1, std::memory_order_release);
      while (ball.load(std::memory_order_acquire) != 2 * i + 2) {
      }
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ponger.join();
  }
  cpu_set_t all;
  CPU_ZERO(&all);
  for (unsigned core = 0; core < std::thread::hardware_concurrency(); ++core)
    CPU_SET(core, &all);
  (void)pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
  state.counters["ns_per_round_trip"] =
      seconds * 1e9 / (static_cast<double>(round_trips) * static_cast<double>(state.iterations()));
}

void register_benchmarks() {
  using benchmark::RegisterBenchmark;
  const auto timed = [](benchmark::internal::Benchmark* benchmark) {
    benchmark->Unit(benchmark::kMillisecond)->UseRealTime();
  };
  timed(RegisterBenchmark("machine/core_to_core_round_trip", core_to_core_round_trip));
  timed(RegisterBenchmark("pipeline/3_stages/conveyor", conveyor_pipeline<trivial_work>,
                          trivial_items, std::size_t{1}, std::size_t{1024}));
  timed(RegisterBenchmark("pipeline/3_stages_batched/conveyor", conveyor_pipeline<trivial_work>,
                          trivial_items, std::size_t{64}, std::size_t{64}));
  timed(RegisterBenchmark("pipeline/3_stages_batched/conveyor_tee",
                          conveyor_tee_pipeline<trivial_work>, trivial_items, std::size_t{64},
                          std::size_t{64}));
  timed(RegisterBenchmark("pipeline/3_stages_batched/conveyor_tee_fused",
                          conveyor_tee_pipeline<trivial_work, Run::threads, true>, trivial_items,
                          std::size_t{64}, std::size_t{64}));
  timed(RegisterBenchmark("pipeline/3_stages_batched/conveyor_tee_arena",
                          conveyor_tee_pipeline<trivial_work, Run::arena>, trivial_items,
                          std::size_t{64}, std::size_t{64}));
  timed(RegisterBenchmark("pipeline/3_stages/conveyor_route", conveyor_route_pipeline<trivial_work>,
                          trivial_items, std::size_t{1}, std::size_t{1024}));
  timed(RegisterBenchmark("pipeline/3_stages_batched/conveyor_route",
                          conveyor_route_pipeline<trivial_work>, trivial_items, std::size_t{64},
                          std::size_t{64}));
  timed(RegisterBenchmark("pipeline/3_stages_unordered/conveyor",
                          conveyor_merge_pipeline<trivial_work, false>, trivial_items,
                          std::size_t{1}, std::size_t{1024}));
  timed(RegisterBenchmark("pipeline/3_stages_unordered/conveyor_merge",
                          conveyor_merge_pipeline<trivial_work, true>, trivial_items,
                          std::size_t{1}, std::size_t{1024}));
  timed(RegisterBenchmark("pipeline/3_stages_unordered_batched/conveyor",
                          conveyor_merge_pipeline<trivial_work, false>, trivial_items,
                          std::size_t{64}, std::size_t{64}));
  timed(RegisterBenchmark("pipeline/3_stages_unordered_batched/conveyor_merge",
                          conveyor_merge_pipeline<trivial_work, true>, trivial_items,
                          std::size_t{64}, std::size_t{64}));
  timed(RegisterBenchmark("pipeline/3_stages/conveyor_fused",
                          conveyor_pipeline<trivial_work, NoObserver, Run::threads, Fuse::always>,
                          trivial_items, std::size_t{1}, std::size_t{1024}));
  timed(RegisterBenchmark("pipeline/3_stages/conveyor_arena",
                          conveyor_pipeline<trivial_work, NoObserver, Run::arena>, trivial_items,
                          std::size_t{1}, std::size_t{1024}));
  timed(RegisterBenchmark("pipeline/3_stages_batched/conveyor_arena",
                          conveyor_pipeline<trivial_work, NoObserver, Run::arena>, trivial_items,
                          std::size_t{64}, std::size_t{64}));
#ifdef CONVEYOR_BENCH_PROMETHEUS
  timed(RegisterBenchmark("pipeline/3_stages/conveyor_with_exporter",
                          conveyor_pipeline<trivial_work, Exporter>, trivial_items, std::size_t{1},
                          std::size_t{1024}));
  timed(RegisterBenchmark("pipeline/3_stages_batched/conveyor_with_exporter",
                          conveyor_pipeline<trivial_work, Exporter>, trivial_items, std::size_t{64},
                          std::size_t{64}));
#endif
  for (std::size_t tokens : {2U, 4U, 8U, 16U, 64U}) {
    timed(RegisterBenchmark(("pipeline/3_stages/tbb_tokens_" + std::to_string(tokens)).c_str(),
                            tbb_pipeline<trivial_work>, trivial_items, tokens));
  }
  timed(RegisterBenchmark("pipeline/cpu_heavy/conveyor", conveyor_pipeline<heavy_work>, heavy_items,
                          std::size_t{1}, std::size_t{1024}));
  timed(RegisterBenchmark("pipeline/cpu_heavy_batched/conveyor", conveyor_pipeline<heavy_work>,
                          heavy_items, std::size_t{64}, std::size_t{64}));
  timed(RegisterBenchmark("pipeline/cpu_heavy/conveyor_arena",
                          conveyor_pipeline<heavy_work, NoObserver, Run::arena>, heavy_items,
                          std::size_t{1}, std::size_t{1024}));
  timed(RegisterBenchmark("pipeline/cpu_heavy/single_thread", single_thread_loop<heavy_work>,
                          heavy_items));
  timed(RegisterBenchmark("pipeline/cpu_heavy/two_plain_threads", two_threads_loop<heavy_work>,
                          heavy_items));
  for (std::size_t tokens : {4U, 16U}) {
    timed(RegisterBenchmark(("pipeline/cpu_heavy/tbb_tokens_" + std::to_string(tokens)).c_str(),
                            tbb_pipeline<heavy_work>, heavy_items, tokens));
  }
}

std::vector<Comparison> comparisons() {
  constexpr auto throughput = Figure::items_per_second;
  return {
      {"3 stages, no batching", "pipeline/3_stages/conveyor", "pipeline/3_stages/tbb_tokens_*",
       throughput, 2.0},
      {"3 stages, no batching, the stage fused into the source", "pipeline/3_stages/conveyor_fused",
       "pipeline/3_stages/tbb_tokens_*", throughput, 2.0},
      {"3 stages, batching on", "pipeline/3_stages_batched/conveyor",
       "pipeline/3_stages/tbb_tokens_*", throughput, 10.0},
      {"3 stages batched, a tee into two sinks", "pipeline/3_stages_batched/conveyor_tee",
       "pipeline/3_stages_batched/conveyor", throughput, 0.8},
      {"3 stages batched, a tee into two sinks, the unordered one fused into the stage",
       "pipeline/3_stages_batched/conveyor_tee_fused", "pipeline/3_stages_batched/conveyor",
       throughput, std::nullopt},
      {"3 stages batched, a tee into two sinks, cooperative executor",
       "pipeline/3_stages_batched/conveyor_tee_arena", "pipeline/3_stages_batched/conveyor_arena",
       throughput, std::nullopt},
      {"3 stages, a route into two in-order sinks", "pipeline/3_stages/conveyor_route",
       "pipeline/3_stages/conveyor", throughput, 0.9},
      {"3 stages batched, a route into two in-order sinks",
       "pipeline/3_stages_batched/conveyor_route", "pipeline/3_stages_batched/conveyor", throughput,
       0.9},
      {"3 stages, a merge of 2 sources", "pipeline/3_stages_unordered/conveyor_merge",
       "pipeline/3_stages_unordered/conveyor", throughput, 0.9},
      {"3 stages batched, a merge of 2 sources",
       "pipeline/3_stages_unordered_batched/conveyor_merge",
       "pipeline/3_stages_unordered_batched/conveyor", throughput, 0.9},
      {"3 stages, batching on, cooperative executor", "pipeline/3_stages_batched/conveyor_arena",
       "pipeline/3_stages/tbb_tokens_*", throughput, std::nullopt},
      {"CPU-heavy (2 us/item)", "pipeline/cpu_heavy/conveyor", "pipeline/cpu_heavy/single_thread",
       throughput, 1.8},
      {"CPU-heavy (2 us/item), batching on", "pipeline/cpu_heavy_batched/conveyor",
       "pipeline/cpu_heavy/single_thread", throughput, 1.8},
      {"CPU-heavy (2 us/item)", "pipeline/cpu_heavy/conveyor", "pipeline/cpu_heavy/tbb_tokens_*",
       throughput, std::nullopt},
      {"CPU-heavy (2 us/item), two plain threads: what two cores give",
       "pipeline/cpu_heavy/two_plain_threads", "pipeline/cpu_heavy/single_thread", throughput,
       std::nullopt},
      {"CPU-heavy (2 us/item), against two plain threads", "pipeline/cpu_heavy/conveyor",
       "pipeline/cpu_heavy/two_plain_threads", throughput, std::nullopt},
      {"3 stages, with the exporter scraped 10x/s", "pipeline/3_stages/conveyor_with_exporter",
       "pipeline/3_stages/conveyor", throughput, 0.95},
      {"3 stages batched, with the exporter scraped 10x/s",
       "pipeline/3_stages_batched/conveyor_with_exporter", "pipeline/3_stages_batched/conveyor",
       throughput, 0.95},
  };
}

}  // namespace
}  // namespace conveyor::bench

int main(int argc, char** argv) {
  using namespace conveyor::bench;
  return run_benchmarks(argc, argv, register_benchmarks, comparisons);
}
