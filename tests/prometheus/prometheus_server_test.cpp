// The exporter against the real tools: examples/metrics_service runs as its own process, its
// exposition passes `promtool check metrics`, and a real Prometheus server (Debian's `prometheus`)
// scrapes it every second and computes the rate the example was told to produce; and the same for
// `log-ingest serve` while its load generator sends to it. Everything runs
// on loopback, every wait has a deadline, and every process and file is cleaned up.
#include <gtest/gtest.h>

#include <simdjson.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "child_process.hpp"
#include "http_get.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::testing::ChildProcess;
using conveyor::testing::http_get;
using conveyor::testing::Watchdog;
using namespace std::chrono_literals;

constexpr double rate = 2000;  // readings per second asked of the example

// A fresh directory under the system's temporary one, removed with everything in it.
class TemporaryDirectory {
 public:
  TemporaryDirectory()
      : path_(std::filesystem::temp_directory_path() /
              ("conveyor-prometheus-" + std::to_string(::getpid()) + "-" +
               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()))) {
    std::filesystem::create_directories(path_);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A loopback port that was free a moment ago (Prometheus cannot be told to pick one itself).
std::uint16_t free_port() {
  boost::asio::io_context context;
  boost::asio::ip::tcp::acceptor acceptor(context, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return acceptor.local_endpoint().port();
}

// The example, started on a free port; `port` is the one it printed.
struct Example {
  explicit Example(const std::filesystem::path& logs)
      : process({CONVEYOR_METRICS_SERVICE, "--listen", "127.0.0.1:0", "--rate",
                 std::to_string(static_cast<int>(rate))},
                (logs / "metrics_service.log").string()) {
    const auto line = process.read_line(30s);
    const std::string prefix = "serving metrics on http://127.0.0.1:";
    if (!line || line->rfind(prefix, 0) != 0) {
      throw std::runtime_error("metrics_service did not say where it serves: " +
                               line.value_or("(nothing)"));
    }
    port = static_cast<std::uint16_t>(std::stoi(line->substr(prefix.size())));
  }
  ChildProcess process;
  std::uint16_t port = 0;
};

std::string url_encode(const std::string& text) {
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      out += escaped;
    }
  }
  return out;
}

// The value of the first series an instant query returns, or nullopt when it returns none.
std::optional<double> query(std::uint16_t port, const std::string& promql) {
  const auto response = http_get(port, "/api/v1/query?query=" + url_encode(promql));
  if (response.status != 200) return std::nullopt;
  simdjson::dom::parser parser;
  const simdjson::dom::element document = parser.parse(response.body);
  for (const simdjson::dom::element series : document["data"]["result"].get_array()) {
    const std::string_view value = series["value"].at(1).get_string();
    return std::stod(std::string(value));
  }
  return std::nullopt;
}

// What an instant query answered: whether Prometheus took it, and how many series it returned.
struct Answer {
  bool valid = false;
  std::size_t series = 0;
  std::string error;
};

Answer ask(std::uint16_t port, const std::string& promql) {
  const auto response = http_get(port, "/api/v1/query?query=" + url_encode(promql));
  simdjson::dom::parser parser;
  simdjson::dom::element document;
  if (parser.parse(response.body).get(document) != simdjson::SUCCESS) {
    return {false, 0, "not JSON: " + response.body};
  }
  std::string_view status;
  if (document["status"].get(status) != simdjson::SUCCESS || status != "success") {
    std::string_view error;
    if (document["error"].get(error) != simdjson::SUCCESS) error = response.body;
    return {false, 0, std::string(error)};
  }
  return {true, document["data"]["result"].get_array().size(), {}};
}

// A dashboard's queries as Grafana would send them with every variable at "All", a rate interval
// of 10 s and a range of 1 min; and `count(M)` for the metric M of each variable's
// label_values(M…).
std::vector<std::string> dashboard_queries(const std::string& file) {
  simdjson::dom::parser parser;
  const simdjson::dom::element dashboard = parser.load(file);
  const auto expand = [](std::string expr) {
    static const std::vector<std::pair<std::string, std::string>> variables = {
        {"$__rate_interval", "10s"}, {"$__range", "1m"}, {"$job", ".*"}, {"$instance", ".*"}};
    for (const auto& [name, value] : variables) {
      for (std::size_t at = expr.find(name); at != std::string::npos;
           at = expr.find(name, at + value.size())) {
        expr.replace(at, name.size(), value);
      }
    }
    return expr;
  };
  std::vector<std::string> queries;
  for (const simdjson::dom::element panel : dashboard["panels"].get_array()) {
    simdjson::dom::array targets;
    if (panel["targets"].get(targets) != simdjson::SUCCESS) continue;  // a row
    for (const simdjson::dom::element target : targets)
      queries.push_back(expand(std::string(target["expr"].get_string().value())));
  }
  static const std::regex label_values(R"(label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*))");
  for (const simdjson::dom::element variable : dashboard["templating"]["list"].get_array()) {
    std::string_view definition;
    if (variable["definition"].get(definition) != simdjson::SUCCESS) continue;
    std::smatch match;
    const std::string text(definition);
    if (std::regex_search(text, match, label_values))
      queries.push_back("count(" + match[1].str() + ")");
  }
  return queries;
}

