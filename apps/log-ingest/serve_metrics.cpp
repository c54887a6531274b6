// ServeMetrics: inputs and outputs, at scrape time.
#include "serve_metrics.hpp"

#include <atomic>
#include <initializer_list>
#include <string>
#include <utility>

namespace conveyor::log_ingest {

std::vector<::prometheus::MetricFamily> ServeMetrics::Collect() const {
  using ::prometheus::MetricType;
  using Counter = std::atomic<std::uint64_t> InputCounters::*;
  std::vector<::prometheus::MetricFamily> families;
  const std::vector<const InputCounters*> inputs = inputs_();
  const auto per_input = [&](const char* name, const char* help, Counter counter,
                             MetricType type = MetricType::Counter) {
    auto result = prometheus::family(name, help, type);
    for (const InputCounters* input : inputs) {
      prometheus::add_sample(result, {{"input", input->name}},
                             static_cast<double>(InputCounters::read(input->*counter)));
    }
    families.push_back(std::move(result));
  };
  per_input("log_ingest_received_total",
            "Messages received, including those dead-lettered or dropped.",
            &InputCounters::received);
  per_input("log_ingest_received_bytes_total", "Bytes read from clients.", &InputCounters::bytes);
  per_input("log_ingest_connections", "Client connections open now.", &InputCounters::connections,
            MetricType::Gauge);
  per_input("log_ingest_connections_total", "Client connections accepted.",
            &InputCounters::connections_total);
  per_input("log_ingest_framing_errors_total",
            "Connections closed because a frame's octet count was malformed.",
            &InputCounters::framing_errors);
  per_input("log_ingest_idle_disconnects_total", "Connections closed after idle_timeout.",
            &InputCounters::idle_disconnects);
  per_input("log_ingest_tls_handshake_failures_total",
            "TLS handshakes that failed: no or a bad client certificate, or not TLS at all.",
            &InputCounters::tls_failures);
  per_input("log_ingest_files", "Files a file input follows now.", &InputCounters::files,
            MetricType::Gauge);
  per_input("log_ingest_file_rotations_total",
            "Files whose path went to another file or nowhere (read to their end).",
            &InputCounters::rotations);
  per_input("log_ingest_file_truncations_total", "Files found truncated (copytruncate).",
            &InputCounters::truncations);
  per_input("log_ingest_checkpoint_errors_total", "Checkpoints of a file input not saved.",
            &InputCounters::checkpoint_errors);

  auto responses =
      prometheus::family("log_ingest_http_responses_total",
                         "HTTP answers of an http input, by code.", MetricType::Counter);
  for (const InputCounters* input : inputs) {
    if (!input->http.load(std::memory_order_relaxed)) continue;
    for (std::size_t i = 0; i < http_codes.size(); ++i) {
      prometheus::add_counter(responses,
                              {{"input", input->name}, {"code", std::to_string(http_codes[i])}},
                              static_cast<double>(InputCounters::read(input->http_responses[i])));
    }
  }
  families.push_back(std::move(responses));

  // Per input and reason: each reason one of the input's counters.
  using Reason = std::pair<const char*, Counter>;
  const auto per_input_by_reason = [&](const char* name, const char* help,
                                       std::initializer_list<Reason> reasons) {
    auto result = prometheus::family(name, help, MetricType::Counter);
    for (const InputCounters* input : inputs) {
      for (const auto& [reason, counter] : reasons) {
        prometheus::add_counter(result, {{"input", input->name}, {"reason", reason}},
                                static_cast<double>(InputCounters::read(input->*counter)));
      }
    }
    families.push_back(std::move(result));
  };
  per_input_by_reason(
      "log_ingest_connections_rejected_total",
      "Connections closed at once, by input and reason: over max_connections or "
      "over max_connections_per_client.",
      {{"max_connections", &InputCounters::connections_rejected},
       {"max_connections_per_client", &InputCounters::client_connections_rejected}});
  per_input_by_reason("log_ingest_dropped_total", "Messages dropped, by input and reason.",
                      {{"udp_overflow", &InputCounters::dropped}});
  per_input_by_reason(
      "log_ingest_lost_bytes_total",
      "Bytes known to be lost, by input and reason: truncated_before_read is what a file held "
      "unread when it was truncated, and the unfinished line it ended with, with no copy of it "
      "under the globs.",
      {{"truncated_before_read", &InputCounters::lost_truncated_bytes}});

  // The service's totals.
  const auto total = [&](const char* name, const char* help,
                         const std::atomic<std::uint64_t>& counter) {
    auto result = prometheus::family(name, help, MetricType::Counter);
    prometheus::add_counter(result, {},
                            static_cast<double>(counter.load(std::memory_order_relaxed)));
    families.push_back(std::move(result));
  };
  const Accounting& accounting = outputs_->accounting;
  total("log_ingest_written_total", "Records written to the output.", accounting.written);
  total("log_ingest_dead_letters_written_total",
        "Messages written to the dead-letter output (flushed).", accounting.rejected);
  total("log_ingest_lost_on_output_total",
        "Records and dead letters an output could not write: still held at the drain's deadline, "
        "or refused by a pipe nobody reads.",
        accounting.lost_on_output);
  // Per output: one counter of the Accounting for each of the two files.
  const auto per_output = [&](const char* name, const char* help,
                              const std::atomic<std::uint64_t>& records,
                              const std::atomic<std::uint64_t>& dead_letters, MetricType type) {
    auto result = prometheus::family(name, help, type);
    for (const auto& [output, counter] :
         {std::pair{"records", &records}, std::pair{"dead_letters", &dead_letters}}) {
      prometheus::add_sample(result, {{"output", output}},
                             static_cast<double>(counter->load(std::memory_order_relaxed)));
    }
    families.push_back(std::move(result));
  };
  per_output("log_ingest_output_errors_total", "Writes to an output that failed.",
             accounting.record_errors, accounting.dead_letter_errors, MetricType::Counter);
  per_output("log_ingest_output_held_records",
             "Records (or dead letters) an output holds after a failed write, written again until "
             "it takes them; the writer takes nothing more meanwhile.",
             accounting.records_held, accounting.dead_letters_held, MetricType::Gauge);
  auto queued =
      prometheus::family("log_ingest_queue_chunks",
                         "Chunks waiting between the inputs and the parsers.", MetricType::Gauge);
  prometheus::add_gauge(queued, {}, queued_());
  families.push_back(std::move(queued));
  return families;
}

}  // namespace conveyor::log_ingest
