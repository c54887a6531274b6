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
//   ready for more work);
// - pages added with `add_page` (an app's JSON, such as log-ingest's /summary), behind the same
//   basic auth as /metrics.
//
// It listens on 127.0.0.1 unless told otherwise; port 0 picks a free port (see `port()`).
//
// Contract: the constructor throws MetricsServerError, with a message that names the cause (the
// address, the port in use, the auth file), when it cannot serve; nothing aborts. `add` and
// `set_readiness` and `add_page` may be called at any time from any thread. Requests are served on
// the server's own threads (`server_threads`, one connection each at a time) until it is
// destroyed; a page's function runs on them. A client that sends or reads nothing for
// `request_timeout` is disconnected. Refused requests (a 4xx: bad credentials, a method other than
// GET on a page, a page's own 4xx) are counted in conveyor_metrics_http_rejected_total{code}.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>

namespace prometheus {
class Exposer;
}

namespace conveyor::prometheus {

class RejectedRequests;

class MetricsServerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a page answers.
struct Page {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
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

  // Serves GET `path` (without its query) with `page(query)`, the query string without its `?`.
  void add_page(const std::string& path, std::function<Page(std::string_view query)> page);

  // The port it listens on (the one picked, if the options said 0).
  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  // HOST:PORT with the real port.
  [[nodiscard]] std::string address() const;

  // Answer /healthz, /readyz and the pages; public so that the server's C callback can reach them.
  [[nodiscard]] bool is_ready() const;
  [[nodiscard]] std::function<Page(std::string_view)> page(const std::string& path) const;
  // Whether an Authorization header value grants access (always, without an auth file).
  [[nodiscard]] bool authorized(const char* header) const;
  // Counts a request refused with `status` (4xx) in conveyor_metrics_http_rejected_total.
  void rejected(int status);

  // civetweb's threads, each serving one connection at a time, and how long a client that sends or
  // reads nothing may hold one.
  static constexpr int server_threads = 8;
  static constexpr std::chrono::milliseconds request_timeout{5000};

 private:
  std::string host_;
  std::uint16_t port_ = 0;
  std::unique_ptr<::prometheus::Exposer> exposer_;
  std::vector<std::shared_ptr<::prometheus::Collectable>> collectables_;
  mutable std::mutex mutex_;  // guards readiness_, collectables_ and pages_
  std::function<bool()> readiness_;
  std::map<std::string, std::function<Page(std::string_view)>, std::less<>> pages_;
  std::vector<std::pair<std::string, std::string>> users_;  // from the auth file
  std::shared_ptr<RejectedRequests> rejected_;
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
