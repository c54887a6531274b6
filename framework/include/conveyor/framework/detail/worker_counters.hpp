// WorkerCounters: what one worker of a stage has done, kept off every shared line.
//
// Each worker writes only its own counters, so a count is a plain load and store (no
// read-modify-write, no contended line); readers (`Pipeline::stats()`, a metrics scrape) sum the
// workers' counters whenever they like. The one exception is `errors`: an asynchronous stage's
// coroutines that fail after their worker left count themselves, on I/O threads, so it is a
// read-modify-write (errors are rare).
//
// Memory ordering: every counter is an atomic written and read relaxed. A snapshot
// taken while the pipeline runs may mix values from slightly different moments; one taken after
// `run()` returns is exact, because joining the workers and the I/O threads (`IoPool::finish()`
// in `wait()`) orders their last stores before it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "conveyor/framework/stats.hpp"
#include "conveyor/sync/detail/ticks.hpp"

namespace conveyor::detail {

// A counter that any number of threads may add to; for rare events.
class SharedCounter {
 public:
  void add(std::uint64_t amount) noexcept { value_.fetch_add(amount, std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t load() const noexcept {
    return value_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// A counter with one writer and any number of readers.
class RelaxedCounter {
 public:
  void add(std::uint64_t amount) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t load() const noexcept {
    return value_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// The item-duration buckets' upper bounds in ticks, computed once.
const std::array<std::uint64_t, item_duration_buckets.size()>& duration_bucket_ticks() noexcept;

struct alignas(64) WorkerCounters {
  RelaxedCounter items_in;
  RelaxedCounter items_out;
  SharedCounter errors;  // the worker, and its coroutines once it has left
  RelaxedCounter busy_ticks;
  RelaxedCounter blocked_push_ticks;
  RelaxedCounter blocked_pop_ticks;
  std::array<RelaxedCounter, item_duration_buckets.size() + 1> duration_counts;
  RelaxedCounter duration_ticks;

  // `items` items took `elapsed` ticks together; each is counted at their mean.
  void record_items(std::uint64_t elapsed, std::uint64_t items) noexcept {
    if (items == 0) return;
    const std::uint64_t each = elapsed / items;
    const auto& bounds = duration_bucket_ticks();
    std::size_t bucket = 0;
    while (bucket < bounds.size() && each > bounds[bucket])
      ++bucket;
    duration_counts[bucket].add(items);
    duration_ticks.add(elapsed);
  }
};

// Adds a worker's counters into a stage's snapshot.
void add_to(StageStats& stats, const WorkerCounters& counters);

}  // namespace conveyor::detail
