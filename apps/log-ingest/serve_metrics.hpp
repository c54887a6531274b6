// ServeMetrics: the counters of `log-ingest serve`'s inputs and outputs as Prometheus metrics,
// read at scrape time. Labels are the inputs' and outputs' names from the configuration only, so
// their number is bounded; hosts and paths never become labels.
//
//   log_ingest_received_total{input}, log_ingest_received_bytes_total{input},
//   log_ingest_dropped_total{input,reason="udp_overflow"}, log_ingest_connections{input},
//   log_ingest_connections_total{input}, log_ingest_connections_rejected_total{input,reason},
//   log_ingest_framing_errors_total{input}, log_ingest_idle_disconnects_total{input},
//   log_ingest_written_total, log_ingest_dead_letters_written_total,
//   log_ingest_lost_on_output_total, log_ingest_output_errors_total{output},
//   log_ingest_output_held_records{output},
//   log_ingest_queue_chunks
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>

#include "conveyor/prometheus/families.hpp"
#include "ingress.hpp"
#include "serve_writer.hpp"

namespace conveyor::log_ingest {

class ServeMetrics final : public ::prometheus::Collectable {
 public:
  // `inputs` lists every input's counters at scrape time (inputs come and go on reload).
  ServeMetrics(std::function<std::vector<const InputCounters*>()> inputs,
               std::shared_ptr<ServeOutputs> outputs, std::function<double()> queued)
      : inputs_(std::move(inputs)), outputs_(std::move(outputs)), queued_(std::move(queued)) {}

  [[nodiscard]] std::vector<::prometheus::MetricFamily> Collect() const override;

 private:
  std::function<std::vector<const InputCounters*>()> inputs_;
  std::shared_ptr<ServeOutputs> outputs_;
  std::function<double()> queued_;
};

}  // namespace conveyor::log_ingest
