// The Prometheus exporter: every counter equals what the pipeline's own Stats report, histograms
// are complete, the process metrics are sane, and the endpoint serves /metrics, /healthz and
// /readyz, with basic auth, and reports what it cannot do as an error.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/text_serializer.h>
#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "conveyor/framework.hpp"
#include "conveyor/prometheus/metrics_server.hpp"
#include "conveyor/prometheus/pipeline_metrics.hpp"
#include "conveyor/prometheus/process_metrics.hpp"
#include "http_get.hpp"
#include "pipeline_support.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Emit;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::prometheus::MetricsServer;
using conveyor::prometheus::MetricsServerError;
using conveyor::prometheus::PipelineMetrics;
using conveyor::testing::count_to;
using conveyor::testing::http_get;
using conveyor::testing::Watchdog;

std::string exposition(const ::prometheus::Collectable& collectable) {
  return ::prometheus::TextSerializer().Serialize(collectable.Collect());
}

// The value of the sample `series` (name and labels as exposed) in an exposition, or nullopt.
std::optional<double> sample(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::nullopt;
}

std::string labels(const std::string& pipeline, const std::string& stage_name,
                   const std::string& extra = {}) {
  return "{pipeline=\"" + pipeline + "\",stage=\"" + stage_name + "\"" + extra + "}";
}

