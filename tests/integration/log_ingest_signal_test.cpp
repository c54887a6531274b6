// log-ingest behind a pipe that has gone quiet (the way it runs behind `tail -f`): interrupted by
// Ctrl-C (SIGINT) or SIGTERM, it must stop reading at once, process every line it had read, exit 0,
// and write the summary so far marked partial; meanwhile its metrics endpoint serves the counts
// so far.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "child_process.hpp"
#include "watchdog.hpp"

#ifdef CONVEYOR_HAS_PROMETHEUS
#include <sstream>

#include "http_get.hpp"
#endif

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string combined_line(int i, int status) {
  return "10.0.0." + std::to_string(i % 250) + " - - [10/Oct/2024:13:55:36 +0000] \"GET /item/" +
         std::to_string(i) + " HTTP/1.1\" " + std::to_string(status) + " 100 \"-\" \"curl/8.0\"";
}

std::uint64_t count_lines(const fs::path& path) {
  std::ifstream in(path);
  std::uint64_t lines = 0;
  for (std::string line; std::getline(in, line);)
    ++lines;
  return lines;
}

class LogIngestSignal : public ::testing::TestWithParam<int> {};

TEST_P(LogIngestSignal, StopsAQuietPipeAndWritesThePartialSummary) {
  conveyor::testing::Watchdog watchdog(60s);
  const fs::path dir =
      fs::temp_directory_path() / ("conveyor-log-ingest-signal-" + std::to_string(::getpid()) +
                                   "-" + std::to_string(GetParam()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  conveyor::testing::ChildProcess child(
      {CONVEYOR_LOG_INGEST, "run", "--quiet", "--input", "-", "--format", "combined", "--workers",
       "2", "--out-dir", dir.string()},
      (dir / "stderr.txt").string(), /*pipe_stdin=*/true);

  // 1000 good lines (every fifth a 500), one malformed line, and a last line whose newline never
  // comes; then the pipe goes quiet, still open. The signal comes before that line's end was read,
  // so the line is dead-lettered as cut short, not parsed as if it were whole.
  constexpr int good = 1000;
  std::string text;
  for (int i = 0; i < good; ++i)
    text += combined_line(i, i % 5 == 0 ? 500 : 200) + "\n";
  text += "this is not a log line\n";
  text += combined_line(good, 404);
  child.write_stdin(text);

  // Wait (bounded) until log-ingest has read all of it.
  for (int i = 0; i < 1000 && child.stdin_unread() != 0; ++i)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(child.stdin_unread(), 0) << "log-ingest did not read its stdin";
  std::this_thread::sleep_for(100ms);  // and is back waiting in a read
  ASSERT_TRUE(child.running());

  const int status = child.stop(GetParam(), 30s);
  std::ifstream err(dir / "stderr.txt");
  const std::string errors{std::istreambuf_iterator<char>(err), {}};
  ASSERT_EQ(status, 0) << "log-ingest did not stop cleanly after the signal; stderr:\n" << errors;

  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load((dir / "summary.json").string()).get(summary), simdjson::SUCCESS);
  EXPECT_TRUE(bool(summary["partial"]));
  EXPECT_EQ(std::uint64_t(summary["lines"]), std::uint64_t{good + 2});
  EXPECT_EQ(std::uint64_t(summary["records"]), std::uint64_t{good});
  EXPECT_EQ(std::uint64_t(summary["rejected"]), 2U);
  EXPECT_EQ(std::uint64_t(summary["rejected_by_reason"]["interrupted before the end of the line"]),
            1U);
  EXPECT_EQ(std::uint64_t(summary["by_status"]["500"]), std::uint64_t{good / 5});
  EXPECT_EQ(std::uint64_t(summary["bytes"]), std::uint64_t{100 * good});
  EXPECT_EQ(count_lines(dir / "records.jsonl"), std::uint64_t{good});
  EXPECT_EQ(count_lines(dir / "dead-letters.jsonl"), 2U);
  fs::remove_all(dir);
}

#ifdef CONVEYOR_HAS_PROMETHEUS
// The sum of a counter family's samples in a /metrics page (its lines "name{...} value").
double sum_of(const std::string& page, const std::string& name) {
  double sum = 0;
  std::istringstream lines(page);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != ' ' && next != '{') continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

TEST(LogIngestLive, ServesTheCountsSoFarWhileItWaitsOnAPipe) {
  conveyor::testing::Watchdog watchdog(60s);
  const fs::path dir =
      fs::temp_directory_path() / ("conveyor-log-ingest-live-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path errors = dir / "stderr.txt";
  conveyor::testing::ChildProcess child(
      {CONVEYOR_LOG_INGEST, "run", "--quiet", "--input", "-", "--format", "combined",
       "--metrics-listen", "127.0.0.1:0", "--out-dir", dir.string()},
      errors.string(), /*pipe_stdin=*/true);

  // The address it chose, from its stderr.
  std::uint16_t port = 0;
  for (int i = 0; i < 500 && port == 0; ++i) {
    std::ifstream in(errors);
    const std::string text{std::istreambuf_iterator<char>(in), {}};
    const std::string marker = "http://127.0.0.1:";
    if (const auto at = text.find(marker); at != std::string::npos) {
      port = static_cast<std::uint16_t>(std::stoi(text.substr(at + marker.size())));
    } else {
      std::this_thread::sleep_for(10ms);
    }
  }
  ASSERT_NE(port, 0) << "log-ingest did not say where it serves metrics";

  std::string text;
  for (int i = 0; i < 300; ++i)
    text += combined_line(i, i % 3 == 0 ? 503 : 200) + "\n";
  text += "not a log line\n";
  child.write_stdin(text);

  // Scrape until every count has arrived (bounded), with the pipe still open. Lines are counted
  // where they are parsed and records where they are aggregated, a stage later, so one count can
  // be complete on a page where the other is not yet.
  const auto complete = [](const std::string& page) {
    return sum_of(page, "log_ingest_lines_total") >= 301 &&
           sum_of(page, "log_ingest_records_total") >= 300 &&
           sum_of(page, "log_ingest_rejected_total") >= 1 &&
           sum_of(page, "log_ingest_bytes_total") >= 300 * 100;
  };
  std::string page;
  for (int i = 0; i < 1000; ++i) {
    page = conveyor::testing::http_get(port, "/metrics").body;
    if (complete(page)) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(sum_of(page, "log_ingest_lines_total"), 301);
  EXPECT_EQ(sum_of(page, "log_ingest_records_total"), 300);
  EXPECT_NE(page.find("log_ingest_records_total{status_class=\"5xx\"} 100"), std::string::npos)
      << page;
  EXPECT_EQ(sum_of(page, "log_ingest_rejected_total"), 1);
  EXPECT_EQ(sum_of(page, "log_ingest_bytes_total"), 300 * 100);
  // The group lock behind the live counts, among the pipeline's resources.
  EXPECT_NE(page.find("resource=\"live-totals\""), std::string::npos);

  EXPECT_EQ(child.stop(SIGINT, 30s), 0);
  fs::remove_all(dir);
}
#endif

INSTANTIATE_TEST_SUITE_P(Signals, LogIngestSignal, ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& signal) {
                           return std::string(signal.param == SIGINT ? "SIGINT" : "SIGTERM");
                         });

}  // namespace
