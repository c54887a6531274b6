// Building blocks for collectors that make their metric families at scrape time: a family, and a
// counter or gauge sample in it (`add_sample`: whichever the family's type is). Used by
// PipelineMetrics and by applications with counts of their own (log-ingest's live totals).
//
//   auto records = conveyor::prometheus::family("app_records_total", "Records.",
//                                                ::prometheus::MetricType::Counter);
//   conveyor::prometheus::add_counter(records, {{"status_class", "5xx"}}, 42);
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

namespace conveyor::prometheus {

using Labels = std::vector<::prometheus::ClientMetric::Label>;

inline ::prometheus::MetricFamily family(std::string name, std::string help,
                                         ::prometheus::MetricType type) {
  ::prometheus::MetricFamily result;
  result.name = std::move(name);
  result.help = std::move(help);
  result.type = type;
  return result;
}

inline void add_counter(::prometheus::MetricFamily& family, Labels labels, double value) {
  ::prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.counter.value = value;
  family.metric.push_back(std::move(metric));
}

inline void add_gauge(::prometheus::MetricFamily& family, Labels labels, double value) {
  ::prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  family.metric.push_back(std::move(metric));
}

// A counter's or a gauge's sample, as the family's type says.
inline void add_sample(::prometheus::MetricFamily& family, Labels labels, double value) {
  if (family.type == ::prometheus::MetricType::Counter) {
    add_counter(family, std::move(labels), value);
  } else {
    add_gauge(family, std::move(labels), value);
  }
}

}  // namespace conveyor::prometheus
