// ProcessMetrics: the standard process_* metrics of Prometheus's client libraries, read from
// /proc at every scrape (prometheus-cpp has none), and conveyor_build_info.
//
//   process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
//   process_open_fds, process_max_fds, process_start_time_seconds, process_threads
//
// On a system without /proc, the families that need it are left out.
//
// Contract: thread-safe; stateless apart from the time the process started.
#pragma once

#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

namespace conveyor::prometheus {

class ProcessMetrics final : public ::prometheus::Collectable {
 public:
  [[nodiscard]] std::vector<::prometheus::MetricFamily> Collect() const override;
};

}  // namespace conveyor::prometheus