// Polls `ready` every 200 ms until it holds or `timeout` passes.
template <class Predicate>
bool eventually(std::chrono::seconds timeout, Predicate ready) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (ready()) return true;
    } catch (const std::exception&) {
      // not up yet
    }
    std::this_thread::sleep_for(200ms);
  }
  return false;
}

// A Prometheus server on `port` that scrapes 127.0.0.1:`target` every second (job "conveyor"),
// with the deploy's rules when `rules` is set; its data and log in `dir`.
ChildProcess start_prometheus(const std::filesystem::path& dir, std::uint16_t port,
                              std::uint16_t target, bool rules) {
  const auto config = dir / "prometheus.yml";
  const std::string deploy = CONVEYOR_DEPLOY_DIR;
  std::ofstream file(config);
  file << "global:\n"
          "  scrape_interval: 1s\n"
          "  evaluation_interval: 1s\n";
  if (rules) {
    file << "rule_files:\n  - " << deploy << "/recording_rules.yml\n  - " << deploy
         << "/alerting_rules.yml\n";
  }
  file << "scrape_configs:\n"
          "  - job_name: conveyor\n"
          "    static_configs:\n"
          "      - targets: [\"127.0.0.1:"
       << target << "\"]\n";
  file.close();
  return ChildProcess(
      {CONVEYOR_PROMETHEUS, "--config.file=" + config.string(),
       "--storage.tsdb.path=" + (dir / "data").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(port), "--log.level=warn"},
      (dir / "prometheus.log").string());
}

