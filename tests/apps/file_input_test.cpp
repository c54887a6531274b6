// log-ingest serve's file input against an Ingress that the test drains by hand: the checkpoint
// keeps up with what the outputs finished, even while the input waits for room.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "conveyor/stages/checkpoint_file.hpp"
#include "file_input.hpp"
#include "ingress.hpp"
#include "scratch_dir.hpp"
#include "serve_config.hpp"
#include "watchdog.hpp"
#include "within.hpp"

namespace {

namespace fs = std::filesystem;
using conveyor::log_ingest::FileInput;
using conveyor::log_ingest::Ingress;
using conveyor::log_ingest::InputConfig;
using conveyor::log_ingest::InputCounters;
using conveyor::log_ingest::InputType;
using conveyor::log_ingest::LimitsConfig;
using conveyor::testing::within;
using namespace std::chrono_literals;

// The offset the checkpoint holds for its one file, once it holds one.
std::optional<std::uint64_t> checkpointed(const std::string& path) {
  const conveyor::stages::CheckpointLoad loaded = conveyor::stages::CheckpointFile(path).load();
  if (loaded.entries.size() != 1) return std::nullopt;
  return loaded.entries.front().offset;
}

// Each test's own directory: logs/ for the files the input follows, state/ for its checkpoint.
class FileInputTest : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(dir_ / "logs"); }

  [[nodiscard]] fs::path log(const std::string& name) const { return dir_ / "logs" / name; }
  [[nodiscard]] std::string state() const { return (dir_ / "state").string(); }
  // A file input named "app" that follows logs/*.log.
  [[nodiscard]] InputConfig file_input() const {
    InputConfig config;
    config.name = "app";
    config.type = InputType::file;
    config.file.include = {(dir_ / "logs" / "*.log").string()};
    return config;
  }

  conveyor::testing::ScratchDir dir_{"file-input"};
};

