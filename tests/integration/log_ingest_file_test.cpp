// The file input of `log-ingest serve` as a process: killed at random moments while files are
// written, rotated (rename and copytruncate) and deleted, it loses no line, and repeats none after
// clean stops; a damaged checkpoint is set aside; two inputs keep two checkpoints; an output that
// fails for a while loses nothing.
//
// CONVEYOR_CHAOS_SECONDS sets how long each chaos run writes (20 s by default, in CI), at 20,000
// lines a second (5,000 under sanitizers).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "watchdog.hpp"

#ifdef CONVEYOR_HAS_PROMETHEUS
#include "http_get.hpp"
#endif

namespace {

namespace fs = std::filesystem;
using conveyor::testing::ChildProcess;
using namespace std::chrono_literals;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A directory with logs/, state/ and the service's configuration.
class TailSetup {
 public:
  TailSetup(const std::string& test, const std::string& inputs, const std::string& extra = "")
      : dir_(fs::temp_directory_path() /
             ("conveyor-file-" + test + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "logs");
    std::string text = inputs;
    for (std::size_t at = 0; (at = text.find("LOGS", at)) != std::string::npos;)
      text.replace(at, 4, (dir_ / "logs").string());
    std::ofstream(dir_ / "serve.yaml")
        << "inputs:\n"
        << text << "outputs:\n  records: " << (dir_ / "records.jsonl").string()
        << "\n  dead_letters: " << (dir_ / "dead.jsonl").string()
        << "\npipeline:\n  workers: 2\nservice:\n  metrics_listen: none\n  state_dir: "
        << (dir_ / "state").string() << "\n"
        << extra;
  }
  ~TailSetup() { fs::remove_all(dir_); }
  TailSetup(const TailSetup&) = delete;
  TailSetup& operator=(const TailSetup&) = delete;

  [[nodiscard]] const fs::path& dir() const { return dir_; }
  [[nodiscard]] fs::path logs() const { return dir_ / "logs"; }

  // Starts the service and waits until it serves.
  [[nodiscard]] std::unique_ptr<ChildProcess> start(int run) const {
    auto child = std::make_unique<ChildProcess>(
        std::vector<std::string>{CONVEYOR_LOG_INGEST, "serve", "--config",
                                 (dir_ / "serve.yaml").string()},
        (dir_ / ("stderr-" + std::to_string(run) + ".txt")).string());
    const fs::path log = dir_ / ("stderr-" + std::to_string(run) + ".txt");
    for (int i = 0; i < 1000 && read_file(log).find("serving;") == std::string::npos; ++i) {
      if (!child->running()) break;
      std::this_thread::sleep_for(10ms);
    }
    return child;
  }

  [[nodiscard]] std::string logs_of_run(int run) const {
    return read_file(dir_ / ("stderr-" + std::to_string(run) + ".txt"));
  }

 private:
  fs::path dir_;
};

// An access-log line whose path is /fFILE/NUMBER.
std::string line_for(int file, std::uint64_t number) {
  return "10.0.0.1 - - [01/Jun/2024:00:00:00 +0200] \"GET /f" + std::to_string(file) + "/" +
         std::to_string(number) + " HTTP/1.1\" 200 5 \"-\" \"chaos\"\n";
}

// Counts of each /fFILE/NUMBER path in the records.
std::map<std::string, int> paths_written(const fs::path& records) {
  std::map<std::string, int> counts;
  static const std::regex path(R"rx("path":"(/f[0-9]+/[0-9]+)")rx");
  std::ifstream in(records);
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (std::regex_search(line, match, path)) ++counts[match[1]];
  }
  return counts;
}

// Appends numbered lines to `files` log files at about `rate` lines a second, and every
// `rotate_every` rotates each file as logrotate does with `rotate 3`: .2 to .3, .1 to .2, then the
// file itself to .1, either renamed (a new file is made at its path) or copied and truncated,
// taking turns; the oldest is deleted.
class Writer {
 public:
  Writer(fs::path logs, int files, int rate, std::chrono::milliseconds rotate_every)
      : logs_(std::move(logs)),
        files_(files),
        rate_(rate),
        rotate_every_(rotate_every),
        next_(static_cast<std::size_t>(files), 0) {}