TEST(MetricsServiceProcess, ItsExpositionPassesPromtoolAndSigtermDrainsIt) {
  Watchdog watchdog(std::chrono::seconds(120));
  TemporaryDirectory directory;
  Example example(directory.path());
  ASSERT_TRUE(eventually(10s, [&] { return http_get(example.port, "/readyz").status == 200; }));

  const auto metrics = http_get(example.port, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  const auto exposition = directory.path() / "metrics.txt";
  std::ofstream(exposition) << metrics.body;
  const std::string check = std::string(CONVEYOR_PROMTOOL) + " check metrics < " +
                            exposition.string() + " > " +
                            (directory.path() / "promtool.log").string() + " 2>&1";
  const int status = std::system(check.c_str());  // NOLINT(concurrency-mt-unsafe): one thread
  std::ifstream log(directory.path() / "promtool.log");
  const std::string complaints((std::istreambuf_iterator<char>(log)), {});
  EXPECT_EQ(status, 0) << complaints;
  EXPECT_EQ(complaints, "");  // promtool also lists lint problems, with status 0 for some

  EXPECT_EQ(example.process.stop(SIGTERM, 20s), 0) << "it should drain and exit 0";
}

TEST(MetricsServiceProcess, ARealPrometheusScrapesItAndSeesTheConfiguredRate) {
  Watchdog watchdog(std::chrono::seconds(180));
  TemporaryDirectory directory;
  Example example(directory.path());

  const std::uint16_t prometheus_port = free_port();
  ChildProcess prometheus = start_prometheus(directory.path(), prometheus_port, example.port, true);
  ASSERT_TRUE(eventually(60s, [&] { return http_get(prometheus_port, "/-/ready").status == 200; }))
      << "Prometheus did not become ready; see its log";

  // Six scrapes: the 5 s window below is then covered by samples from end to end.
  ASSERT_TRUE(eventually(60s, [&] {
    return query(prometheus_port, "count_over_time(up{job=\"conveyor\"}[1m])").value_or(0) >= 6;
  })) << "Prometheus did not scrape the example";
  EXPECT_EQ(query(prometheus_port, "min_over_time(up{job=\"conveyor\"}[1m])"), 1.0)
      << "a scrape failed";

  const auto measured =
      query(prometheus_port,
            "rate(conveyor_stage_items_sent_total{job=\"conveyor\",stage=\"readings\"}[5s])");
  ASSERT_TRUE(measured.has_value());
  std::printf("Prometheus measured %.1f items per second (the example was told %.0f)\n", *measured,
              rate);
  EXPECT_GT(*measured, 0.0);
  EXPECT_LT(std::abs(*measured - rate) / rate, 0.25)
      << "Prometheus measured " << *measured << " items per second; the example was told " << rate;

  // The recording rules load and evaluate on the live series.
  EXPECT_TRUE(eventually(30s, [&] {
    return query(prometheus_port, "conveyor:stage_items_sent:rate1m{stage=\"readings\"}")
               .value_or(0) > 0;
  }));

  EXPECT_EQ(example.process.stop(SIGTERM, 20s), 0);
  EXPECT_EQ(prometheus.stop(SIGTERM, 30s), 0);
}

#ifdef CONVEYOR_LOG_INGEST
// `log-ingest serve` under its load generator at a steady rate: a real Prometheus scraping it
// every second computes rate(log_ingest_records_total[10s]) close to that rate, and the service
// drains to exact accounting.
TEST(LogIngestServeProcess, ARealPrometheusSeesTheGeneratorsRate) {
  Watchdog watchdog(std::chrono::seconds(180));
  TemporaryDirectory directory;
  const auto log_path = directory.path() / "serve.log";
  ChildProcess serve({CONVEYOR_LOG_INGEST, "serve", "--listen-syslog", "127.0.0.1:0",
                      "--metrics-listen", "127.0.0.1:0", "--output", "none"},
                     log_path.string());
  std::uint16_t syslog_port = 0;
  std::uint16_t metrics_port = 0;
  ASSERT_TRUE(eventually(30s, [&] {
    std::ifstream in(log_path);
    const std::string log((std::istreambuf_iterator<char>(in)), {});
    std::smatch match;
    static const std::regex tcp(R"(\(syslog_tcp\) on tcp://127\.0\.0\.1:([0-9]+))");
    static const std::regex metrics(R"(metrics on http://127\.0\.0\.1:([0-9]+)/)");
    if (!std::regex_search(log, match, tcp)) return false;
    syslog_port = static_cast<std::uint16_t>(std::stoi(match[1]));
    if (!std::regex_search(log, match, metrics)) return false;
    metrics_port = static_cast<std::uint16_t>(std::stoi(match[1]));
    return log.find("serving;") != std::string::npos;
  })) << "serve did not start";

  const std::uint16_t prometheus_port = free_port();
  ChildProcess prometheus =
      start_prometheus(directory.path(), prometheus_port, metrics_port, false);
  ASSERT_TRUE(eventually(60s, [&] { return http_get(prometheus_port, "/-/ready").status == 200; }))
      << "Prometheus did not become ready; see its log";

  // Prometheus scrapes the service before the load starts (its first scrape may come seconds
  // after it is ready).
  ASSERT_TRUE(eventually(60s, [&] {
    return query(prometheus_port, "count_over_time(up{job=\"conveyor\"}[1m])").value_or(0) >= 3;
  })) << "Prometheus did not scrape the service";

  // 2,000 messages a second for 16 s, over 4 connections: the twelve seconds below, and four to
  // spare for the generator's start and the query.
  constexpr int generator_rate = 2000;
  constexpr int load_seconds = 16;
  ChildProcess generator(
      {CONVEYOR_LOG_INGEST, "generate", "--to", "tcp://127.0.0.1:" + std::to_string(syslog_port),
       "--rate", std::to_string(generator_rate), "--lines",
       std::to_string(generator_rate * load_seconds), "--connections", "4", "--profile",
       "realistic"},
      (directory.path() / "generate.log").string());
  // Once the load arrives (the generator builds its traffic model first), twelve seconds of load
  // and scrapes: the 10 s window is then covered from end to end.
  ASSERT_TRUE(eventually(60s, [&] {
    const std::string body = http_get(metrics_port, "/metrics").body;
    const std::string sample = "\nlog_ingest_received_total{input=\"syslog_tcp\"} ";
    const std::size_t at = body.find(sample);
    return at != std::string::npos && std::stod(body.substr(at + sample.size())) > 0;
  }));
  std::this_thread::sleep_for(12s);
  const auto measured =
      query(prometheus_port, "sum(rate(log_ingest_records_total{job=\"conveyor\"}[10s]))");
  ASSERT_TRUE(measured.has_value()) << "Prometheus has no log_ingest_records_total";
  std::printf("Prometheus measured %.1f records per second (the generator sent %d)\n", *measured,
              generator_rate);
  EXPECT_LT(std::abs(*measured - generator_rate) / generator_rate, 0.15);
  EXPECT_EQ(query(prometheus_port, "min_over_time(up{job=\"conveyor\"}[10s])"), 1.0);

  // The Grafana dashboard reads what the service exports: every query is valid PromQL and has
  // data, but for the HTTP answers (the service here has no HTTP input).
  const std::vector<std::string> queries = dashboard_queries(CONVEYOR_GRAFANA_DASHBOARD);
  EXPECT_GE(queries.size(), 30U);
  for (const std::string& promql : queries) {
    const Answer answer = ask(prometheus_port, promql);
    EXPECT_TRUE(answer.valid) << promql << ": " << answer.error;
    if (promql.find("log_ingest_http_responses_total") == std::string::npos) {
      EXPECT_GT(answer.series, 0U) << promql << " returned nothing";
    }
  }

  EXPECT_EQ(generator.wait(60s), 0);
  EXPECT_EQ(serve.stop(SIGTERM, 60s), 0);
  std::ifstream in(log_path);
  const std::string log((std::istreambuf_iterator<char>(in)), {});
  const std::string expected = "received=" + std::to_string(generator_rate * load_seconds) +
                               " written=" + std::to_string(generator_rate * load_seconds);
  EXPECT_NE(log.find(expected), std::string::npos) << log;
  EXPECT_EQ(prometheus.stop(SIGTERM, 30s), 0);
}
#endif

}  // namespace
