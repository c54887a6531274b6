// The latency probe behind `log-ingest generate --to … --latency FILE`: how long a message takes
// from the moment it is sent to the moment its line appears in a service's output file.
//
// The sender marks every `every`-th message: the request path of its access-log line becomes
// `/latency-probe-US`, US being the steady clock in microseconds when it was made (`mark`), just
// before it is sent. A thread follows FILE as the service appends to it, finds each
// `latency-probe-US` and records now − US. Any service that keeps the message text works, however
// it escapes slashes: log-ingest, rsyslog, syslog-ng.
//
// Contract: construct before sending; `mark` is thread-safe. `finish(expected, wait)` stops
// following once `expected` marks were seen or `wait` passed with none new, and returns what was
// seen. A FILE that exists when the probe starts is followed from its end; one that appears later,
// from its beginning. Marks stamped before the probe started are ignored.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace conveyor::log_ingest {

struct LatencyReport {
  std::vector<std::uint32_t> micros;  // sorted, one per mark seen
  // The q-quantile (0..1) in milliseconds; 0 when nothing was seen.
  [[nodiscard]] double quantile_ms(double q) const;
};

class LatencyProbe {
 public:
  explicit LatencyProbe(std::string file);
  ~LatencyProbe();
  LatencyProbe(const LatencyProbe&) = delete;
  LatencyProbe& operator=(const LatencyProbe&) = delete;

  // Rewrites the request path of the access-log `line` to `/latency-probe-NOW`. False when the line
  // is not a whole access-log line (then it is left alone).
  static bool mark(std::string& line);

  LatencyReport finish(std::uint64_t expected, std::chrono::milliseconds wait);

 private:
  void follow();
  void scan(std::string_view text);

  std::string file_;
  std::uint64_t start_us_;
  std::atomic<std::uint64_t> expected_{UINT64_MAX};
  std::atomic<std::uint64_t> seen_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::uint32_t> micros_;  // written by the thread; read after it joined
  int fd_;                             // the thread's once it runs
  std::jthread thread_;
};

// The steady clock in microseconds, as the probe stamps it.
std::uint64_t steady_micros();

}  // namespace conveyor::log_ingest