TEST(PipelineMetricsTest, EveryCounterEqualsThePipelinesOwnStats) {
  Watchdog watchdog;
  auto metrics = std::make_shared<PipelineMetrics>();
  conveyor::Shared<std::uint64_t> total("total", {"add", "read"});
  Pipeline p({.name = "counted"});
  p.add_observer(metrics);
  p.track(total);
  p.source(count_to(20'000)) |
      stage(
          [&](std::uint64_t x, Emit<std::uint64_t>& emit) {
            if (x % 7 == 0) {
              emit.count_error();
              return;
            }
            total.access(0, [](std::uint64_t& t) { __atomic_fetch_add(&t, 1, __ATOMIC_RELAXED); });
            emit(x);
          },
          {.name = "filter", .mode = Mode::parallel, .workers = 3, .batch = 8}) |
      sink([](std::uint64_t) {}, {.name = "drop", .mode = Mode::serial_in_order});
  p.run();

  const auto stats = p.stats();
  const std::string text = exposition(*metrics);
  for (const auto& stage_stats : stats.stages) {
    const std::string l = labels("counted", stage_stats.name);
    EXPECT_EQ(sample(text, "conveyor_stage_items_received_total" + l),
              static_cast<double>(stage_stats.items_in))
        << stage_stats.name;
    EXPECT_EQ(sample(text, "conveyor_stage_items_sent_total" + l),
              static_cast<double>(stage_stats.items_out));
    EXPECT_EQ(sample(text, "conveyor_stage_errors_total" + l),
              static_cast<double>(stage_stats.errors));
    EXPECT_EQ(sample(text, "conveyor_stage_workers" + l), static_cast<double>(stage_stats.workers));
    EXPECT_EQ(sample(text, "conveyor_stage_item_duration_seconds_count" + l),
              static_cast<double>(stage_stats.items_in));
    EXPECT_EQ(sample(text, "conveyor_stage_item_duration_seconds_bucket" +
                               labels("counted", stage_stats.name, ",le=\"+Inf\"")),
              static_cast<double>(stage_stats.items_in));
    EXPECT_NEAR(*sample(text, "conveyor_stage_busy_seconds_total" + l), stage_stats.busy_seconds,
                1e-6);
    EXPECT_NEAR(*sample(text, "conveyor_stage_blocked_seconds_total" +
                                  labels("counted", stage_stats.name, ",direction=\"push\"")),
                stage_stats.blocked_push_seconds, 1e-6);
  }
  EXPECT_EQ(sample(text, "conveyor_stage_errors_total" + labels("counted", "filter")), 2858.0);
  EXPECT_EQ(sample(text, "conveyor_channel_capacity" + labels("counted", "filter")), 128.0 * 3);
  EXPECT_EQ(sample(text, "conveyor_channel_depth" + labels("counted", "drop")), 0.0);
  EXPECT_FALSE(sample(text, "conveyor_channel_depth" + labels("counted", "source")));
  EXPECT_EQ(sample(text, "conveyor_pipeline_running{pipeline=\"counted\"}"), 0.0);
  const std::string lock = "{pipeline=\"counted\",resource=\"total\",group=\"add\"}";
  EXPECT_EQ(sample(text, "conveyor_group_lock_entries_total" + lock), 20'000.0 - 2858.0);
  EXPECT_EQ(sample(text, "conveyor_group_lock_wait_seconds_count" + lock),
            20'000.0 - 2858.0 - *sample(text, "conveyor_group_lock_aces_total" + lock));
}

TEST(PipelineMetricsTest, RunsOfTheSameNameShareOneSetOfSeriesWhoseCountersAddUp) {
  Watchdog watchdog;
  auto metrics = std::make_shared<PipelineMetrics>();
  const auto run = [&](std::uint64_t items) {
    Pipeline p({.name = "job"});
    p.add_observer(metrics);
    p.source(count_to(items)) | sink([](std::uint64_t) {}, {.name = "drop"});
    p.run();
  };
  run(1000);
  run(2000);
  // Two at once, as a service that runs jobs side by side would.
  std::thread other([&] { run(300); });
  run(400);
  other.join();

  const std::string text = exposition(*metrics);
  EXPECT_EQ(sample(text, "conveyor_stage_items_sent_total" + labels("job", "source")), 3700.0);
  EXPECT_EQ(sample(text, "conveyor_stage_items_received_total" + labels("job", "drop")), 3700.0);
  EXPECT_EQ(sample(text, "conveyor_stage_item_duration_seconds_count" + labels("job", "drop")),
            3700.0);
  // One series per name: a second would make the exposition invalid.
  std::size_t series = 0;
  for (std::size_t at = text.find("conveyor_pipeline_running{"); at != std::string::npos;
       at = text.find("conveyor_pipeline_running{", at + 1)) {
    ++series;
  }
  EXPECT_EQ(series, 1U);
  EXPECT_EQ(metrics->snapshot().size(), 1U);
}

// The sinks of a tee's branches, left unnamed, are named apart (sink-N): each has its series, and
// a count read while the pipeline runs never exceeds the one after it finished. Stages the user
// named alike are one series, the same while running and once finished.
TEST(PipelineMetricsTest, EveryStageHasOneSeriesThatNeverGoesDown) {
  Watchdog watchdog;
  auto metrics = std::make_shared<PipelineMetrics>();
  std::atomic<bool> release{false};
  Pipeline p({.name = "branches"});
  p.add_observer(metrics);
  p.source(count_to(1000)) |
      conveyor::tee(conveyor::chain<std::uint64_t>() | sink(conveyor::testing::discard),
                    conveyor::chain<std::uint64_t>() | sink([&](std::uint64_t x) {
                      // Holds the last item until the count has been read while running.
                      if (x == 999) {
                        while (!release.load())
                          std::this_thread::yield();
                      }
                    }));
  p.start();
  const auto received = [&](const std::string& text) {
    double total = 0;
    std::size_t series = 0;
    for (const auto& stage : p.stats().stages) {
      if (stage.name.rfind("sink", 0) != 0) continue;
      ++series;
      total += sample(text, "conveyor_stage_items_received_total" + labels("branches", stage.name))
                   .value_or(-1.0e9);
    }
    EXPECT_EQ(series, 2U);
    return total;
  };
  std::string text;
  for (int i = 0; i < 10'000; ++i) {
    text = exposition(*metrics);
    if (received(text) >= 1999.0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const double running = received(text);
  release.store(true);
  p.wait();
  const double finished = received(exposition(*metrics));
  EXPECT_EQ(finished, 2000.0);
  EXPECT_LE(running, finished);

  Pipeline named({.name = "alike"});
  named.add_observer(metrics);
  named.source(count_to(10)) |
      conveyor::tee(
          conveyor::chain<std::uint64_t>() | sink(conveyor::testing::discard, {.name = "out"}),
          conveyor::chain<std::uint64_t>() | sink(conveyor::testing::discard, {.name = "out"}));
  named.run();
  EXPECT_EQ(
      sample(exposition(*metrics), "conveyor_stage_items_received_total" + labels("alike", "out")),
      20.0);

  // A channel's depth and capacity only where a stage has one: not for a merge's sources.
  Pipeline merged({.name = "merged"});
  merged.add_observer(metrics);
  conveyor::merge(merged.source(count_to(5)), merged.source(count_to(5))) |
      sink(conveyor::testing::discard, {.name = "out"});
  merged.run();
  const std::string after = exposition(*metrics);
  for (const conveyor::StageStats& stage : merged.stats().stages) {
    if (stage.name == "out") continue;
    EXPECT_FALSE(sample(after, "conveyor_channel_depth" + labels("merged", stage.name)))
        << stage.name;
  }
  EXPECT_EQ(sample(after, "conveyor_channel_depth" + labels("merged", "out")), 0.0);
}

// --- Shared resources over several runs of one name ---

// A run named "job" that tracks `resource` and enters it once per item, `items` items, as a member
// of its group "add" (members are inside together: the count is atomic).
void run_with(const std::shared_ptr<PipelineMetrics>& metrics,
              conveyor::Shared<std::uint64_t>& resource, std::uint64_t items) {
  Pipeline p({.name = "job"});
  p.add_observer(metrics);
  p.track(resource);
  p.source(count_to(items)) | sink([&](std::uint64_t) {
    resource.access(0, [](std::uint64_t& t) { __atomic_fetch_add(&t, 1, __ATOMIC_RELAXED); });
  });
  p.run();
}

std::optional<double> entries_of(const std::string& text, const std::string& resource) {
  return sample(text, "conveyor_group_lock_entries_total{pipeline=\"job\",resource=\"" + resource +
                          "\",group=\"add\"}");
}

// A service that makes a fresh resource per job: its counter goes on rising (the latest run's
// figures alone would fall back at every job, which rate() reads as a reset).
TEST(PipelineMetricsTest, AFreshResourcePerRunAddsUp) {
  Watchdog watchdog;
  auto metrics = std::make_shared<PipelineMetrics>();
  for (const std::uint64_t items : {300U, 200U, 100U}) {
    conveyor::Shared<std::uint64_t> tally("tally", {"add"});
    run_with(metrics, tally, items);
  }
  EXPECT_EQ(entries_of(exposition(*metrics), "tally"), 600.0);
}

// One resource kept over the runs counts each access once, also those between the runs.
TEST(PipelineMetricsTest, OneResourceOverSeveralRunsCountsEachAccessOnce) {
  Watchdog watchdog;
  auto metrics = std::make_shared<PipelineMetrics>();
  conveyor::Shared<std::uint64_t> tally("tally", {"add"});
  run_with(metrics, tally, 300);
  EXPECT_EQ(entries_of(exposition(*metrics), "tally"), 300.0);
  tally.access(0, [](std::uint64_t& t) { __atomic_fetch_add(&t, 1, __ATOMIC_RELAXED); });
  run_with(metrics, tally, 200);
  EXPECT_EQ(entries_of(exposition(*metrics), "tally"), 501.0);
}

// Runs side by side on one resource count it once; two resources of one name add up.
TEST(PipelineMetricsTest, RunsSideBySideOnOneResourceCountItOnce) {
  Watchdog watchdog;
  auto metrics = std::make_shared<PipelineMetrics>();
  conveyor::Shared<std::uint64_t> tally("tally", {"add"});
  {
    std::thread other([&] { run_with(metrics, tally, 20'000); });
    run_with(metrics, tally, 30'000);
    other.join();
  }
  EXPECT_EQ(entries_of(exposition(*metrics), "tally"), 50'000.0);
  conveyor::Shared<std::uint64_t> another("tally", {"add"});
  run_with(metrics, another, 7);
  EXPECT_EQ(entries_of(exposition(*metrics), "tally"), 50'007.0);
}

// While a run goes on, a scrape counts what its resource added so far, and once.
TEST(PipelineMetricsTest, AScrapeWhileRunsShareAResourceCountsItOnce) {
  Watchdog watchdog;
  auto metrics = std::make_shared<PipelineMetrics>();
  conveyor::Shared<std::uint64_t> tally("tally", {"add"});
  run_with(metrics, tally, 100);
  std::atomic<bool> release{false};
  const auto held = [&](std::uint64_t items) {
    Pipeline p({.name = "job"});
    p.add_observer(metrics);
    p.track(tally);
    p.source(count_to(items)) | sink([&](std::uint64_t x) {
      tally.access(0, [](std::uint64_t& t) { __atomic_fetch_add(&t, 1, __ATOMIC_RELAXED); });
      // The last item waits until the scrape is taken.
      while (x + 1 == items && !release.load(std::memory_order_acquire))
        std::this_thread::yield();
    });
    p.run();
  };
  std::thread first([&] { held(10); });
  std::thread second([&] { held(20); });
  // Both runs have entered for every item by the time the resource has 130 entries, and the
  // exporter knows of a live run once the pipeline shows as running.
  while (tally.stats().groups.at(0).entries < 130 ||
         sample(exposition(*metrics), "conveyor_pipeline_running{pipeline=\"job\"}") != 1.0)
    std::this_thread::yield();
  EXPECT_EQ(entries_of(exposition(*metrics), "tally"), 130.0);
  release.store(true, std::memory_order_release);
  first.join();
  second.join();
  EXPECT_EQ(entries_of(exposition(*metrics), "tally"), 130.0);
}

// The bookkeeping alone: a resource object no run tracks is remembered among the most recent
// `remembered`, and one whose figures carry no id shows the latest run's.
conveyor::ResourceStats figures(std::uint64_t id, std::uint64_t entries) {
  conveyor::GroupStats group;
  group.name = "add";
  group.entries = entries;
  group.aces = entries;
  return conveyor::ResourceStats{.name = "r", .id = id, .groups = {group}};
}

std::uint64_t total_entries(const conveyor::prometheus::detail::ResourceTotals& totals) {
  const auto all = totals.total({});
  return all.empty() ? 0 : all.at(0).groups.at(0).entries;
}

// A run of its own that finds object `id` with no entries and leaves it with `entries`.
void run_once(conveyor::prometheus::detail::ResourceTotals& totals, std::uint64_t id,
              std::uint64_t entries) {
  const int run = 0;  // its address names the run until it finishes
  totals.tracks(&run, {figures(id, 0)});
  totals.finished(&run, {figures(id, entries)});
}

// `count` objects from id `first`, each entered once by a run of its own and idle since; returns
// `count`.
std::uint64_t idle_objects(conveyor::prometheus::detail::ResourceTotals& totals,
                           std::uint64_t first, std::uint64_t count) {
  for (std::uint64_t id = first; id < first + count; ++id)
    run_once(totals, id, 1);
  return count;
}

TEST(ResourceTotalsTest, RemembersTheMostRecentObjectsAndForgetsTheOldest) {
  using conveyor::prometheus::detail::ResourceTotals;
  ResourceTotals totals;
  run_once(totals, 1, 10);
  run_once(totals, 1, 15);  // remembered: 5 more
  EXPECT_EQ(total_entries(totals), 15U);
  idle_objects(totals, 2, ResourceTotals::remembered);
  EXPECT_EQ(total_entries(totals), 15U + ResourceTotals::remembered);
  run_once(totals, 1, 20);  // forgotten (the oldest of remembered + 1): counted from zero
  EXPECT_EQ(total_entries(totals), 35U + ResourceTotals::remembered);
}

// A run's final figures are taken before it reports its end, so two runs sharing an object may
// report in the other order: the older figures settle nothing, and count nothing twice later.
TEST(ResourceTotalsTest, RunsThatEndInTheOtherOrderCountEachAccessOnce) {
  conveyor::prometheus::detail::ResourceTotals totals;
  const int first = 0;
  const int second = 0;
  const int third = 0;
  totals.tracks(&first, {figures(1, 0)});
  totals.tracks(&second, {figures(1, 0)});
  totals.finished(&second, {figures(1, 20)});
  totals.finished(&first, {figures(1, 10)});
  EXPECT_EQ(total_entries(totals), 20U);
  totals.tracks(&third, {figures(1, 20)});
  EXPECT_EQ(totals.total({{figures(1, 24)}}).at(0).groups.at(0).entries, 24U);
  totals.finished(&third, {figures(1, 25)});
  EXPECT_EQ(total_entries(totals), 25U);
}

// A scrape between a run's final figures and its report of its end showed more: never less after.
TEST(ResourceTotalsTest, WhatAScrapeShowedIsNeverTakenBack) {
  conveyor::prometheus::detail::ResourceTotals totals;
  const int run = 0;
  totals.tracks(&run, {figures(1, 0)});
  EXPECT_EQ(totals.total({{figures(1, 30)}}).at(0).groups.at(0).entries, 30U);
  totals.finished(&run, {figures(1, 20)});
  EXPECT_EQ(total_entries(totals), 30U);
}

// A run that tracks an object again after its start ends once for it: the object stays in use by
// the other run that shares it, and is not forgotten among the idle ones.
TEST(ResourceTotalsTest, AnObjectTrackedAgainByOneRunStaysInUseByTheOther) {
  using conveyor::prometheus::detail::ResourceTotals;
  ResourceTotals totals;
  const int first = 0;
  const int second = 0;
  totals.tracks(&first, {figures(1, 0)});
  totals.tracks(&second, {figures(1, 0)});
  totals.finished(&first, {figures(1, 5), figures(1, 5)});
  const std::uint64_t others = idle_objects(totals, 100, ResourceTotals::remembered + 1);
  totals.finished(&second, {figures(1, 8)});
  EXPECT_EQ(total_entries(totals), 8U + others);
}

// An object nothing has entered yet is exported, with zeros.
TEST(ResourceTotalsTest, AnObjectNotYetEnteredShowsZeros) {
  conveyor::prometheus::detail::ResourceTotals totals;
  const int run = 0;
  totals.tracks(&run, {figures(1, 0)});
  const auto shown = totals.total({{figures(1, 0)}});
  ASSERT_EQ(shown.size(), 1U);
  EXPECT_EQ(shown[0].name, "r");
  ASSERT_EQ(shown[0].groups.size(), 1U);
  EXPECT_EQ(shown[0].groups[0].entries, 0U);
}

// Two readings at once need not be ahead of each other in every field (a reading takes them one
// at a time): each counter keeps the larger, and the waits and entries follow from them.
TEST(ResourceTotalsTest, EachFieldKeepsTheLargerOfTwoReadings) {
  conveyor::prometheus::detail::ResourceTotals totals;
  const int run = 0;
  totals.tracks(&run, {figures(1, 0)});
  conveyor::ResourceStats scraped = figures(1, 10);  // 10 aces
  scraped.groups[0].wait.counts[0] = 5;
  conveyor::ResourceStats final_figures = figures(1, 9);  // 9 aces
  final_figures.groups[0].wait.counts[0] = 4;
  final_figures.groups[0].wait.counts[1] = 3;
  (void)totals.total({{scraped}});
  totals.finished(&run, {final_figures});
  const conveyor::GroupStats group = totals.total({}).at(0).groups.at(0);
  EXPECT_EQ(group.aces, 10U);
  EXPECT_EQ(group.wait.counts[0], 5U);
  EXPECT_EQ(group.wait.counts[1], 3U);
  EXPECT_EQ(group.wait.count, 8U);
  EXPECT_EQ(group.waits, 8U);
  EXPECT_EQ(group.entries, 18U);
  // Settled and remembered alike: the next run adds only what is new.
  const int next = 0;
  totals.tracks(&next, {figures(1, 10)});
  conveyor::ResourceStats later_figures = figures(1, 12);
  later_figures.groups[0].wait.counts[0] = 5;
  later_figures.groups[0].wait.counts[1] = 3;
  totals.finished(&next, {later_figures});
  EXPECT_EQ(total_entries(totals), 20U);
}

// A resource tracked after the run's final figures were taken, which a scrape then saw: what the
// scrape showed stays, and the run no longer keeps it in use.
TEST(ResourceTotalsTest, AnObjectOnlyAScrapeSawIsSettledAtTheRunsEnd) {
  conveyor::prometheus::detail::ResourceTotals totals;
  const int run = 0;
  totals.tracks(&run, {});
  totals.tracks(&run, {figures(1, 5)});
  EXPECT_EQ(totals.total({{figures(1, 5)}}).at(0).groups.at(0).entries, 5U);
  totals.finished(&run, {});
  EXPECT_EQ(total_entries(totals), 5U);
}

// An object a run tracked after its start is in use by it once a scrape has seen it: what the
// scrape showed stays, and it is not forgotten among the idle ones while the run goes on.
TEST(ResourceTotalsTest, AnObjectTrackedLateIsInUseOnceAScrapeSawIt) {
  using conveyor::prometheus::detail::ResourceTotals;
  ResourceTotals totals;
  const int run = 0;
  totals.tracks(&run, {});
  totals.tracks(&run, {figures(1, 30)});  // what a snapshot does before total()
  EXPECT_EQ(totals.total({{figures(1, 30)}}).at(0).groups.at(0).entries, 30U);
  const std::uint64_t others = idle_objects(totals, 100, ResourceTotals::remembered + 1);
  totals.finished(&run, {figures(1, 20)});
  EXPECT_EQ(total_entries(totals), 30U + others);
}

// The wait time is a sum of doubles, added in the order runs end when settled and in the order of
// the objects when live: in another order it may round lower, and is exported no lower.
TEST(ResourceTotalsTest, TheWaitTimeNeverRoundsLower) {
  conveyor::prometheus::detail::ResourceTotals totals;
  const auto waited = [](std::uint64_t id, double seconds) {
    conveyor::ResourceStats stats = figures(id, 0);
    stats.groups[0].wait.counts[0] = 1;
    stats.groups[0].wait.sum_seconds = seconds;
    return stats;
  };
  const int earlier = 0;
  const int first = 0;
  const int second = 0;
  totals.tracks(&earlier, {waited(3, 0.1)});
  totals.finished(&earlier, {waited(3, 0.1)});
  totals.tracks(&first, {waited(1, 0.2)});
  totals.tracks(&second, {waited(2, 1e-9)});
  // (0.1 + 0.2) + 1e-9, then (0.1 + 1e-9) + 0.2, which rounds lower.
  const double before =
      totals.total({{waited(1, 0.2)}, {waited(2, 1e-9)}}).at(0).groups.at(0).wait.sum_seconds;
  totals.finished(&second, {waited(2, 1e-9)});
  const double after = totals.total({{waited(1, 0.2)}}).at(0).groups.at(0).wait.sum_seconds;
  EXPECT_GE(after, before);
}

TEST(ResourceTotalsTest, FiguresWithoutAnIdAreTheLatestRuns) {
  conveyor::prometheus::detail::ResourceTotals totals;
  const int first = 0;
  const int second = 0;
  totals.tracks(&first, {figures(0, 0)});
  totals.finished(&first, {figures(0, 5)});
  totals.tracks(&second, {figures(0, 0)});
  EXPECT_EQ(totals.total({{figures(0, 2)}}).at(0).groups.at(0).entries, 2U);
  totals.finished(&second, {figures(0, 3)});
  EXPECT_EQ(total_entries(totals), 3U);
}

TEST(PipelineMetricsTest, HistogramBucketsAreCumulativeAndEndWithInf) {
  Watchdog watchdog;
  auto metrics = std::make_shared<PipelineMetrics>();
  Pipeline p({.name = "buckets"});
  p.add_observer(metrics);
  p.source(count_to(500)) | sink([](std::uint64_t x) {
    if (x % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  p.run();
  for (const auto& family : metrics->Collect()) {
    if (family.name != "conveyor_stage_item_duration_seconds") continue;
    for (const auto& metric : family.metric) {
      const auto& buckets = metric.histogram.bucket;
      ASSERT_EQ(buckets.size(), conveyor::item_duration_buckets.size() + 1);
      EXPECT_TRUE(std::isinf(buckets.back().upper_bound));
      EXPECT_EQ(buckets.back().cumulative_count, metric.histogram.sample_count);
      for (std::size_t i = 1; i < buckets.size(); ++i) {
        EXPECT_GE(buckets[i].cumulative_count, buckets[i - 1].cumulative_count);
        EXPECT_GT(buckets[i].upper_bound, buckets[i - 1].upper_bound);
      }
    }
  }
}

TEST(PipelineMetricsTest, ReadyOnlyWhileAPipelineRunsAndDoesNotDrain) {
  Watchdog watchdog;
  auto metrics = std::make_shared<PipelineMetrics>();
  EXPECT_FALSE(metrics->ready());
  Pipeline p;
  p.add_observer(metrics);
  std::atomic<bool> release{false};
  p.source([&](Emit<int>& emit) {
    while (!emit.stop_requested())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    while (!release.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }) | sink([](int) {});
  p.start();
  EXPECT_TRUE(metrics->ready());
  p.request_stop();
  // The controlling thread marks the pipeline as stopping once it sees the request.
  std::thread waiter([&] { p.wait(); });
  for (int i = 0; i < 2000 && metrics->ready(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_FALSE(metrics->ready());
  release.store(true);
  waiter.join();
  EXPECT_FALSE(metrics->ready());
}

TEST(ProcessMetricsTest, ReportsThisProcessFromProc) {
  const std::string text = exposition(conveyor::prometheus::ProcessMetrics());
  EXPECT_GT(*sample(text, "process_resident_memory_bytes"), 1e5);
  EXPECT_GT(*sample(text, "process_virtual_memory_bytes"),
            *sample(text, "process_resident_memory_bytes"));
  EXPECT_GE(*sample(text, "process_open_fds"), 3.0);
  EXPECT_GE(*sample(text, "process_max_fds"), *sample(text, "process_open_fds"));
  EXPECT_GE(*sample(text, "process_threads"), 1.0);
  EXPECT_GE(*sample(text, "process_cpu_seconds_total"), 0.0);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const double started = *sample(text, "process_start_time_seconds");
  EXPECT_LE(started, now + 1);
  EXPECT_GT(started, now - 24 * 3600);
  EXPECT_NE(text.find("conveyor_build_info{compiler="), std::string::npos);
}

TEST(MetricsServerTest, ServesMetricsHealthAndReadiness) {
  Watchdog watchdog;
  MetricsServer server({.listen = "127.0.0.1:0"});
  ASSERT_NE(server.port(), 0);
  EXPECT_EQ(server.address(), "127.0.0.1:" + std::to_string(server.port()));
  const auto metrics = http_get(server.port(), "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("process_resident_memory_bytes"), std::string::npos);
  EXPECT_EQ(http_get(server.port(), "/healthz").status, 200);
  EXPECT_EQ(http_get(server.port(), "/readyz").status, 200);
  server.set_readiness([] { return false; });
  const auto not_ready = http_get(server.port(), "/readyz");
  EXPECT_EQ(not_ready.status, 503);
  EXPECT_EQ(not_ready.body, "not ready\n");
  EXPECT_EQ(http_get(server.port(), "/healthz").status, 200);
}

TEST(MetricsServerTest, APortInUseIsAnErrorNotAnAbort) {
  MetricsServer first({.listen = "127.0.0.1:0"});
  try {
    MetricsServer second({.listen = "127.0.0.1:" + std::to_string(first.port())});
    FAIL() << "a second server on the same port";
  } catch (const MetricsServerError& error) {
    EXPECT_NE(std::string(error.what()).find("cannot listen on 127.0.0.1:"), std::string::npos)
        << error.what();
  }
}

TEST(MetricsServerTest, BadAddressesAreErrors) {
  for (const char* address : {"nonsense", "127.0.0.1:", ":9464", "127.0.0.1:99999",
                              "127.0.0.1:12ab", "::1:9464", "203.0.113.7:0"}) {
    EXPECT_THROW(MetricsServer({.listen = address}), MetricsServerError) << address;
  }
}

class AuthFile {
 public:
  explicit AuthFile(const std::string& contents)
      : path_(std::filesystem::temp_directory_path() /
              ("conveyor-auth-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++))) {
    std::ofstream(path_) << contents;
  }
  ~AuthFile() { std::filesystem::remove(path_); }
  [[nodiscard]] std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(MetricsServerTest, BasicAuthGuardsMetricsButNotHealth) {
  Watchdog watchdog;
  AuthFile users("# who may scrape\nalice:secret\n\nbob:hunter2\n");
  MetricsServer server({.listen = "127.0.0.1:0", .auth_file = users.path()});
  EXPECT_EQ(http_get(server.port(), "/metrics").status, 401);
  EXPECT_EQ(http_get(server.port(), "/metrics", "YWxpY2U6d3Jvbmc=").status, 401);  // alice:wrong
  EXPECT_EQ(http_get(server.port(), "/metrics", "YWxpY2U6c2VjcmV0").status, 200);  // alice:secret
  EXPECT_EQ(http_get(server.port(), "/metrics", "Ym9iOmh1bnRlcjI=").status, 200);  // bob:hunter2
  // A prefix, a repetition (which the comparison, cycling over the known text, would match
  // character by character), and empty parts are all refused.
  for (const char* wrong : {"YWxpY2U6c2VjcmU=",             // alice:secre
                            "YWxpY2U6c2VjcmV0c2VjcmV0",     // alice:secretsecret
                            "YWxpY2VhbGljZTpzZWNyZXQ=",     // alicealice:secret
                            "YWxpY2U6", "OnNlY3JldA=="}) {  // alice: and :secret
    EXPECT_EQ(http_get(server.port(), "/metrics", wrong).status, 401) << wrong;
  }
  EXPECT_EQ(http_get(server.port(), "/healthz").status, 200);
  EXPECT_EQ(http_get(server.port(), "/readyz").status, 200);
  // The refusals are counted, with and without credentials.
  const std::string metrics = http_get(server.port(), "/metrics", "YWxpY2U6c2VjcmV0").body;
  EXPECT_NE(metrics.find("conveyor_metrics_http_rejected_total{code=\"401\"} 7\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("conveyor_metrics_http_rejected_total{code=\"405\"} 0\n"),
            std::string::npos);
}

// civetweb serves a connection on one of its threads until the connection ends: clients that send
// nothing hold them for MetricsServer::request_timeout only, and health still answers while every
// thread holds one (civetweb's own timeout, 30 s, left it waiting that long).
TEST(MetricsServerTest, SilentClientsHoldNoThreadForLong) {
  Watchdog watchdog(std::chrono::seconds(120));
  MetricsServer server({.listen = "127.0.0.1:0"});
  boost::asio::io_context io;
  std::vector<boost::asio::ip::tcp::socket> silent;
  for (int i = 0; i < MetricsServer::server_threads; ++i) {
    silent.emplace_back(io);
    silent.back().connect({boost::asio::ip::make_address("127.0.0.1"), server.port()});
  }
  EXPECT_EQ(http_get(server.port(), "/healthz", {}, std::chrono::seconds(20)).status, 200);
  for (auto& socket : silent) {
    // Disconnected by the server: the read ends (the watchdog guards against it never ending).
    char byte = 0;
    boost::system::error_code error;
    socket.read_some(boost::asio::buffer(&byte, 1), error);
    EXPECT_TRUE(error);
  }
}

// A page an app adds (log-ingest's /summary) answers GET with what its function returns, is
// guarded by the same auth as /metrics, and refuses other methods.
TEST(MetricsServerTest, PagesAnswerBehindTheSameAuth) {
  Watchdog watchdog;
  {
    MetricsServer open({.listen = "127.0.0.1:0"});
    open.add_page("/page", [](std::string_view query) {
      return conveyor::prometheus::Page{.body = "{\"query\":\"" + std::string(query) + "\"}"};
    });
    const auto page = http_get(open.port(), "/page?x=1");
    EXPECT_EQ(page.status, 200);
    EXPECT_EQ(page.body, R"({"query":"x=1"})");
    EXPECT_EQ(page.content_type, "application/json");
    EXPECT_EQ(http_get(open.port(), "/other").status, 404);
  }
  AuthFile users("alice:secret\n");
  MetricsServer server({.listen = "127.0.0.1:0", .auth_file = users.path()});
  server.add_page("/page", [](std::string_view) {
    return conveyor::prometheus::Page{.status = 400, .body = "bad"};
  });
  EXPECT_EQ(http_get(server.port(), "/page").status, 401);
  EXPECT_EQ(http_get(server.port(), "/page", "YWxpY2U6d3Jvbmc=").status, 401);  // alice:wrong
  EXPECT_EQ(http_get(server.port(), "/page", "not base64!").status, 401);
  EXPECT_EQ(http_get(server.port(), "/page", "YWxpY").status, 401);        // no base64 is 5 long
  const auto page = http_get(server.port(), "/page", "YWxpY2U6c2VjcmV0");  // alice:secret
  EXPECT_EQ(page.status, 400);
  EXPECT_EQ(page.body, "bad");
  // Each refusal is counted by its status, the page's own 400 too.
  const std::string metrics = http_get(server.port(), "/metrics", "YWxpY2U6c2VjcmV0").body;
  EXPECT_NE(metrics.find("conveyor_metrics_http_rejected_total{code=\"401\"} 4\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("conveyor_metrics_http_rejected_total{code=\"400\"} 1\n"),
            std::string::npos);
}

TEST(MetricsServerTest, BadAuthFilesAreErrors) {
  EXPECT_THROW(MetricsServer({.listen = "127.0.0.1:0", .auth_file = "/nonexistent/users"}),
               MetricsServerError);
  AuthFile malformed("alice\n");
  EXPECT_THROW(MetricsServer({.listen = "127.0.0.1:0", .auth_file = malformed.path()}),
               MetricsServerError);
  AuthFile empty("# nobody\n");
  EXPECT_THROW(MetricsServer({.listen = "127.0.0.1:0", .auth_file = empty.path()}),
               MetricsServerError);
}

// Scrapes as fast as it can while a pipeline runs flat out: every scrape succeeds, the counts go
// up, and at the end they equal the pipeline's statistics.
TEST(MetricsServerTest, ScrapesInATightLoopWhileThePipelineRunsFlatOut) {
  Watchdog watchdog(std::chrono::seconds(120));
  auto metrics = std::make_shared<PipelineMetrics>();
  MetricsServer server({.listen = "127.0.0.1:0"});
  server.add(metrics);
  const std::uint64_t items = conveyor::testing::stress_items() / 2;
  Pipeline p({.name = "flat_out"});
  p.add_observer(metrics);
  conveyor::testing::SharedTally tally;
  p.source(count_to(items)) |
      stage([](std::uint64_t x) { return x; },
            {.mode = Mode::parallel, .workers = 2, .batch = 16}) |
      sink([&](std::uint64_t x) { tally.add(x); }, {.mode = Mode::serial_in_order, .batch = 16});
  p.start();
  int scrapes = 0;
  int failures = 0;
  double last = 0;
  bool monotonic = true;
  const std::string sent = "conveyor_stage_items_sent_total" + labels("flat_out", "source");
  // Scrape until the source's counter shows every item sent (the watchdog bounds the loop).
  while (last < static_cast<double>(items)) {
    const auto response = http_get(server.port(), "/metrics");
    ++scrapes;
    if (response.status != 200) {
      ++failures;
      continue;
    }
    const double now = sample(response.body, sent).value_or(-1);
    monotonic = monotonic && now >= last;
    last = now;
  }
  p.wait();
  const auto final_response = http_get(server.port(), "/metrics");
  EXPECT_EQ(failures, 0);
  EXPECT_GT(scrapes, 0);
  EXPECT_TRUE(monotonic);
  EXPECT_EQ(tally.get(), conveyor::testing::expected_tally(items));
  EXPECT_EQ(sample(final_response.body, sent), static_cast<double>(items));
  std::printf("%d scrapes while %llu items went through\n", scrapes,
              static_cast<unsigned long long>(items));
}

}  // namespace
