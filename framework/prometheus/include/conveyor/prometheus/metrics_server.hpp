// MetricsServer: the HTTP endpoint that Prometheus scrapes, on prometheus-cpp's Exposer.
//
//   conveyor::prometheus::MetricsServer server({.listen = "127.0.0.1:9464"});
//   server.add(std::make_shared<conveyor::prometheus::PipelineMetrics>());
//
// It serves:
// - /metrics: every collectable added, plus the process_* metrics and conveyor_build_info;
//   behind HTTP basic auth when `auth_file` names a file of `user:password` lines;
// - /healthz: 200 while the process serves at all (liveness);
// - /readyz: 200 while `readiness()` says ready, 503 otherwise (a pipeline that drains is not
//   ready for more work).
//
// It listens on 127.0.0.1 unless told otherwise; port 0 picks a free port (see `port()`).
//
// Contract: the constructor throws MetricsServerError, with a message that names the cause (the
// address, the port in use, the auth file), when it cannot serve; nothing aborts. `add` and
// `set_readiness` may be called at any time from any thread. Requests are served on the server's
// own threads until it is destroyed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>

namespace prometheus {
class Exposer;
}

namespace conveyor::prometheus {

class MetricsServerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct MetricsServerOptions {
  // HOST:PORT. HOST is an IPv4 address, `localhost`, or an IPv6 address in brackets.
  std::string listen = "127.0.0.1:9464";
  // A file of `user:password` lines (blank lines and `#` comments skipped); empty: no auth.
  std::string auth_file{};
};

class MetricsServer {
 public:
  explicit MetricsServer(const MetricsServerOptions& options = {});
  ~MetricsServer();

  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  void add(std::shared_ptr<::prometheus::Collectable> collectable);

  // What /readyz asks; ready by default.
  void set_readiness(std::function<bool()> ready);

  // The port it listens on (the one picked, if the options said 0).
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  // HOST:PORT with the real port.
  [[nodiscard]] std::string address() const;

  // Answers /healthz and /readyz; public so that the server's C callback can reach it.
  [[nodiscard]] bool is_ready() const;

 private:
  std::string host_;
  std::uint16_t port_ = 0;
  std::unique_ptr<::prometheus::Exposer> exposer_;
  std::vector<std::shared_ptr<::prometheus::Collectable>> collectables_;
  mutable std::mutex mutex_;  // guards readiness_ and collectables_
  std::function<bool()> readiness_;
};

// Parses HOST:PORT as MetricsServerOptions::listen takes it; throws MetricsServerError.
struct ListenAddress {
  std::string host;
  std::uint16_t port = 0;
};
ListenAddress parse_listen_address(const std::string& text);

// Reads an auth file of `user:password` lines; throws MetricsServerError.
std::vector<std::pair<std::string, std::string>> read_auth_file(const std::string& path);

}  // namespace conveyor::prometheus
