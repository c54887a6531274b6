// Tallies in window mode: tumbling windows of processing time, read while workers count.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "conveyor/stages/tallies.hpp"
#include "stress.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::stages::LineCounts;
using conveyor::stages::LiveTotals;
using conveyor::stages::Record;
using conveyor::stages::Summary;
using conveyor::stages::Tallies;
using conveyor::stages::WindowOptions;
using namespace std::chrono_literals;

// Worker `worker` counts a batch of `records` records with this severity.
void batch(Tallies& tallies, std::size_t worker, std::uint64_t records, int severity = 6) {
  Summary& summary = tallies.summary(worker);
  Record record;
  record.severity = severity;
  record.program = "app";
  for (std::uint64_t i = 0; i < records; ++i)
    summary.add(record);
  LineCounts counts;
  counts.lines = records;
  counts.records = records;
  tallies.add_batch(worker, counts, LiveTotals::Counts{});
}

// Waits for the start of a window, so that what follows happens well inside it.
void next_window(std::chrono::milliseconds width) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto into = now % width;
  std::this_thread::sleep_for(width - into + 5ms);
}

TEST(TalliesWindows, CountsInTheirWindowAndAddUp) {
  const WindowOptions options{.width = 200ms, .keep = 10};
  Tallies tallies(2, {}, nullptr, options);
  next_window(options.width);
  batch(tallies, 0, 5);
  batch(tallies, 1, 3, 3);
  EXPECT_EQ(tallies.current().summary.counts.records, 8U);
  EXPECT_TRUE(tallies.current().summary.partial);
  EXPECT_TRUE(tallies.windows().empty());
  next_window(options.width);
  batch(tallies, 0, 2);  // worker 1 stays idle: its partial is still the last window's
  const std::vector<Tallies::Window> closed = tallies.windows();
  ASSERT_EQ(closed.size(), 1U);
  EXPECT_EQ(closed[0].summary.counts.records, 8U);
  EXPECT_EQ(closed[0].end - closed[0].start, options.width);
  EXPECT_EQ(closed[0].summary.by_severity[3], 3U);
  EXPECT_EQ(tallies.current().summary.counts.records, 2U);
  const Summary totals = tallies.totals();
  EXPECT_EQ(totals.counts.records, 10U);
  EXPECT_EQ(totals.by_severity[6], 7U);
  EXPECT_EQ(tallies.merged().counts.records, 10U);
}

TEST(TalliesWindows, KeepsTheLastWindowsAndTheTotalsOfAll) {
  const WindowOptions options{.width = 100ms, .keep = 2};
  Tallies tallies(1, {}, nullptr, options);
  for (int window = 0; window < 5; ++window) {
    next_window(options.width);
    batch(tallies, 0, 1);
  }
  next_window(options.width);
  batch(tallies, 0, 0);
  EXPECT_EQ(tallies.windows().size(), 2U);
  EXPECT_EQ(tallies.totals().counts.records, 5U);
}

// Readers while two workers count flat out: what they see never exceeds what was counted, and
// at the end the totals are exact (TSan checks the locking: fewer batches there, where every
// lock taken by the spinning reader costs the most, and a race shows in a few).
TEST(TalliesWindows, ReadersWhileWorkersCount) {
  conveyor::testing::Watchdog watchdog(60s);
  const int batches = 2000 / conveyor::testing::sanitizer_slowdown();
  const auto records = static_cast<std::uint64_t>(2 * batches * 10);
  Tallies tallies(2, {}, nullptr, {.width = 20ms, .keep = 5});
  std::atomic<bool> done{false};
  std::vector<std::thread> workers;
  for (std::size_t w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      for (int i = 0; i < batches; ++i)
        batch(tallies, w, 10);
    });
  }
  std::thread reader([&] {
    while (!done.load(std::memory_order_relaxed)) {
      EXPECT_LE(tallies.totals().counts.records, records);
      (void)tallies.windows();
      (void)tallies.current();
    }
  });
  for (std::thread& worker : workers)
    worker.join();
  done.store(true, std::memory_order_relaxed);
  reader.join();
  EXPECT_EQ(tallies.totals().counts.records, records);
}

}  // namespace
