// RejectedRequests: the metrics server's refusals by HTTP status (4xx), as the counter family
// conveyor_metrics_http_rejected_total{code}. 400, 401 and 405 are always exposed, from 0; any
// other 4xx once it has happened.
//
// Contract: `add` may be called from any thread, at any time; Collect() reads each count once
// (relaxed: the counts order nothing, and a scrape may miss a refusal made while it reads).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "conveyor/prometheus/families.hpp"

namespace conveyor::prometheus {

class RejectedRequests final : public ::prometheus::Collectable {
 public:
  void add(int status) noexcept {
    if (status < first || status >= first + static_cast<int>(counts_.size())) return;
    counts_[static_cast<std::size_t>(status - first)].fetch_add(1, std::memory_order_relaxed);
  }

  [[nodiscard]] std::vector<::prometheus::MetricFamily> Collect() const override {
    auto rejected = family("conveyor_metrics_http_rejected_total",
                           "Requests the metrics server refused, by HTTP status.",
                           ::prometheus::MetricType::Counter);
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      const int status = first + static_cast<int>(i);
      const std::uint64_t count = counts_[i].load(std::memory_order_relaxed);
      if (count == 0 && status != 400 && status != 401 && status != 405) continue;
      add_counter(rejected, {{"code", std::to_string(status)}}, static_cast<double>(count));
    }
    return {std::move(rejected)};
  }

 private:
  static constexpr int first = 400;
  std::array<std::atomic<std::uint64_t>, 100> counts_{};
};

}  // namespace conveyor::prometheus
