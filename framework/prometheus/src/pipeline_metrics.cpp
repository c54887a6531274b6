// PipelineMetrics: pipeline statistics turned into Prometheus metric families at scrape time.
#include "conveyor/prometheus/pipeline_metrics.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include <prometheus/client_metric.h>
#include <prometheus/metric_type.h>

#include "conveyor/prometheus/families.hpp"

namespace conveyor::prometheus {

namespace {

using ::prometheus::ClientMetric;
using ::prometheus::MetricFamily;
using ::prometheus::MetricType;

void add_histogram(MetricFamily& family, Labels labels, const DurationHistogram& histogram) {
  ClientMetric metric;
  metric.label = std::move(labels);
  metric.histogram.sample_count = histogram.count;
  metric.histogram.sample_sum = histogram.sum_seconds;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < histogram.counts.size(); ++i) {
    cumulative += histogram.counts[i];
    const double bound = i < item_duration_buckets.size() ? item_duration_buckets[i]
                                                          : std::numeric_limits<double>::infinity();
    metric.histogram.bucket.push_back(ClientMetric::Bucket{cumulative, bound});
  }
  family.metric.push_back(std::move(metric));
}

Labels stage_labels(const PipelineStats& pipeline, const StageStats& stage) {
  return {{"pipeline", pipeline.name}, {"stage", stage.name}};
}

}  // namespace

std::vector<MetricFamily> families_of(const std::vector<PipelineStats>& pipelines) {
  auto received = family("conveyor_stage_items_received_total", "Items given to the stage's code.",
                         MetricType::Counter);
  auto sent =
      family("conveyor_stage_items_sent_total", "Items the stage emitted.", MetricType::Counter);
  auto errors = family("conveyor_stage_errors_total",
                       "Exceptions thrown by the stage's code and bad input it counted.",
                       MetricType::Counter);
  auto busy = family("conveyor_stage_busy_seconds_total",
                     "Time the stage's workers spent in its code, summed over the workers.",
                     MetricType::Counter);
  auto blocked = family("conveyor_stage_blocked_seconds_total",
                        "Time the stage's workers waited on a channel: for room downstream "
                        "(direction push) or for items (direction pop).",
                        MetricType::Counter);
  auto duration = family("conveyor_stage_item_duration_seconds",
                         "Time the stage's code took per item (items of a batch count at the "
                         "batch's mean).",
                         MetricType::Histogram);
  auto workers = family("conveyor_stage_workers", "Workers the stage runs on.", MetricType::Gauge);
  auto depth = family("conveyor_channel_depth",
                      "Parcels waiting in the channel that feeds the stage.", MetricType::Gauge);
  auto capacity = family("conveyor_channel_capacity",
                         "Parcels the channel that feeds the stage can hold.", MetricType::Gauge);
  auto running =
      family("conveyor_pipeline_running",
             "1 while the pipeline runs (also while it drains), else 0.", MetricType::Gauge);
  auto elapsed = family("conveyor_pipeline_elapsed_seconds",
                        "Time since the pipeline started (until it finished).", MetricType::Gauge);
  auto lock_wait = family("conveyor_group_lock_wait_seconds",
                          "How long accesses to a shared resource waited for its group lock.",
                          MetricType::Histogram);
  auto lock_aces =
      family("conveyor_group_lock_aces_total",
             "Accesses to a shared resource that entered without waiting.", MetricType::Counter);
  auto lock_entries = family("conveyor_group_lock_entries_total", "Accesses to a shared resource.",
                             MetricType::Counter);

  for (const PipelineStats& pipeline : pipelines) {
    const bool is_running =
        pipeline.state == PipelineState::running || pipeline.state == PipelineState::stopping;
    add_gauge(running, {{"pipeline", pipeline.name}}, is_running ? 1.0 : 0.0);
    add_gauge(elapsed, {{"pipeline", pipeline.name}}, pipeline.elapsed_seconds);
    for (const StageStats& stage : pipeline.stages) {
      add_counter(received, stage_labels(pipeline, stage), static_cast<double>(stage.items_in));
      add_counter(sent, stage_labels(pipeline, stage), static_cast<double>(stage.items_out));
      add_counter(errors, stage_labels(pipeline, stage), static_cast<double>(stage.errors));
      add_counter(busy, stage_labels(pipeline, stage), stage.busy_seconds);
      Labels push = stage_labels(pipeline, stage);
      push.push_back({"direction", "push"});
      add_counter(blocked, std::move(push), stage.blocked_push_seconds);
      Labels pop = stage_labels(pipeline, stage);
      pop.push_back({"direction", "pop"});
      add_counter(blocked, std::move(pop), stage.blocked_pop_seconds);
      add_histogram(duration, stage_labels(pipeline, stage), stage.item_duration);
      add_gauge(workers, stage_labels(pipeline, stage), static_cast<double>(stage.workers));
      // Only for a stage with a channel of its own: not for a source (the first or a merge's
      // others), nor for a stage fused into the one before it.
      if (stage.channel_capacity > 0) {
        add_gauge(depth, stage_labels(pipeline, stage), static_cast<double>(stage.channel_depth));
        add_gauge(capacity, stage_labels(pipeline, stage),
                  static_cast<double>(stage.channel_capacity));
      }
    }
    for (const ResourceStats& resource : pipeline.resources) {
      for (const GroupStats& group : resource.groups) {
        const Labels labels{
            {"pipeline", pipeline.name}, {"resource", resource.name}, {"group", group.name}};
        add_histogram(lock_wait, labels, group.wait);
        add_counter(lock_aces, labels, static_cast<double>(group.aces));
        add_counter(lock_entries, labels, static_cast<double>(group.entries));
      }
    }
  }

  std::vector<MetricFamily> result;
  for (MetricFamily* each :
       {&received, &sent, &errors, &busy, &blocked, &duration, &workers, &depth, &capacity,
        &running, &elapsed, &lock_wait, &lock_aces, &lock_entries}) {
    if (!each->metric.empty()) result.push_back(std::move(*each));
  }
  return result;
}