  void run(std::chrono::seconds duration) {
    thread_ = std::thread([this, duration] {
      const auto start = std::chrono::steady_clock::now();
      auto last_rotation = start;
      bool copytruncate = false;
      std::vector<std::ofstream> out(static_cast<std::size_t>(files_));
      for (int f = 0; f < files_; ++f)
        out[static_cast<std::size_t>(f)].open(path(f), std::ios::app);
      while (std::chrono::steady_clock::now() - start < duration &&
             !stop_.load(std::memory_order_relaxed)) {
        for (int f = 0; f < files_; ++f) {
          std::string batch;
          for (int i = 0; i < rate_ / 100 / files_; ++i)
            batch += line_for(f, next_[static_cast<std::size_t>(f)]++);
          out[static_cast<std::size_t>(f)] << batch << std::flush;
        }
        std::this_thread::sleep_for(10ms);
        if (std::chrono::steady_clock::now() - last_rotation < rotate_every_) continue;
        last_rotation = std::chrono::steady_clock::now();
        for (int f = 0; f < files_; ++f) {
          std::error_code ignored;
          fs::remove(rotated(f, 3), ignored);
          fs::rename(rotated(f, 2), rotated(f, 3), ignored);
          fs::rename(rotated(f, 1), rotated(f, 2), ignored);
          auto& file = out[static_cast<std::size_t>(f)];
          if (copytruncate) {
            // Nothing is written between the copy and the truncation: a line written then is
            // lost by copytruncate itself, whoever reads the file.
            file.flush();
            fs::copy_file(path(f), rotated(f, 1));
            fs::resize_file(path(f), 0);
          } else {
            file.close();
            fs::rename(path(f), rotated(f, 1));
            file.open(path(f), std::ios::app);
          }
        }
        copytruncate = !copytruncate;
      }
    });
  }
  void join() { thread_.join(); }
  // A test that returns early (a failed ASSERT) stops the writer instead of leaving its thread.
  ~Writer() {
    stop_.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  [[nodiscard]] std::uint64_t written(int file) const {
    return next_[static_cast<std::size_t>(file)];
  }

 private:
  [[nodiscard]] fs::path path(int f) const { return logs_ / ("app" + std::to_string(f) + ".log"); }
  [[nodiscard]] fs::path rotated(int f, int n) const {
    return logs_ / ("app" + std::to_string(f) + ".log." + std::to_string(n));
  }

  fs::path logs_;
  int files_;
  int rate_;
  std::chrono::milliseconds rotate_every_;
  std::vector<std::uint64_t> next_;
  std::atomic<bool> stop_{false};  // relaxed: a request to end early, nothing else rides on it
  std::thread thread_;
};

#ifdef CONVEYOR_SANITIZED
constexpr int chaos_rate = 5'000;  // sanitizers slow the service several times over
// About ten stops: the sanitizer builds look for memory and thread errors in the stops and
// restarts; the optimised build, several times faster, makes the long run of kills.
constexpr int default_chaos_seconds = 12;
#else
constexpr int chaos_rate = 20'000;
constexpr int default_chaos_seconds = 20;
#endif

int chaos_seconds() {
  const char* text = std::getenv("CONVEYOR_CHAOS_SECONDS");
  return text != nullptr ? std::max(5, std::atoi(text)) : default_chaos_seconds;
}

// The acceptance test: stopped with `signal` at random moments while the files are written and
// rotated, restarted within a second on the same state, then run to quiescence. No number may be
// missing; duplicates are bounded by what the checkpoint interval allows (none after SIGTERM).
void chaos(int signal, const std::string& name) {
  const int seconds = chaos_seconds();
  conveyor::testing::Watchdog watchdog(std::chrono::seconds(seconds * 3 + 120));
  constexpr int files = 4;
  constexpr int rate = chaos_rate;
  const TailSetup setup(name,
                        "  - name: app\n"
                        "    type: file\n"
                        "    include: [\"LOGS/*.log\", \"LOGS/*.log.[0-9]\"]\n"
                        "    glob_interval: 200ms\n"
                        "    rotate_wait: 1s\n"
                        "    checkpoint_interval: 100ms\n");
  Writer writer(setup.logs(), files, rate, 2s);
  writer.run(std::chrono::seconds(seconds));
  std::mt19937 random(static_cast<unsigned>(::getpid()));
  int run = 0;
  int stops = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    auto child = setup.start(run);
    ASSERT_TRUE(child->running()) << setup.logs_of_run(run);
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + random() % 1200));
    const int status = child->stop(signal, 60s);
    // A clean stop must be clean: one that failed on its way out may not have saved its
    // checkpoint.
    if (signal == SIGTERM) {
      EXPECT_EQ(status, 0) << setup.logs_of_run(run);
    }
    ++stops;
    ++run;
    std::this_thread::sleep_for(std::chrono::milliseconds(random() % 500));
  }
  writer.join();
  // Quiescence: a last run reads what is left, then stops cleanly.
  auto last = setup.start(run);
  std::uint64_t expected = 0;
  for (int f = 0; f < files; ++f)
    expected += writer.written(f);
  std::map<std::string, int> counts;
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(100ms);
    counts = paths_written(setup.dir() / "records.jsonl");
    if (counts.size() >= expected) break;
  }
  ASSERT_EQ(last->stop(SIGTERM, 60s), 0) << setup.logs_of_run(run);
  counts = paths_written(setup.dir() / "records.jsonl");
  std::uint64_t missing = 0;
  std::uint64_t duplicates = 0;
  std::string first_missing;
  for (int f = 0; f < files; ++f) {
    for (std::uint64_t n = 0; n < writer.written(f); ++n) {
      const std::string path = "/f" + std::to_string(f) + "/" + std::to_string(n);
      const auto it = counts.find(path);
      if (it == counts.end()) {
        if (missing++ == 0) first_missing = path;
        continue;
      }
      duplicates += static_cast<std::uint64_t>(it->second - 1);
    }
  }
  if (duplicates != 0) {  // where the first ones were read from (each time), to tell why
    std::ifstream records(setup.dir() / "records.jsonl");
    int shown = 0;
    std::string first;  // every record of the first repeated line, then the next lines' first
    for (std::string line; std::getline(records, line) && shown < 8;) {
      static const std::regex fields(
          R"rx("path":"(/f[0-9]+/[0-9]+)".*"file":"([^"]*)","offset":([0-9]+))rx");
      std::smatch match;
      if (std::regex_search(line, match, fields) && counts[match[1]] > 1 &&
          (first.empty() || first == match[1].str() || shown < 4)) {
        if (first.empty()) first = match[1].str();
        std::printf("repeated %s from %s at %s\n", match[1].str().c_str(), match[2].str().c_str(),
                    match[3].str().c_str());
        ++shown;
      }
    }
  }
  std::printf("chaos %s: %d s, %d stops, %llu lines, %llu missing, %llu duplicates\n", name.c_str(),
              seconds, stops, static_cast<unsigned long long>(expected),
              static_cast<unsigned long long>(missing),
              static_cast<unsigned long long>(duplicates));
  EXPECT_EQ(missing, 0U) << "first missing: " << first_missing;
  if (signal == SIGTERM) {
    EXPECT_EQ(duplicates, 0U);
  } else {
    // What may come again after each kill: the lines written since the last checkpoint (100 ms),
    // and those in flight, at the writer's rate; one second of lines per kill bounds both.
    EXPECT_LE(duplicates, static_cast<std::uint64_t>(stops) * rate);
  }
}

TEST(LogIngestFile, ChaosWithSigkillLosesNoLine) {
  chaos(SIGKILL, "sigkill");
}

TEST(LogIngestFile, ChaosWithSigtermLosesAndRepeatsNoLine) {
  chaos(SIGTERM, "sigterm");
}

// A damaged checkpoint (an out-of-memory kill can leave it empty) is reported and set aside, and
// the service starts: every file from its beginning, so nothing is lost.
// With read_from: end too, which is for the first start only.
TEST(LogIngestFile, ADamagedCheckpointIsSetAsideAndTheServiceStarts) {
  conveyor::testing::Watchdog watchdog(120s);
  for (const std::string read_from : {"beginning", "end"}) {
    const TailSetup setup(
        "corrupt-" + read_from,
        "  - {name: app, type: file, include: [\"LOGS/*.log\"], read_from: " + read_from + "}\n");
    {
      std::ofstream out(setup.logs() / "a.log");
      for (int i = 0; i < 100; ++i)
        out << line_for(0, static_cast<std::uint64_t>(i));
    }
    fs::create_directories(setup.dir() / "state");
    std::ofstream(setup.dir() / "state" / "app.checkpoint") << "";  // empty
    auto child = setup.start(0);
    for (int i = 0; i < 100 && paths_written(setup.dir() / "records.jsonl").size() < 100; ++i)
      std::this_thread::sleep_for(50ms);
    ASSERT_EQ(child->stop(SIGTERM, 60s), 0) << setup.logs_of_run(0);
    EXPECT_NE(setup.logs_of_run(0).find("is unusable: it is empty"), std::string::npos)
        << setup.logs_of_run(0);
    EXPECT_TRUE(fs::exists(setup.dir() / "state" / "app.checkpoint.corrupt"));
    EXPECT_EQ(paths_written(setup.dir() / "records.jsonl").size(), 100U) << read_from;
    EXPECT_NE(read_file(setup.dir() / "state" / "app.checkpoint").find("a.log"), std::string::npos);
  }
}

// read_from: end skips what the first start finds; after a restart, a file that appeared while
// the service was down (logrotate's new file, say) is read from its beginning.
TEST(LogIngestFile, AFileThatAppearedWhileTheServiceWasDownIsReadWhole) {
  conveyor::testing::Watchdog watchdog(60s);
  const TailSetup setup("appeared",
                        "  - {name: app, type: file, include: [\"LOGS/*.log\"], read_from: end, "
                        "checkpoint_interval: 50ms}\n");
  {
    std::ofstream out(setup.logs() / "a.log");
    for (int i = 0; i < 100; ++i)
      out << line_for(0, static_cast<std::uint64_t>(i));
  }
  auto first = setup.start(0);
  const fs::path checkpoint = setup.dir() / "state" / "app.checkpoint";
  for (int i = 0; i < 100 && read_file(checkpoint).find("a.log") == std::string::npos; ++i)
    std::this_thread::sleep_for(50ms);
  ASSERT_EQ(first->stop(SIGTERM, 60s), 0) << setup.logs_of_run(0);
  ASSERT_NE(read_file(checkpoint).find("a.log"), std::string::npos) << setup.logs_of_run(0);
  {
    std::ofstream out(setup.logs() / "b.log");
    for (int i = 0; i < 50; ++i)
      out << line_for(1, static_cast<std::uint64_t>(i));
  }
  {
    std::ofstream out(setup.logs() / "a.log", std::ios::app);
    for (int i = 100; i < 110; ++i)
      out << line_for(0, static_cast<std::uint64_t>(i));
  }
  auto second = setup.start(1);
  for (int i = 0; i < 100 && paths_written(setup.dir() / "records.jsonl").size() < 60; ++i)
    std::this_thread::sleep_for(50ms);
  ASSERT_EQ(second->stop(SIGTERM, 60s), 0) << setup.logs_of_run(1);
  const auto written = paths_written(setup.dir() / "records.jsonl");
  EXPECT_EQ(written.size(), 60U);
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(written.count("/f1/" + std::to_string(i)), 1U) << i;
  for (int i = 100; i < 110; ++i)
    EXPECT_EQ(written.count("/f0/" + std::to_string(i)), 1U) << i;
}

// A checkpoint save that fails (here, a directory stands where its temporary file goes) is
// reported and tried again by the next save, even of the same positions: once the way is clear,
// a clean stop leaves a checkpoint, and the restart repeats nothing.
TEST(LogIngestFile, AFailedCheckpointSaveIsTriedAgain) {
  conveyor::testing::Watchdog watchdog(60s);
  const TailSetup setup(
      "save-fails",
      "  - {name: app, type: file, include: [\"LOGS/*.log\"], checkpoint_interval: 50ms}\n");
  {
    std::ofstream out(setup.logs() / "a.log");
    for (int i = 0; i < 100; ++i)
      out << line_for(0, static_cast<std::uint64_t>(i));
  }
  const fs::path blocker = setup.dir() / "state" / "app.checkpoint.tmp";
  fs::create_directories(blocker);
  auto child = setup.start(0);
  for (int i = 0; i < 200 && (paths_written(setup.dir() / "records.jsonl").size() < 100 ||
                              setup.logs_of_run(0).find("cannot create") == std::string::npos);
       ++i)
    std::this_thread::sleep_for(50ms);
  ASSERT_NE(setup.logs_of_run(0).find("cannot create"), std::string::npos) << setup.logs_of_run(0);
  std::this_thread::sleep_for(300ms);  // saves of the final positions fail meanwhile
  fs::remove(blocker);
  ASSERT_EQ(child->stop(SIGTERM, 60s), 0) << setup.logs_of_run(0);
  EXPECT_NE(read_file(setup.dir() / "state" / "app.checkpoint").find("a.log"), std::string::npos)
      << setup.logs_of_run(0);
  auto again = setup.start(1);
  std::this_thread::sleep_for(500ms);
  ASSERT_EQ(again->stop(SIGTERM, 60s), 0) << setup.logs_of_run(1);
  std::size_t lines = 0;
  std::ifstream records(setup.dir() / "records.jsonl");
  for (std::string line; std::getline(records, line);)
    ++lines;
  EXPECT_EQ(lines, 100U);
}

// Limits the running service's files to 20,000 bytes (as a full disk would fill), writes a.log's
// 2,000 lines (/f0/0 to /f0/1999) and waits until the service says it holds records it could not
// write: whether it did.
bool fill_the_records_output(const TailSetup& setup, const ChildProcess& child) {
  const rlimit full{20'000, RLIM_INFINITY};
  if (::prlimit(child.pid(), RLIMIT_FSIZE, &full, nullptr) != 0) return false;
  {
    std::ofstream out(setup.logs() / "a.log");
    for (int i = 0; i < 2000; ++i)
      out << line_for(0, static_cast<std::uint64_t>(i));
  }
  for (int i = 0; i < 200; ++i) {
    if (setup.logs_of_run(0).find("cannot write records") != std::string::npos) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

// The records output fails (here the file size limit, set on the running service, as a full disk
// would) while a file is read, and that file is deleted before the output has room again: nothing
// can read its lines after a restart, so the service holds what it could not write, writes it again
// until the output takes it, and loses no line.
TEST(LogIngestFile, AFullOutputHoldsTheLinesOfAFileDeletedMeanwhile) {
  conveyor::testing::Watchdog watchdog(60s);
  const TailSetup setup("output-full", "  - {name: app, type: file, include: [\"LOGS/*.log\"]}\n");
  auto child = setup.start(0);
  ASSERT_TRUE(fill_the_records_output(setup, *child)) << setup.logs_of_run(0);
  fs::remove(setup.logs() / "a.log");
  std::this_thread::sleep_for(300ms);  // the retries fail meanwhile
  const rlimit room{RLIM_INFINITY, RLIM_INFINITY};
  ASSERT_EQ(::prlimit(child->pid(), RLIMIT_FSIZE, &room, nullptr), 0);
  for (int i = 0; i < 200 && paths_written(setup.dir() / "records.jsonl").size() < 2000; ++i)
    std::this_thread::sleep_for(50ms);
  ASSERT_EQ(child->stop(SIGTERM, 60s), 0) << setup.logs_of_run(0);
  const auto written = paths_written(setup.dir() / "records.jsonl");
  EXPECT_EQ(written.size(), 2000U);
  for (const auto& [path, count] : written)
    EXPECT_EQ(count, 1) << path;
  EXPECT_NE(setup.logs_of_run(0).find("lost_on_output=0 lost=0"), std::string::npos)
      << setup.logs_of_run(0);
}

// Stopped while the records output still fails: at drain_timeout the writer gives up what it
// holds, the drain ends at once with every message accounted for (those as lost on output), and
// the checkpoint stays before them, so that the next start, with room again, writes every line.
TEST(LogIngestFile, AFullOutputAtTheDrainIsCountedLostAndReadAgain) {
  conveyor::testing::Watchdog watchdog(60s);
  const TailSetup setup("output-full-drain",
                        "  - {name: app, type: file, include: [\"LOGS/*.log\"]}\n",
                        "  drain_timeout: 500ms\n");
  auto child = setup.start(0);
  ASSERT_TRUE(fill_the_records_output(setup, *child)) << setup.logs_of_run(0);
  // Status 1, with the drain's own line: at stop_timeout (30.5 s here) the line would be
  // "stopped: ...", with what was held unaccounted for.
  EXPECT_EQ(child->stop(SIGTERM, 30s), 1) << setup.logs_of_run(0);
  const std::string log = setup.logs_of_run(0);
  static const std::regex drained(
      R"(drained: received=([0-9]+) written=([0-9]+) rejected=0 filtered=0 dropped=0 )"
      R"(lost_on_output=([0-9]+) lost=0)");
  std::smatch counts;
  ASSERT_TRUE(std::regex_search(log, counts, drained)) << log;
  EXPECT_EQ(std::stoull(counts[1]), std::stoull(counts[2]) + std::stoull(counts[3])) << log;
  EXPECT_GT(std::stoull(counts[3]), 0U) << log;

  auto again = setup.start(1);  // no limit: room again
  for (int i = 0; i < 200 && paths_written(setup.dir() / "records.jsonl").size() < 2000; ++i)
    std::this_thread::sleep_for(50ms);
  ASSERT_EQ(again->stop(SIGTERM, 60s), 0) << setup.logs_of_run(1);
  const auto written = paths_written(setup.dir() / "records.jsonl");
  EXPECT_EQ(written.size(), 2000U);
}

// The last flush, at the end of the drain, meets a pipe whose reader stalls (records kept for a
// deferred flush, more than the pipe holds): the timer that enforces stop_timeout has stopped by
// then, and a guard ends the process at stop_timeout instead of letting the close wait for ever.
#ifdef CONVEYOR_HAS_PROMETHEUS
TEST(LogIngestFile, ALastFlushIntoAStalledPipeEndsAtStopTimeout) {
  conveyor::testing::Watchdog watchdog(60s);
  const TailSetup setup("stalled-close", "");
  std::array<int, 2> pipe_ends{};
  ASSERT_EQ(::pipe(pipe_ends.data()), 0);  // inherited by the service: no O_CLOEXEC
  ASSERT_GT(::fcntl(pipe_ends[1], F_SETPIPE_SZ, 4096), 0);
  std::ofstream(setup.dir() / "serve.yaml")
      << "inputs:\n  - {name: app, type: file, include: [\"" << (setup.logs() / "*.log").string()
      << "\"]}\noutputs:\n  records: /dev/fd/" << pipe_ends[1]
      << "\n  dead_letters: none\n  flush: {records: 1000000, interval: 1h}\n"
      << "service:\n  metrics_listen: 127.0.0.1:0\n  state_dir: "
      << (setup.dir() / "state").string() << "\n  drain_timeout: 200ms\n  stop_timeout: 3s\n";
  {
    std::ofstream out(setup.logs() / "a.log");
    for (int i = 0; i < 100; ++i)  // about 20 KB of records: kept, then more than the pipe holds
      out << line_for(0, static_cast<std::uint64_t>(i));
  }
  auto child = setup.start(0);
  // Every line read, and kept for the flush.
  std::smatch port;
  const std::string started = setup.logs_of_run(0);
  ASSERT_TRUE(
      std::regex_search(started, port, std::regex(R"(metrics on http://[0-9.]+:([0-9]+)/)")))
      << started;
  const auto metrics_port = static_cast<std::uint16_t>(std::stoi(port[1]));
  bool all_read = false;
  for (int i = 0; i < 400 && !all_read; ++i) {
    all_read = conveyor::testing::http_get(metrics_port, "/metrics")
                   .body.find("log_ingest_received_total{input=\"app\"} 100") != std::string::npos;
    if (!all_read) std::this_thread::sleep_for(25ms);
  }
  ASSERT_TRUE(all_read);
  EXPECT_EQ(child->stop(SIGTERM, 30s), 1) << setup.logs_of_run(0);
  EXPECT_NE(setup.logs_of_run(0).find("the outputs did not close within stop_timeout"),
            std::string::npos)
      << setup.logs_of_run(0);
  ::close(pipe_ends[0]);
  ::close(pipe_ends[1]);
}
#endif

// Two inputs keep a checkpoint each, and neither removes the other's offsets.
TEST(LogIngestFile, TwoInputsNeverShareACheckpoint) {
  conveyor::testing::Watchdog watchdog(60s);
  const TailSetup setup("two",
                        "  - {name: one, type: file, include: [\"LOGS/one-*.log\"]}\n"
                        "  - {name: two, type: file, include: [\"LOGS/two-*.log\"]}\n");
  for (const char* name : {"one-a.log", "two-a.log"}) {
    std::ofstream out(setup.logs() / name);
    for (int i = 0; i < 10; ++i)
      out << line_for(name[0] == 'o' ? 1 : 2, static_cast<std::uint64_t>(i));
  }
  auto child = setup.start(0);
  for (int i = 0; i < 100 && paths_written(setup.dir() / "records.jsonl").size() < 20; ++i)
    std::this_thread::sleep_for(50ms);
  ASSERT_EQ(child->stop(SIGTERM, 60s), 0) << setup.logs_of_run(0);
  const std::string one = read_file(setup.dir() / "state" / "one.checkpoint");
  const std::string two = read_file(setup.dir() / "state" / "two.checkpoint");
  EXPECT_NE(one.find("one-a.log"), std::string::npos) << one;
  EXPECT_EQ(one.find("two-a.log"), std::string::npos) << one;
  EXPECT_NE(two.find("two-a.log"), std::string::npos) << two;
  EXPECT_EQ(two.find("one-a.log"), std::string::npos) << two;
  // A restart repeats nothing of either.
  auto again = setup.start(1);
  std::this_thread::sleep_for(500ms);
  ASSERT_EQ(again->stop(SIGTERM, 60s), 0) << setup.logs_of_run(1);
  EXPECT_EQ(paths_written(setup.dir() / "records.jsonl").size(), 20U);
  std::size_t lines = 0;
  std::ifstream records(setup.dir() / "records.jsonl");
  for (std::string line; std::getline(records, line);)
    ++lines;
  EXPECT_EQ(lines, 20U);
}

// SIGKILL at each step of a checkpoint save (a fault-injection hook in the writer): the service
// always starts again, and no line is lost.
TEST(LogIngestFile, KilledAtEveryStepOfACheckpointSaveItStartsAgain) {
  conveyor::testing::Watchdog watchdog(180s);
  for (const char* step : {"write", "halfway", "fsync_file", "rename", "fsync_directory"}) {
    const TailSetup setup(std::string("fault-") + step,
                          "  - {name: app, type: file, include: [\"LOGS/*.log\"], "
                          "checkpoint_interval: 50ms}\n");
    {
      std::ofstream out(setup.logs() / "a.log");
      for (int i = 0; i < 1000; ++i)
        out << line_for(0, static_cast<std::uint64_t>(i));
    }
    ::setenv("CONVEYOR_CHECKPOINT_FAULT", step, 1);
    auto dying = setup.start(0);
    ::unsetenv("CONVEYOR_CHECKPOINT_FAULT");
    for (int i = 0; i < 200 && dying->running(); ++i)
      std::this_thread::sleep_for(50ms);
    ASSERT_FALSE(dying->running()) << step << ": the hook did not kill it";
    {
      std::ofstream out(setup.logs() / "a.log", std::ios::app);
      for (int i = 1000; i < 1100; ++i)
        out << line_for(0, static_cast<std::uint64_t>(i));
    }
    auto again = setup.start(1);
    ASSERT_TRUE(again->running()) << step << ":\n" << setup.logs_of_run(1);
    for (int i = 0; i < 200 && paths_written(setup.dir() / "records.jsonl").size() < 1100; ++i)
      std::this_thread::sleep_for(50ms);
    ASSERT_EQ(again->stop(SIGTERM, 60s), 0) << step << ":\n" << setup.logs_of_run(1);
    EXPECT_EQ(paths_written(setup.dir() / "records.jsonl").size(), 1100U) << step;
    EXPECT_FALSE(fs::exists(setup.dir() / "state" / "app.checkpoint.corrupt")) << step;
  }
}

// A pipeline that fails (CONVEYOR_WRITE_FAULT=N: the write of the Nth batch throws, as a bug or
// a bad_alloc in a stage would) drops what it holds, and the tokens of what it dropped settle. The
// checkpoint it leaves covers only lines written before the failure, so the restart writes every
// line lost with the pipeline: none is missing.
TEST(LogIngestFile, APipelineFailureLosesNoLine) {
  conveyor::testing::Watchdog watchdog(180s);
  constexpr int lines = 60'000;  // about 5 MiB: ten batches or more
  for (const char* fault : {"1", "4"}) {
    const TailSetup setup(std::string("write-fault-") + fault,
                          "  - {name: app, type: file, include: [\"LOGS/*.log\"], "
                          "checkpoint_interval: 10ms}\n");
    {
      std::ofstream out(setup.logs() / "a.log");
      for (int i = 0; i < lines; ++i)
        out << line_for(0, static_cast<std::uint64_t>(i));
    }
    ::setenv("CONVEYOR_WRITE_FAULT", fault, 1);
    auto failing = setup.start(0);
    ::unsetenv("CONVEYOR_WRITE_FAULT");
    EXPECT_EQ(failing->wait(60s), 1) << fault << ":\n" << setup.logs_of_run(0);
    EXPECT_NE(setup.logs_of_run(0).find("the pipeline failed"), std::string::npos)
        << fault << ":\n"
        << setup.logs_of_run(0);
    auto again = setup.start(1);
    ASSERT_TRUE(again->running()) << fault << ":\n" << setup.logs_of_run(1);
    for (int i = 0; i < 300 && paths_written(setup.dir() / "records.jsonl").size() < lines; ++i)
      std::this_thread::sleep_for(200ms);
    ASSERT_EQ(again->stop(SIGTERM, 60s), 0) << fault << ":\n" << setup.logs_of_run(1);
    EXPECT_EQ(paths_written(setup.dir() / "records.jsonl").size(), std::size_t{lines}) << fault;
  }
}

// inotify: a file created in a watched directory is found at once, long before the globs' next
// look.
TEST(LogIngestFile, InotifyFindsANewFileBeforeTheNextLook) {
  conveyor::testing::Watchdog watchdog(60s);
  const TailSetup setup("inotify",
                        "  - {name: app, type: file, include: [\"LOGS/*.log\"], "
                        "glob_interval: 1h}\n");
  { std::ofstream(setup.logs() / "first.log") << line_for(0, 0); }
  auto child = setup.start(0);
  for (int i = 0; i < 100 && paths_written(setup.dir() / "records.jsonl").empty(); ++i)
    std::this_thread::sleep_for(50ms);
  ASSERT_EQ(paths_written(setup.dir() / "records.jsonl").size(), 1U) << setup.logs_of_run(0);
  { std::ofstream(setup.logs() / "second.log") << line_for(1, 0) << line_for(1, 1); }
  const auto start = std::chrono::steady_clock::now();
  while (paths_written(setup.dir() / "records.jsonl").size() < 3 &&
         std::chrono::steady_clock::now() - start < 10s)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(paths_written(setup.dir() / "records.jsonl").size(), 3U);
  ASSERT_EQ(child->stop(SIGTERM, 60s), 0) << setup.logs_of_run(0);
}

// Polling alone (watch: poll): growth, a rotation by rename and a new file are all followed.
TEST(LogIngestFile, PollingAloneFollowsGrowthRotationAndNewFiles) {
  conveyor::testing::Watchdog watchdog(60s);
  const TailSetup setup("poll",
                        "  - {name: app, type: file, include: [\"LOGS/*.log\"], "
                        "watch: poll, glob_interval: 200ms, rotate_wait: 500ms}\n");
  const auto write = [&](const char* name, int file, int from, int to) {
    std::ofstream out(setup.logs() / name, std::ios::app);
    for (int i = from; i < to; ++i)
      out << line_for(file, static_cast<std::uint64_t>(i));
  };
  write("app.log", 0, 0, 100);
  auto child = setup.start(0);
  const auto wait_for = [&](std::size_t count) {
    for (int i = 0; i < 200 && paths_written(setup.dir() / "records.jsonl").size() < count; ++i)
      std::this_thread::sleep_for(50ms);
    return paths_written(setup.dir() / "records.jsonl").size();
  };
  EXPECT_EQ(wait_for(100), 100U);
  write("app.log", 0, 100, 150);
  EXPECT_EQ(wait_for(150), 150U);
  fs::rename(setup.logs() / "app.log", setup.logs() / "app.log.1");
  write("app.log.1", 0, 150, 160);  // the writer still had it open
  write("app.log", 1, 0, 20);
  write("other.log", 2, 0, 20);
  EXPECT_EQ(wait_for(200), 200U);
  ASSERT_EQ(child->stop(SIGTERM, 60s), 0) << setup.logs_of_run(0);
  for (const auto& [path, count] : paths_written(setup.dir() / "records.jsonl"))
    EXPECT_EQ(count, 1) << path;
}

}  // namespace
