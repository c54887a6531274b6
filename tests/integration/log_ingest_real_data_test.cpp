// log-ingest on real logs from real systems (tests/data/logs, see its README for sources and
// licences): parse rates, the known-malformed lines dead-lettered, counts cross-checked against
// awk, every record written valid JSON, and the exit statuses users rely on.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "scratch_dir.hpp"
#include "watchdog.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path data = CONVEYOR_LOG_DATA;

class LogIngest : public ::testing::Test {
 protected:
  // Runs log-ingest with `arguments`; returns its exit status.
  int run(const std::string& arguments) {
    const std::string command = std::string(CONVEYOR_LOG_INGEST) + " " + arguments + " > " +
                                (dir_ / "stdout.txt").string() + " 2> " +
                                (dir_ / "stderr.txt").string();
    const int status = std::system(command.c_str());  // NOLINT(concurrency-mt-unsafe)
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  int ingest(const fs::path& input, const std::string& format, const std::string& more = {}) {
    return run("run --quiet --input '" + input.string() + "' --format " + format + " --out-dir '" +
               dir_.string() + "' " + more);
  }
  [[nodiscard]] std::string read(const std::string& name) const {
    std::ifstream in(dir_ / name, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  simdjson::dom::element summary() {
    json_ = read("summary.json");
    return parser_.parse(json_);
  }
  // Runs an awk program over `input`; returns what it printed.
  [[nodiscard]] std::string awk(const std::string& program, const fs::path& input) const {
    const fs::path out = dir_ / "awk.txt";
    const std::string command =
        "awk '" + program + "' '" + input.string() + "' > '" + out.string() + "'";
    EXPECT_EQ(std::system(command.c_str()), 0);  // NOLINT(concurrency-mt-unsafe)
    std::ifstream in(out);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  // Every line of records.jsonl parses as a JSON object; returns how many there were.
  std::uint64_t records_that_parse() {
    std::ifstream in(dir_ / "records.jsonl");
    simdjson::dom::parser parser;
    std::uint64_t count = 0;
    for (std::string line; std::getline(in, line); ++count) {
      simdjson::dom::object object;
      EXPECT_EQ(parser.parse(line).get(object), simdjson::SUCCESS) << line;
    }
    return count;
  }

  conveyor::testing::ScratchDir dir_{"log-ingest"};
  simdjson::dom::parser parser_;
  std::string json_;
};

std::uint64_t number(simdjson::dom::element summary, const char* key) {
  return std::uint64_t(summary[key]);
}

// The status counts and byte total of lines that look like access-log lines, by awk: split on
// the quotes, the status and size follow the request.
constexpr const char* awk_access =
    R"AWK(/^[^ ]+ [^ ]+ [^ ]+ \[[^]]+\] "[^"]*" [0-9][0-9][0-9] ([0-9]+|-)$/ ||
/^[^ ]+ [^ ]+ [^ ]+ \[[^]]+\] "[^"]*" [0-9][0-9][0-9] ([0-9]+|-) "[^"]*" "[^"]*"$/ {
  split($0, q, "\""); split(q[3], f, " "); n[f[1]]++; if (f[2] != "-") b += f[2]; lines++
} END { for (s in n) print "status", s, n[s]; printf "bytes %.0f\n", b; print "lines", lines + 0 })AWK";

void cross_check(simdjson::dom::element summary, const std::string& awk_output) {
  std::istringstream in(awk_output);
  std::string what;
  std::map<std::string, std::uint64_t> statuses;
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  while (in >> what) {
    if (what == "status") {
      std::string status;
      std::uint64_t count = 0;
      in >> status >> count;
      statuses[status] = count;
    } else if (what == "bytes") {
      in >> bytes;
    } else {
      in >> lines;
    }
  }
  EXPECT_EQ(number(summary, "records"), lines);
  EXPECT_EQ(number(summary, "bytes"), bytes);
  std::map<std::string, std::uint64_t> ours;
  for (auto [status, count] : summary["by_status"].get_object())
    ours[std::string(status)] = std::uint64_t(count);
  EXPECT_EQ(ours, statuses);
}

TEST_F(LogIngest, ApacheCombinedParsesAndMatchesAwk) {
  conveyor::testing::Watchdog watchdog(std::chrono::seconds(120));
  const fs::path input = data / "elastic-apache-combined" / "apache_logs";
  ASSERT_EQ(ingest(input, "combined"), 0) << read("stderr.txt");
  const auto s = summary();
  EXPECT_EQ(number(s, "lines"), 10000U);
  EXPECT_GE(number(s, "records") * 1000, 9990U * 10) << "at least 99.9 % parse";
  EXPECT_EQ(number(s, "rejected"), 1U) << "line 8899: its user agent has no closing quote";
  EXPECT_NE(read("dead-letters.jsonl").find("\"line\":8899"), std::string::npos);
  cross_check(s, awk(awk_access, input));
  EXPECT_EQ(records_that_parse(), number(s, "records"));
}

TEST_F(LogIngest, TheKnownMalformedApacheLinesAreAllDeadLettered) {
  const fs::path input =
      data / "elastic-apache-combined" / "apache_logs.2015-original-malformed-lines";
  ASSERT_EQ(ingest(input, "combined"), 0) << read("stderr.txt");
  const auto s = summary();
  EXPECT_EQ(number(s, "records"), 0U);
  EXPECT_EQ(number(s, "rejected"), 14U);
  std::istringstream dead(read("dead-letters.jsonl"));
  simdjson::dom::parser parser;
  int lines = 0;
  for (std::string line; std::getline(dead, line); ++lines) {
    const simdjson::dom::element letter = parser.parse(line);
    EXPECT_EQ(std::uint64_t(letter["line"]), static_cast<std::uint64_t>(lines + 1));
    EXPECT_FALSE(std::string_view(letter["reason"]).empty());
  }
  EXPECT_EQ(lines, 14);
}

TEST_F(LogIngest, NasaCommonLogParsesAndMatchesAwk) {
  conveyor::testing::Watchdog watchdog(std::chrono::seconds(120));
  const fs::path input = data / "nasa-http-clf" / "NASA_access_log_Aug95.first20000";
  ASSERT_EQ(ingest(input, "auto"), 0) << read("stderr.txt");
  const auto s = summary();
  EXPECT_EQ(std::string_view(s["inputs"].at(0)["format"]), "common");
  EXPECT_EQ(number(s, "lines"), 20000U);
  EXPECT_GE(number(s, "records") * 1000, 20000U * 999) << "at least 99.9 % parse";
  cross_check(s, awk(awk_access, input));
  EXPECT_EQ(records_that_parse(), number(s, "records"));
}

TEST_F(LogIngest, OneWorkerOnOneThreadWritesWhatThreeWorkersWrite) {
  conveyor::testing::Watchdog watchdog(std::chrono::seconds(120));
  const fs::path input = data / "nasa-http-clf" / "NASA_access_log_Aug95.first20000";
  std::string records[2];
  std::string summaries[2];
  for (const int workers : {1, 3}) {
    ASSERT_EQ(ingest(input, "common", "--workers " + std::to_string(workers)), 0)
        << read("stderr.txt");
    records[workers == 1 ? 0 : 1] = read("records.jsonl");
    const auto s = summary();
    summaries[workers == 1 ? 0 : 1] = simdjson::minify(s["by_status"]) +
                                      simdjson::minify(s["top_paths"]) +
                                      std::to_string(number(s, "bytes"));
  }
  EXPECT_EQ(records[0], records[1]) << "the records, in the input's order";
  EXPECT_EQ(summaries[0], summaries[1]);
  EXPECT_FALSE(records[0].empty());
}

TEST_F(LogIngest, AuthLogParsesAsSyslog) {
  const fs::path input = data / "elastic-auth-log" / "auth.log";
  ASSERT_EQ(ingest(input, "auto"), 0) << read("stderr.txt");
  const auto s = summary();
  EXPECT_EQ(std::string_view(s["inputs"].at(0)["format"]), "syslog");
  EXPECT_EQ(number(s, "records") + number(s, "blank"), number(s, "lines"));
  const std::string programs =
      awk(R"AWK({ split($5, t, /[\[:]/); n[t[1]]++ } END { print n["sshd"] })AWK", input);
  const auto top = s["top_programs"].at(0);
  EXPECT_EQ(std::string_view(top["key"]), "sshd");
  EXPECT_EQ(std::uint64_t(top["count"]), std::stoull(programs));
  EXPECT_EQ(records_that_parse(), number(s, "records"));
}

TEST_F(LogIngest, Rfc5424SamplesParseAsSyslog) {
  for (const char* name : {"pfsense-rfc5424-nginx.log", "charon-ipsec-logs.log"}) {
    ASSERT_EQ(ingest(data / "crowdsec-syslog-rfc5424" / name, "syslog"), 0) << read("stderr.txt");
    const auto s = summary();
    EXPECT_EQ(number(s, "rejected"), 0U) << name;
    EXPECT_GT(number(s, "records"), 0U) << name;
    EXPECT_EQ(records_that_parse(), number(s, "records"));
  }
}

TEST_F(LogIngest, JsonAccessLogsParseAndDeepJsonDoesNotHurt) {
  for (const char* name :
       {"crowdsec-json-access/traefik_base-http-scenario.log",
        "crowdsec-json-access/caddy-logs.log", "elastic-nginxplus-json/nginxplus_json_logs"}) {
    ASSERT_EQ(ingest(data / name, "json"), 0) << read("stderr.txt");
    const auto s = summary();
    EXPECT_GE(number(s, "records") * 100, (number(s, "lines") - number(s, "blank")) * 99) << name;
    EXPECT_EQ(records_that_parse(), number(s, "records")) << name;
  }
  ASSERT_EQ(ingest(data / "crowdsec-json-access/traefik_base-http-scenario.log", "json"), 0);
  EXPECT_GT(number(summary(), "bytes"), 0U);
  EXPECT_GT(std::uint64_t(summary()["duration_seconds"]["count"]), 0U);
}

TEST_F(LogIngest, FiltersAndExitStatuses) {
  const fs::path input = data / "elastic-apache-combined" / "apache_logs";
  ASSERT_EQ(ingest(input, "combined", "--where 'status>=500' --fields status,path"), 0);
  const std::string expected = awk(R"AWK($9 >= 500 { n++ } END { print n + 0 })AWK", input);
  EXPECT_EQ(number(summary(), "records"), std::stoull(expected));
  EXPECT_EQ(ingest(input, "combined", "--where 'status>='"), 2);
  EXPECT_NE(read("stderr.txt").find("position 9"), std::string::npos) << read("stderr.txt");
  EXPECT_EQ(run("run --input /nonexistent/file.log"), 1);
  EXPECT_NE(read("stderr.txt").find("/nonexistent/file.log"), std::string::npos);
  EXPECT_EQ(run("run --bogus"), 2);
  EXPECT_EQ(run("--version"), 0);
}

// Outputs are emptied when they are opened: one that is an input, or a file named for two
// outputs, is refused before anything is opened (status 2), and the input is left whole.
TEST_F(LogIngest, AnOutputThatIsAnInputIsRefused) {
  const fs::path input = dir_ / "access.log";
  fs::copy_file(data / "elastic-apache-combined" / "apache_logs", input);
  const auto size = fs::file_size(input);
  EXPECT_EQ(run("run --input '" + input.string() + "' --format combined --output '" +
                input.string() + "'"),
            2);
  EXPECT_NE(read("stderr.txt").find("is the input"), std::string::npos) << read("stderr.txt");
  EXPECT_EQ(fs::file_size(input), size);
  const std::string both = (dir_ / "out.jsonl").string();
  EXPECT_EQ(run("run --input '" + input.string() + "' --format combined --output '" + both +
                "' --dead-letter '" + both + "'"),
            2);
  EXPECT_NE(read("stderr.txt").find("named for two outputs"), std::string::npos);
}

// Records to stdout that cannot be written (a full device) fail the run (status 1), however
// little of them there is; and with dead letters on stdout, the summary table goes to stderr, so
// that stdout holds JSON lines only.
TEST_F(LogIngest, StdoutOutputsFailLoudlyAndStayJson) {
  const fs::path input = data / "elastic-apache-combined" / "apache_logs";
  const std::string head =
      "head -n 10 '" + input.string() + "' > '" + (dir_ / "ten.log").string() + "'";
  ASSERT_EQ(std::system(head.c_str()), 0);  // NOLINT(concurrency-mt-unsafe)
  const std::string full = std::string(CONVEYOR_LOG_INGEST) + " run --quiet --input '" +
                           (dir_ / "ten.log").string() +
                           "' --format combined --output - --summary none --dead-letter none "
                           "> /dev/full 2> /dev/null";
  const int status = std::system(full.c_str());  // NOLINT(concurrency-mt-unsafe)
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  ASSERT_EQ(run("run --input '" + (dir_ / "ten.log").string() +
                "' --format syslog --output none --summary none --dead-letter -"),
            0);
  std::istringstream lines(read("stdout.txt"));
  int dead = 0;
  for (std::string line; std::getline(lines, line); ++dead)
    EXPECT_TRUE(line.starts_with("{")) << line;
  EXPECT_EQ(dead, 10);  // Apache lines are no syslog
  EXPECT_NE(read("stderr.txt").find("dead letters"), std::string::npos);
}

// generate's output that cannot be written fails it (status 1), though it all fits in stdio's
// buffer and only the last flush finds out; and the embedded sample, which is built in memory,
// has a bounded size.
TEST_F(LogIngest, GenerateFailsLoudlyAndTheSampleIsBounded) {
  const std::string full =
      std::string(CONVEYOR_LOG_INGEST) + " generate --lines 10 --output - > /dev/full 2> /dev/null";
  const int status = std::system(full.c_str());  // NOLINT(concurrency-mt-unsafe)
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_EQ(run("run --sample-lines 0 --output none"), 2);
  EXPECT_EQ(run("run --sample-lines 92233720368547759 --output none"), 2);
  EXPECT_NE(read("stderr.txt").find("--sample-lines"), std::string::npos) << read("stderr.txt");
}

// A run that fails half-way (a gzip file cut short) leaves no summary, not the one of the run
// before beside its own partial records.
TEST_F(LogIngest, ARunThatFailsLeavesNoEarlierSummary) {
  const fs::path input = data / "elastic-apache-combined" / "apache_logs";
  ASSERT_EQ(ingest(input, "combined"), 0);
  ASSERT_TRUE(fs::exists(dir_ / "summary.json"));
  const fs::path cut = dir_ / "cut.log.gz";
  const std::string make_cut =
      "gzip -c '" + input.string() + "' | head -c 2000 > '" + cut.string() + "'";
  ASSERT_EQ(std::system(make_cut.c_str()), 0);  // NOLINT(concurrency-mt-unsafe)
  EXPECT_EQ(run("run --quiet --input '" + input.string() + "' --input '" + cut.string() +
                "' --format combined --out-dir '" + dir_.string() + "'"),
            1);
  EXPECT_NE(read("stderr.txt").find("cut.log.gz"), std::string::npos) << read("stderr.txt");
  EXPECT_FALSE(fs::exists(dir_ / "summary.json"));
}

TEST_F(LogIngest, TheEmbeddedSampleRunsWithNoArguments) {
  conveyor::testing::Watchdog watchdog(std::chrono::seconds(120));
  ASSERT_EQ(run("run --out-dir '" + dir_.string() + "'"), 0) << read("stderr.txt");
  const std::string table = read("stdout.txt");
  EXPECT_NE(table.find("log-ingest summary"), std::string::npos);
  EXPECT_NE(table.find("top paths"), std::string::npos);
  const auto s = summary();
  EXPECT_EQ(number(s, "lines"), 200000U);
  EXPECT_GT(number(s, "rejected"), 0U) << "the sample has malformed lines on purpose";
  EXPECT_EQ(number(s, "records") + number(s, "rejected"), 200000U);
}

TEST_F(LogIngest, HostileInputNeverLosesTheGoodLinesAroundIt) {
  const std::string good =
      R"(1.2.3.4 - - [01/Nov/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "a")";
  std::string text = good + "\n";
  text += std::string("\x00\x01\xff\xfe binary\x00garbage", 20) + "\n" + good + "\n";
  text += std::string(5 << 20, 'L') + "\n" + good + "\n";
  text += "\xc3\x28 invalid utf-8 " + good + "\n";
  text += good;  // no final newline
  const fs::path input = dir_ / "hostile.log";
  std::ofstream(input, std::ios::binary) << text;
  ASSERT_EQ(ingest(input, "combined"), 0) << read("stderr.txt");
  const auto s = summary();
  EXPECT_EQ(number(s, "records"), 4U);
  EXPECT_EQ(number(s, "rejected"), 3U);
  EXPECT_EQ(records_that_parse(), 4U);
  std::ofstream(dir_ / "empty.log");
  ASSERT_EQ(ingest(dir_ / "empty.log", "auto"), 0);
  EXPECT_EQ(number(summary(), "lines"), 0U);
}

}  // namespace
