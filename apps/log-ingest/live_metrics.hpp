// LiveMetrics: log-ingest's live totals (stages::LiveTotals) as Prometheus counters, read at
// scrape time as a member of the `snapshot` group, so that a scrape sees every aggregation
// worker's slot as of one moment.
//
//   log_ingest_lines_total, log_ingest_records_total{status_class="2xx"},
//   log_ingest_rejected_total, log_ingest_filtered_total, log_ingest_bytes_total
#pragma once

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>

#include "conveyor/framework/shared.hpp"
#include "conveyor/prometheus/families.hpp"
#include "conveyor/stages/live_totals.hpp"

namespace conveyor::log_ingest {

class LiveMetrics final : public ::prometheus::Collectable {
 public:
  explicit LiveMetrics(std::shared_ptr<Shared<stages::LiveTotals>> live) : live_(std::move(live)) {}

  [[nodiscard]] std::vector<::prometheus::MetricFamily> Collect() const override {
    using ::prometheus::MetricType;
    const stages::LiveTotals::Counts now =
        live_->access(stages::LiveTotals::snapshot,
                      [](const stages::LiveTotals& totals) { return totals.total(); });
    const auto one = [](const char* name, const char* help, double value) {
      auto result = prometheus::family(name, help, MetricType::Counter);
      prometheus::add_counter(result, {}, value);
      return result;
    };
    std::vector<::prometheus::MetricFamily> families;
    families.push_back(one("log_ingest_lines_total", "Lines read, blank ones included.",
                           static_cast<double>(now.lines)));
    auto records = prometheus::family("log_ingest_records_total",
                                      "Records parsed and kept by the filter, by status class.",
                                      MetricType::Counter);
    static constexpr std::array<const char*, stages::LiveTotals::status_classes> classes = {
        "1xx", "2xx", "3xx", "4xx", "5xx", "none"};
    for (std::size_t i = 0; i < classes.size(); ++i) {
      prometheus::add_counter(records, {{"status_class", classes[i]}},
                              static_cast<double>(now.by_status_class[i]));
    }
    families.push_back(std::move(records));
    families.push_back(one("log_ingest_rejected_total", "Lines dead-lettered.",
                           static_cast<double>(now.rejected)));
    families.push_back(one("log_ingest_filtered_total", "Records the --where filter left out.",
                           static_cast<double>(now.filtered)));
    families.push_back(one("log_ingest_bytes_total", "Sum of the records' sizes.",
                           static_cast<double>(now.bytes)));
    return families;
  }

 private:
  std::shared_ptr<Shared<stages::LiveTotals>> live_;
};

}  // namespace conveyor::log_ingest
