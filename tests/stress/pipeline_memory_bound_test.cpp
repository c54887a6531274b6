// Backpressure bounds memory: with a slow sink and a source of ten million items, the items alive
// at any moment never exceed what the channels hold plus one per worker (one parcel per worker
// with batching), whatever the shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <utility>

#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/stage.hpp"
#include "stress.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Channel;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::testing::Watchdog;

// An item that counts how many items hold a value at once (moved-from ones do not).
class Live {
 public:
  explicit Live(std::uint64_t value) : value_(value), holds_(true) {
    const std::int64_t now = alive_.fetch_add(1, std::memory_order_relaxed) + 1;
    std::int64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  Live(Live&& other) noexcept : value_(other.value_), holds_(std::exchange(other.holds_, false)) {}
  Live(const Live&) = delete;
  Live& operator=(const Live&) = delete;
  Live& operator=(Live&&) = delete;
  ~Live() {
    if (holds_) alive_.fetch_sub(1, std::memory_order_relaxed);
  }

  [[nodiscard]] std::uint64_t value() const noexcept { return value_; }

  static void reset() {
    alive_.store(0);
    peak_.store(0);
  }
  static std::int64_t alive() { return alive_.load(); }
  static std::int64_t peak() { return peak_.load(); }

 private:
  static inline std::atomic<std::int64_t> alive_{0};
  static inline std::atomic<std::int64_t> peak_{0};
  std::uint64_t value_;
  bool holds_;
};

// A sink slower than the rest of the pipeline: a few hundred nanoseconds per item.
void slow_down() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(200);
  while (std::chrono::steady_clock::now() < until) {
  }
}

struct BoundCase {
  Mode sink_mode;
  std::size_t batch;
};

class MemoryBoundTest : public ::testing::TestWithParam<BoundCase> {};

TEST_P(MemoryBoundTest, LiveItemsStayWithinTheChannelsAndWorkers) {
  Watchdog watchdog(std::chrono::seconds(300));
  const BoundCase c = GetParam();
  Live::reset();
  const std::uint64_t count = conveyor::testing::memory_bound_items();
  constexpr std::size_t middle_workers = 2;
  constexpr std::size_t middle_capacity = 32;
  constexpr std::size_t sink_capacity = 16;
  std::uint64_t next = 0;
  std::uint64_t received = 0;
  {
    Pipeline p;
    p.source([&]() -> std::optional<Live> {
      if (next == count) return std::nullopt;
      return Live(next++);
    }) |
        stage([](Live item) { return item; }, {.mode = Mode::parallel,
                                               .workers = middle_workers,
                                               .channel = Channel::queue(middle_capacity),
                                               .batch = c.batch}) |
        sink(
            [&](Live) {
              ++received;
              slow_down();
            },
            {.mode = c.sink_mode, .channel = Channel::queue(sink_capacity), .batch = c.batch});
    p.run();
  }
  EXPECT_EQ(received, count);
  EXPECT_EQ(Live::alive(), 0);
  // Channels, in items: source -> 2 workers, 32 parcels each; 2 workers -> sink, 16 each.
  const std::int64_t channels = static_cast<std::int64_t>(
      (middle_workers * middle_capacity + middle_workers * sink_capacity) * c.batch);
  // One parcel in the hands of each worker: the source's (building), the middle ones', the sink's.
  const std::int64_t workers = static_cast<std::int64_t>((1 + middle_workers + 1) * c.batch);
  EXPECT_LE(Live::peak(), channels + workers)
      << "peak " << Live::peak() << " > " << channels << " in channels + " << workers
      << " in workers' hands";
  EXPECT_GT(Live::peak(), 1);
}

INSTANTIATE_TEST_SUITE_P(Shapes, MemoryBoundTest,
                         ::testing::Values(BoundCase{Mode::serial_out_of_order, 1},
                                           BoundCase{Mode::serial_in_order, 1},
                                           BoundCase{Mode::serial_out_of_order, 4},
                                           BoundCase{Mode::serial_in_order, 4}));

}  // namespace