namespace {

// Adds a run's counters and histograms into `total`; its gauges replace total's.
void accumulate(DurationHistogram& total, const DurationHistogram& more) {
  for (std::size_t i = 0; i < total.counts.size(); ++i)
    total.counts[i] += more.counts[i];
  total.count += more.count;
  total.sum_seconds += more.sum_seconds;
}

void accumulate(StageStats& total, const StageStats& run) {
  total.items_in += run.items_in;
  total.items_out += run.items_out;
  total.errors += run.errors;
  total.busy_seconds += run.busy_seconds;
  total.blocked_push_seconds += run.blocked_push_seconds;
  total.blocked_pop_seconds += run.blocked_pop_seconds;
  accumulate(total.item_duration, run.item_duration);
  total.mode = run.mode;
  total.workers = run.workers;
  total.channel_depth = run.channel_depth;
  total.channel_capacity = run.channel_capacity;
}

void accumulate(PipelineStats& total, const PipelineStats& run) {
  for (const StageStats& stage : run.stages) {
    auto same = std::find_if(total.stages.begin(), total.stages.end(),
                             [&](const StageStats& each) { return each.name == stage.name; });
    if (same == total.stages.end()) {
      total.stages.push_back(stage);
    } else {
      accumulate(*same, stage);
    }
  }
  total.name = run.name;
  total.state = run.state;
  total.elapsed_seconds = run.elapsed_seconds;
}

}  // namespace

void PipelineMetrics::on_start(const Pipeline& pipeline) {
  const std::vector<ResourceStats> resources = pipeline.stats().resources;
  std::lock_guard lock(mutex_);
  Series* series = nullptr;
  for (Series& each : series_) {
    if (each.name == pipeline.name()) series = &each;
  }
  if (series == nullptr) {
    series_.emplace_back();
    series_.back().name = pipeline.name();
    series = &series_.back();
  }
  series->live.push_back(&pipeline);
  series->resources.tracks(&pipeline, resources);
}

void PipelineMetrics::on_finish(const Pipeline& pipeline, const PipelineStats& stats,
                                const std::exception_ptr& /*error*/) {
  std::lock_guard lock(mutex_);
  for (Series& series : series_) {
    const auto live = std::find(series.live.begin(), series.live.end(), &pipeline);
    if (live == series.live.end()) continue;
    series.live.erase(live);
    // Merged by name in the first run as in the others and in snapshot(): stages the user named
    // alike are one series, and no counter goes down when their pipeline finishes.
    if (!series.finished.has_value()) series.finished = PipelineStats{};
    accumulate(*series.finished, stats);
    series.resources.finished(&pipeline, stats.resources);
    return;
  }
}

std::vector<PipelineStats> PipelineMetrics::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<PipelineStats> result;
  result.reserve(series_.size());
  for (const Series& series : series_) {
    PipelineStats total = series.finished.value_or(PipelineStats{});
    std::vector<std::vector<ResourceStats>> resources;
    for (const Pipeline* live : series.live) {
      PipelineStats now = live->stats();
      accumulate(total, now);
      // A resource tracked after the run started is in use by it from here on.
      series.resources.tracks(live, now.resources);
      resources.push_back(std::move(now.resources));
    }
    total.resources = series.resources.total(resources);
    if (total.name.empty()) total.name = series.name;
    result.push_back(std::move(total));
  }
  return result;
}

std::vector<MetricFamily> PipelineMetrics::Collect() const {
  return families_of(snapshot());
}

bool PipelineMetrics::ready() const {
  std::lock_guard lock(mutex_);
  bool any = false;
  for (const Series& series : series_) {
    for (const Pipeline* live : series.live) {
      if (live->state() != PipelineState::running) return false;
      any = true;
    }
  }
  return any;
}

}  // namespace conveyor::prometheus
