// LatencyProbe (`log-ingest generate --latency`): the marks it puts in access-log lines, and how it
// finds them again in a file that a service appends to.
#include "latency_probe.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;
using conveyor::log_ingest::LatencyProbe;
using conveyor::log_ingest::LatencyReport;
using namespace std::chrono_literals;

const std::string access_line =
    R"(192.0.2.7 - - [10/Oct/2026:13:55:36 +0000] "GET /index.html HTTP/1.1" 200 2326 "-" "curl/8.0")";

class LatencyProbeTest : public ::testing::Test {
 protected:
  void append(const std::string& text) const {
    std::ofstream(path_, std::ios::app | std::ios::binary) << text << std::flush;
  }
  // A line marked now, as a service would write it (JSON escapes the slashes here).
  static std::string marked_record() {
    std::string line = access_line;
    EXPECT_TRUE(LatencyProbe::mark(line));
    std::string record = R"({"message":")";
    for (const char c : line) {
      if (c == '/') record += '\\';
      if (c == '"') record += '\\';
      record += c;
    }
    return record + "\"}\n";
  }

  conveyor::testing::ScratchDir dir_{"probe"};
  std::string path_ = (dir_ / "records.jsonl").string();
};

TEST_F(LatencyProbeTest, MarkRewritesTheRequestPathOfAWholeAccessLogLine) {
  std::string line = access_line;
  ASSERT_TRUE(LatencyProbe::mark(line));
  EXPECT_EQ(line.find("/index.html"), std::string::npos);
  const std::size_t at = line.find("\"GET /latency-probe-");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(line.find(" HTTP/1.1\" 200 2326", at), std::string::npos);
  EXPECT_EQ(line.back(), '"');
}

TEST_F(LatencyProbeTest, MarkLeavesOtherLinesAlone) {
  for (std::string line : {std::string(), std::string("plain text"),
                           std::string(R"(192.0.2.7 - - [x] "GET)"), access_line + " trailing"}) {
    const std::string before = line;
    EXPECT_FALSE(LatencyProbe::mark(line)) << before;
    EXPECT_EQ(line, before);
  }
}

// The service's output rotates during a run (rotate.bytes, or a SIGHUP after logrotate's rename):
// the marks written to the old file and to the new one at the same path are all found.
TEST_F(LatencyProbeTest, FollowsTheOutputAcrossARotation) {
  append("");
  LatencyProbe probe(path_);
  append(marked_record() + marked_record());
  const std::string old_path = path_ + ".1";
  fs::rename(path_, old_path);
  append(marked_record());
  const LatencyReport report = probe.finish(3, 5s);
  fs::remove(old_path);
  EXPECT_EQ(report.micros.size(), 3U);
}

TEST_F(LatencyProbeTest, FindsTheMarksAppendedAfterItStartsAndNoneBefore) {
  append(marked_record());  // made before the probe: followed from the end, and too old anyway
  LatencyProbe probe(path_);
  append(marked_record() + "{\"message\":\"unmarked\"}\n" + marked_record());
  const LatencyReport report = probe.finish(2, 5s);
  ASSERT_EQ(report.micros.size(), 2U);
  EXPECT_LE(report.micros[0], report.micros[1]);  // sorted
  EXPECT_LT(report.quantile_ms(1.0), 5000.0);
}

TEST_F(LatencyProbeTest, AFileThatAppearsLaterIsReadFromItsBeginning) {
  LatencyProbe probe(path_);
  std::this_thread::sleep_for(5ms);
  append(marked_record());
  EXPECT_EQ(probe.finish(1, 5s).micros.size(), 1U);
}

TEST_F(LatencyProbeTest, AMarkWrittenInTwoPiecesIsFoundOnce) {
  LatencyProbe probe(path_);
  const std::string record = marked_record();
  const std::size_t half = record.find("probe-") + 3;
  append(record.substr(0, half));
  std::this_thread::sleep_for(20ms);  // the probe reads the first piece alone
  append(record.substr(half));
  EXPECT_EQ(probe.finish(1, 5s).micros.size(), 1U);
}

TEST_F(LatencyProbeTest, FinishGivesUpOnMarksThatNeverCome) {
  LatencyProbe probe(path_);
  append(marked_record());
  EXPECT_EQ(probe.finish(3, 100ms).micros.size(), 1U);  // after 100 ms without a new one
}

TEST(LatencyReport, QuantilesAreInMillisecondsAndZeroWhenEmpty) {
  EXPECT_EQ(LatencyReport{}.quantile_ms(0.99), 0.0);
  LatencyReport report;
  for (std::uint32_t us = 1000; us <= 100000; us += 1000)
    report.micros.push_back(us);
  EXPECT_DOUBLE_EQ(report.quantile_ms(0.0), 1.0);
  EXPECT_DOUBLE_EQ(report.quantile_ms(1.0), 100.0);
  EXPECT_DOUBLE_EQ(report.quantile_ms(0.5), 51.0);   // index round(0.5 * 99) = 50
  EXPECT_DOUBLE_EQ(report.quantile_ms(7.0), 100.0);  // clamped
}

}  // namespace