// The queue holds one chunk and the test takes one, so the input waits to push a chunk of its
// first read of the file, long before it has read it all: the chunk taken, once written, is in the
// checkpoint all the same, without the test taking any more.
TEST_F(FileInputTest, SavesItsCheckpointWhileItWaitsForRoom) {
  conveyor::testing::Watchdog watchdog(60s);
  {
    std::ofstream file(log("a.log"));
    for (int i = 0; i < 40'000; ++i)  // about 3 MB: a dozen chunks
      file << "<13>Jun  1 00:00:00 host app: line " << i << " of a file read in many chunks\n";
  }
  InputConfig config = file_input();
  config.file.checkpoint_interval = 20ms;
  Ingress ingress(1);
  InputCounters counters("app");
  {
    FileInput input(config, LimitsConfig{}, ingress, counters, state());
    input.start();
    std::optional<conveyor::stages::Chunk> first = ingress.pop();
    ASSERT_TRUE(first.has_value());
    const std::uint64_t end = first->offset + first->text.size();
    first.reset();  // written: its token settles
    std::optional<std::uint64_t> saved;
    for (int i = 0; i < 1000 && saved.value_or(0) < end; ++i) {
      std::this_thread::sleep_for(10ms);
      saved = checkpointed(input.checkpoint_path());
    }
    EXPECT_EQ(saved, end);
    EXPECT_LT(end, fs::file_size(log("a.log")));
    EXPECT_FALSE(input.finished());
    ingress.close();  // the input stops waiting for room
    input.stop_accepting();
  }
}

// Blank lines are skipped and not counted, from a file as from a connection: a file's chunk holds
// them (the parse stage skips them), and received counts the others, so that a drain's
// accounting holds (it counted them as received, and they came out as lost).
TEST_F(FileInputTest, BlankLinesAreNotCountedAsReceived) {
  conveyor::testing::Watchdog watchdog(60s);
  std::ofstream(log("a.log"))
      << "<13>Jun  1 00:00:00 host app: one\n\n  \t\n\r\n<13>Jun  1 00:00:01 host app: two\r\n \n";
  InputConfig config = file_input();
  Ingress ingress(16);
  InputCounters counters("app");
  {
    FileInput input(config, LimitsConfig{}, ingress, counters, state());
    input.start();
    std::optional<conveyor::stages::Chunk> chunk = ingress.pop();
    ASSERT_TRUE(chunk.has_value());
    EXPECT_EQ(chunk->first_line, 1U);
    // Counted just after the push.
    for (int i = 0; i < 1000 && InputCounters::read(counters.received) < 2; ++i)
      std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(10ms);
    EXPECT_EQ(InputCounters::read(counters.received), 2U);
    ingress.close();
    input.stop_accepting();
  }
}

// A reload replaces the input and keeps its counters: the new one counts on from what the old one
// counted, instead of starting them again from its own tailer's zero.
TEST_F(FileInputTest, AReplacementKeepsCountingFromTheOldInputsCounts) {
  conveyor::testing::Watchdog watchdog(60s);
  const fs::path path = log("a.log");
  const std::string first = "<13>Jun  1 00:00:00 host app: first\n";
  const std::string second = "<13>Jun  1 00:00:01 host app: the second line\n";
  std::ofstream(path) << first;
  InputConfig config = file_input();
  config.file.checkpoint_interval = 1ms;
  Ingress ingress(16);
  InputCounters counters("app");
  const auto bytes_reach = [&](std::uint64_t expected) {
    for (int i = 0; i < 1000 && InputCounters::read(counters.bytes) < expected; ++i)
      std::this_thread::sleep_for(10ms);
    return InputCounters::read(counters.bytes);
  };
  {
    FileInput input(config, LimitsConfig{}, ingress, counters, state());
    input.start();
    ASSERT_TRUE(ingress.pop().has_value());  // written: its token settles
    EXPECT_EQ(bytes_reach(first.size()), first.size());
    for (int i = 0; i < 1000 && checkpointed(input.checkpoint_path()) != first.size(); ++i)
      std::this_thread::sleep_for(10ms);
    input.stop_accepting();
  }
  std::ofstream(path, std::ios::app) << second;
  {
    FileInput input(config, LimitsConfig{}, ingress, counters, state());
    input.start();
    std::optional<conveyor::stages::Chunk> chunk = ingress.pop();
    ASSERT_TRUE(chunk.has_value());
    EXPECT_EQ(chunk->text, second) << "the checkpoint was not kept";
    EXPECT_EQ(bytes_reach(first.size() + second.size()), first.size() + second.size());
    ingress.close();
    input.stop_accepting();
  }
}

// A file closed as idle and written to again is read at once, not at the next look for files (an
// hour away here): inotify names the file written to, and the input opens it again.
TEST_F(FileInputTest, ReadsAFileClosedAsIdleAsSoonAsItIsWrittenTo) {
  conveyor::testing::Watchdog watchdog(60s);
  const fs::path path = log("a.log");
  std::ofstream(path) << "<13>Jun  1 00:00:00 host app: the first line\n";
  InputConfig config = file_input();
  config.file.glob_interval = std::chrono::hours(1);
  config.file.close_idle = 10ms;
  Ingress ingress(16);
  InputCounters counters("app");
  {
    FileInput input(config, LimitsConfig{}, ingress, counters, state());
    input.start();
    std::optional<conveyor::stages::Chunk> first = ingress.pop();
    ASSERT_TRUE(first.has_value());
    first.reset();
    std::this_thread::sleep_for(500ms);  // read to its end, idle: closed
    std::ofstream(path, std::ios::app) << "<13>Jun  1 00:00:01 host app: the second line\n";
    for (int i = 0; i < 1000 && ingress.size_approx() == 0; ++i)
      std::this_thread::sleep_for(10ms);
    ASSERT_GT(ingress.size_approx(), 0U) << "the second line waited for a look";
    std::optional<conveyor::stages::Chunk> second = ingress.pop();
    ASSERT_TRUE(second.has_value());
    EXPECT_NE(second->text.find("the second line"), std::string::npos);
    ingress.close();
    input.stop_accepting();
  }
}

// Asked to stop while it catches up on eight files, the input hands over nothing more of the poll
// it is in (a megabyte of each file), and its last checkpoint holds exactly what it handed over.
TEST_F(FileInputTest, StopsWithinAPollAndCheckpointsWhatItHandedOver) {
  conveyor::testing::Watchdog watchdog(60s);
  for (int f = 0; f < 8; ++f) {
    std::string name = "f";
    name.append(std::to_string(f)).append(".log");
    std::ofstream file(log(name));
    for (int i = 0; i < 12'000; ++i)  // about 1 MB each
      file << "<13>Jun  1 00:00:00 host app: line " << i << " of a file caught up on at once\n";
  }
  InputConfig config = file_input();
  Ingress ingress(1);
  InputCounters counters("app");
  std::uint64_t handed_over = 0;
  std::size_t after_stop = 0;
  {
    FileInput input(config, LimitsConfig{}, ingress, counters, state());
    input.start();
    for (int i = 0; i < 2; ++i) {
      std::optional<conveyor::stages::Chunk> chunk = ingress.pop();
      ASSERT_TRUE(chunk.has_value());
      handed_over += chunk->text.size();
    }
    input.stop_accepting();
    ASSERT_TRUE(within(10s, [&] { return input.finished(); }));
    ingress.close();
    while (std::optional<conveyor::stages::Chunk> chunk = ingress.pop()) {
      handed_over += chunk->text.size();
      ++after_stop;
    }
  }
  EXPECT_LE(after_stop, 2U) << "it went on with its poll";
  const conveyor::stages::CheckpointLoad saved =
      conveyor::stages::CheckpointFile((dir_ / "state" / "app.checkpoint").string()).load();
  std::uint64_t checkpointed = 0;
  for (const conveyor::stages::CheckpointEntry& entry : saved.entries)
    checkpointed += entry.offset;
  EXPECT_EQ(checkpointed, handed_over);
}

// A file deleted while the input was behind on it (logrotate's rotate and remove, or maxage)
// could not be read after a restart: at a clean stop the input reads it to its end, its last
// unfinished line too, before it finishes.
TEST_F(FileInputTest, AtAStopItReadsAFileDeletedWhileOpenToItsEnd) {
  conveyor::testing::Watchdog watchdog(60s);
  constexpr int lines = 20'000;  // about 1.5 MB: many chunks
  {
    std::ofstream file(log("old.log"));
    for (int i = 0; i < lines; ++i)
      file << "<13>Jun  1 00:00:00 host app: line " << i << " of a deleted file\n";
    file << "<13>Jun  1 00:00:00 host app: the last line, unfinished";
  }
  InputConfig config = file_input();
  Ingress ingress(1);
  InputCounters counters("app");
  std::uint64_t newlines = 0;
  std::uint64_t chunks = 0;
  {
    FileInput input(config, LimitsConfig{}, ingress, counters, state());
    input.start();
    std::optional<conveyor::stages::Chunk> first = ingress.pop();  // it reads the file, and waits
    ASSERT_TRUE(first.has_value());
    newlines +=
        static_cast<std::uint64_t>(std::count(first->text.begin(), first->text.end(), '\n'));
    fs::remove(log("old.log"));
    input.stop_accepting();
    std::thread taker([&] {
      while (std::optional<conveyor::stages::Chunk> chunk = ingress.pop()) {
        newlines +=
            static_cast<std::uint64_t>(std::count(chunk->text.begin(), chunk->text.end(), '\n'));
        ++chunks;
      }
    });
    EXPECT_TRUE(within(30s, [&] { return input.finished(); }));
    ingress.close();
    taker.join();
  }
  // Every line, the unfinished one too, each once.
  EXPECT_EQ(newlines, static_cast<std::uint64_t>(lines) + 1);
  EXPECT_GT(chunks, 1U);
  EXPECT_EQ(InputCounters::read(counters.received), static_cast<std::uint64_t>(lines) + 1);
}

// Finished once it hands over nothing more, the input is settled only when everything it handed
// over is written and in its last checkpoint: a reload that removes it waits for that, so that
// the input put back later repeats nothing.
TEST_F(FileInputTest, SettledOnlyOnceWhatItHandedOverIsWrittenAndSaved) {
  conveyor::testing::Watchdog watchdog(60s);
  std::uint64_t size = 0;
  {
    std::ofstream file(log("app.log"));
    for (int i = 0; i < 100; ++i)
      file << "<13>Jun  1 00:00:00 host app: line " << i << "\n";
    size = static_cast<std::uint64_t>(file.tellp());
  }
  Ingress ingress(8);
  InputCounters counters("app");
  FileInput input(file_input(), LimitsConfig{}, ingress, counters, state());
  input.start();
  std::optional<conveyor::stages::Chunk> chunk = ingress.pop();  // held: not written yet
  ASSERT_TRUE(chunk.has_value());
  ASSERT_EQ(chunk->text.size(), size);
  input.stop_accepting();
  ASSERT_TRUE(within(10s, [&] { return input.finished(); }));
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(input.settled()) << "settled while a chunk it handed over was not written";
  chunk.reset();  // written
  EXPECT_TRUE(within(10s, [&] { return input.settled(); }));
  EXPECT_EQ(checkpointed((dir_ / "state" / "app.checkpoint").string()), size);
}

}  // namespace
