// PipelineMetrics: the statistics of one or more pipelines, as Prometheus metrics.
//
//   auto metrics = std::make_shared<conveyor::prometheus::PipelineMetrics>();
//   pipeline.add_observer(metrics);          // it learns of the pipeline when it starts
//   server.add(metrics);                     // and is collected at every scrape of /metrics
//
// Nothing is recorded on the pipeline's hot path: at every scrape, `Collect()` takes a
// `Pipeline::stats()` snapshot (which sums each worker's own counters) and turns it into metric
// families. After a pipeline finishes, its final statistics stay exported. The families are listed
// in docs/metrics.md: per stage (items, errors, busy and blocked time, an item-duration
// histogram), per channel (depth, capacity), per shared resource and group (lock waits, aces).
// Every series carries the labels `pipeline` and `stage` (or `resource` and `group`) only.
//
// Pipelines are told apart by name. Runs of the same name, one after another or at once, share
// their series: the counters and histograms add up over the runs (so a service that runs a fresh
// pipeline per job keeps monotonic counters), while the gauges (running, elapsed, workers, channel
// depth and capacity) come from the latest run. A shared resource object's accesses count once,
// whichever runs track it, and resources of one name add up (resource_totals.hpp).
//
// Contract: thread-safe. An observer callback and a scrape may run at once; the pipeline is only
// asked for statistics between its `on_start` and `on_finish`.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "conveyor/framework/observer.hpp"
#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/stats.hpp"
#include "conveyor/prometheus/detail/resource_totals.hpp"

namespace conveyor::prometheus {

class PipelineMetrics final : public ::prometheus::Collectable, public Observer {
 public:
  void on_start(const Pipeline& pipeline) override;
  void on_finish(const Pipeline& pipeline, const PipelineStats& stats,
                 const std::exception_ptr& error) override;

  [[nodiscard]] std::vector<::prometheus::MetricFamily> Collect() const override;

  // Statistics of every pipeline seen: a snapshot for those that run, the final ones for the rest.
  [[nodiscard]] std::vector<PipelineStats> snapshot() const;

  // True while some pipeline runs and none of those running is stopping (for /readyz).
  [[nodiscard]] bool ready() const;

 private:
  // The pipelines of one name: their series are one.
  struct Series {
    std::string name;
    std::optional<PipelineStats> finished;  // the runs that finished, summed (not the resources)
    std::vector<const Pipeline*> live;      // the runs that have not
    // The shared resources their runs track (a snapshot learns of those tracked late).
    mutable detail::ResourceTotals resources;
  };

  mutable std::mutex mutex_;
  std::vector<Series> series_;
};

// The metric families of some pipelines' statistics (what PipelineMetrics::Collect() returns).
std::vector<::prometheus::MetricFamily> families_of(const std::vector<PipelineStats>& pipelines);

}  // namespace conveyor::prometheus
