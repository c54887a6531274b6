// serve's OutputFile: flush policies, rotation by size and by time, keeping N rotated files,
// reopening, a path that cannot be written, and writes and flushes that fail part-way and are
// held until a retry writes them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "file_size_limit.hpp"
#include "output_file.hpp"
#include "scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;
using conveyor::log_ingest::OutputFile;
using conveyor::log_ingest::OutputResult;
using conveyor::testing::FileSizeLimit;
using namespace std::chrono_literals;

class OutputFileTest : public ::testing::Test {
 protected:
  [[nodiscard]] std::string path() const { return (dir_ / "records.jsonl").string(); }
  static std::string read(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  // The rotated files, by name.
  [[nodiscard]] std::vector<std::string> rotated() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (name != "records.jsonl") names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  // Not made: the output makes its directory.
  conveyor::testing::ScratchDir dir_{"output", conveyor::testing::ScratchDir::Made::no};
};

TEST_F(OutputFileTest, FlushesEachWriteByDefault) {
  OutputFile file(path(), {});
  ASSERT_TRUE(file.write("a\n", 1));
  EXPECT_EQ(read(path()), "a\n");
}

TEST_F(OutputFileTest, FlushesEveryNRecords) {
  OutputFile file(path(), {.flush_records = 3});
  ASSERT_TRUE(file.write("a\n", 1));
  ASSERT_TRUE(file.write("b\n", 1));
  EXPECT_EQ(read(path()), "");  // kept until the flush
  ASSERT_TRUE(file.write("c\n", 1));
  EXPECT_EQ(read(path()), "a\nb\nc\n");
}

TEST_F(OutputFileTest, FlushesAfterAnIntervalOnTick) {
  OutputFile file(path(), {.flush_interval = 50ms});
  ASSERT_TRUE(file.write("a\n", 1));
  ASSERT_TRUE(file.tick());
  EXPECT_EQ(read(path()), "");
  std::this_thread::sleep_for(60ms);
  ASSERT_TRUE(file.tick());
  EXPECT_EQ(read(path()), "a\n");
}

TEST_F(OutputFileTest, RotatesBySizeAndKeepsTheNewest) {
  OutputFile file(path(), {.rotate_bytes = 10, .keep = 2});
  // Twelve files in the same second or two: the names share stamps and count on (-1, -2, ...,
  // -10, -11), and the two kept are the last two made.
  for (int i = 0; i < 12; ++i)
    ASSERT_TRUE(file.write("012345678" + std::string(1, static_cast<char>('a' + i)) + "\n", 1));
  EXPECT_EQ(file.rotations(), 12U);
  const std::vector<std::string> names = rotated();
  ASSERT_EQ(names.size(), 2U);
  std::vector<std::string> kept;
  for (const std::string& name : names) {
    EXPECT_TRUE(name.starts_with("records-")) << name;
    EXPECT_TRUE(name.ends_with(".jsonl")) << name;
    EXPECT_EQ(name[std::string("records-").size() + 8], 'T') << name;
    kept.push_back(read(dir_ / name));
  }
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<std::string>{"012345678k\n", "012345678l\n"}));
  EXPECT_EQ(read(path()), "");  // the new file, empty
}

TEST_F(OutputFileTest, RotatesByTimeButNotAnEmptyFile) {
  OutputFile file(path(), {.rotate_interval = 50ms});
  std::this_thread::sleep_for(60ms);
  ASSERT_TRUE(file.tick());
  EXPECT_EQ(file.rotations(), 0U);
  ASSERT_TRUE(file.write("a\n", 1));
  std::this_thread::sleep_for(60ms);
  ASSERT_TRUE(file.tick());
  EXPECT_EQ(file.rotations(), 1U);
  ASSERT_EQ(rotated().size(), 1U);
  ASSERT_TRUE(file.write("b\n", 1));
  EXPECT_EQ(read(path()), "b\n");
}

TEST_F(OutputFileTest, ReopenStartsANewFileAfterAMove) {
  OutputFile file(path(), {});
  ASSERT_TRUE(file.write("a\n", 1));
  fs::rename(path(), dir_ / "records.jsonl.1");
  ASSERT_TRUE(file.reopen());
  ASSERT_TRUE(file.write("b\n", 1));
  EXPECT_EQ(read(dir_ / "records.jsonl.1"), "a\n");
  EXPECT_EQ(read(path()), "b\n");
}

TEST_F(OutputFileTest, AppendsAndCountsWhatIsThere) {
  {
    OutputFile file(path(), {});
    ASSERT_TRUE(file.write("0123456789\n", 1));
  }
  OutputFile file(path(), {.rotate_bytes = 15});
  ASSERT_TRUE(file.write("abcde\n", 1));  // 11 + 6 bytes: over the size
  EXPECT_EQ(file.rotations(), 1U);
}

// Truncated by another program (logrotate's copytruncate): the size that rotates the file is
// the file's own, not the bytes the output wrote before the truncation.
TEST_F(OutputFileTest, RotatesBySizeAfterACopytruncateByWhatTheFileHolds) {
  OutputFile file(path(), {.rotate_bytes = 100});
  ASSERT_TRUE(file.write(std::string(89, 'a') + "\n", 1));
  fs::resize_file(path(), 0);
  const std::string b = std::string(19, 'b') + "\n";
  ASSERT_TRUE(file.write(b, 1));  // 110 bytes written in all, 20 in the file
  EXPECT_EQ(file.rotations(), 0U);
  EXPECT_EQ(read(path()), b);
  ASSERT_TRUE(file.write(std::string(79, 'c') + "\n", 1));  // 100 in the file
  EXPECT_EQ(file.rotations(), 1U);
  EXPECT_EQ(read(path()), "");
}

// A write cut short loses nothing and leaves no half record: what reached the file is taken out,
// the records are held, and a retry once there is room writes them whole.
TEST_F(OutputFileTest, AWriteCutShortIsHeldAndWrittenWholeOnceThereIsRoom) {
  OutputFile file(path(), {});
  const std::string a = std::string(99, 'a') + "\n";
  const std::string b = std::string(299, 'b') + "\n";
  ASSERT_EQ(file.write(a, 1).written, 1U);
  {
    FileSizeLimit limit(250);
    const OutputResult cut = file.write(b, 3);  // 150 bytes fit
    EXPECT_TRUE(cut.failed);
    EXPECT_EQ(cut.lost, 0U);
    EXPECT_EQ(cut.written, 0U);
    EXPECT_TRUE(file.holding());
    EXPECT_EQ(file.held_records(), 3U);
    EXPECT_EQ(file.error(), EFBIG);
    EXPECT_EQ(read(path()), a);
    EXPECT_TRUE(file.retry().failed);  // still no room
    EXPECT_EQ(read(path()), a);
  }
  const OutputResult retried = file.retry();
  EXPECT_FALSE(retried.failed);
  EXPECT_EQ(retried.written, 3U);
  EXPECT_FALSE(file.holding());
  EXPECT_EQ(file.write("c\n", 1).written, 1U);
  EXPECT_EQ(read(path()), a + b + "c\n");
}

// Records kept for a deferred flush count as written only once a flush covers them: a flush that
// fails holds them all, and they are written, in order, by the retry.
TEST_F(OutputFileTest, RecordsBufferedBeforeAFailedFlushAreHeldNotLost) {
  OutputFile file(path(), {.flush_records = 10});
  const std::string a = std::string(99, 'a') + "\n";
  const std::string b = std::string(99, 'b') + "\n";
  EXPECT_EQ(file.write(a, 5).written, 0U);  // kept until the flush
  {
    FileSizeLimit limit(150);
    const OutputResult failed = file.write(b, 5);  // the flush is due
    EXPECT_TRUE(failed.failed);
    EXPECT_EQ(failed.lost, 0U);
    EXPECT_EQ(file.held_records(), 10U);
    EXPECT_EQ(read(path()), "");
    // Written while it holds: joins what is held, behind it.
    EXPECT_FALSE(file.write("c\n", 1).failed);
    EXPECT_EQ(file.held_records(), 11U);
  }
  EXPECT_EQ(file.retry().written, 11U);
  EXPECT_TRUE(file.flushed());
  EXPECT_EQ(read(path()), a + b + "c\n");
}

// Closed while it holds records it still cannot write: they are lost, and counted.
TEST_F(OutputFileTest, WhatIsStillHeldAtCloseIsLostAndCounted) {
  OutputFile file(path(), {});
  FileSizeLimit limit(50);
  EXPECT_TRUE(file.write(std::string(99, 'a') + "\n", 2).failed);
  const OutputResult closed = file.close();
  EXPECT_TRUE(closed.failed);
  EXPECT_EQ(closed.lost, 2U);
  EXPECT_EQ(read(path()), "");
}

// A pipe whose reader is gone takes nothing ever again: its records are lost at once, not held.
TEST_F(OutputFileTest, APipeWithNoReaderLosesItsRecordsAtOnce) {
  std::array<int, 2> ends{};
  ASSERT_EQ(::pipe(ends.data()), 0);
  ::close(ends[0]);
  const auto ignored = std::signal(SIGPIPE, SIG_IGN);
  {
    OutputFile file("/dev/fd/" + std::to_string(ends[1]), {});
    const OutputResult lost = file.write("a\n", 4);
    EXPECT_TRUE(lost.failed);
    EXPECT_EQ(lost.lost, 4U);
    EXPECT_FALSE(file.holding());
  }
  std::signal(SIGPIPE, ignored);
  ::close(ends[1]);
}

// A reopen while it holds (logrotate moved the file and made a new one): what is held goes to the
// new file, whole.
TEST_F(OutputFileTest, WhatIsHeldGoesToTheFileOpenedAgain) {
  OutputFile file(path(), {});
  ASSERT_TRUE(file.write("a\n", 1));
  {
    FileSizeLimit limit(50);
    EXPECT_TRUE(file.write(std::string(99, 'b') + "\n", 1).failed);
  }
  fs::rename(path(), dir_ / "records.jsonl.1");
  EXPECT_FALSE(file.reopen().failed);
  EXPECT_EQ(file.retry().written, 1U);
  EXPECT_EQ(read(dir_ / "records.jsonl.1"), "a\n");
  EXPECT_EQ(read(path()), std::string(99, 'b') + "\n");
}

// Truncated by another program (logrotate's copytruncate) before a write that fails: what the
// failed write left is taken off the file's real end, which is not padded back to the size the
// output had counted.
TEST_F(OutputFileTest, AFailedWriteAfterACopytruncateLeavesNoPadding) {
  OutputFile file(path(), {});
  ASSERT_TRUE(file.write(std::string(99, 'a') + "\n", 1));
  fs::resize_file(path(), 0);
  const std::string b = std::string(99, 'b') + "\n";
  {
    FileSizeLimit limit(50);
    EXPECT_TRUE(file.write(b, 1).failed);
    EXPECT_EQ(read(path()), "");
  }
  EXPECT_EQ(file.retry().written, 1U);
  EXPECT_EQ(read(path()), b);
}

// A file that may grow no more (EFBIG) while it rotates by size: the retry starts the next file,
// and what is held goes there.
TEST_F(OutputFileTest, AFileTooLargeToGrowRotatesAtTheRetry) {
  OutputFile file(path(), {.rotate_bytes = 1000});
  const std::string a = std::string(99, 'a') + "\n";
  const std::string b = std::string(99, 'b') + "\n";
  ASSERT_TRUE(file.write(a, 1));
  const FileSizeLimit limit(150);
  EXPECT_TRUE(file.write(b, 1).failed);
  EXPECT_EQ(file.error(), EFBIG);
  EXPECT_EQ(file.retry().written, 1U);
  EXPECT_EQ(file.rotations(), 1U);
  const std::vector<std::string> names = rotated();
  ASSERT_EQ(names.size(), 1U);
  EXPECT_EQ(read(dir_ / names[0]), a);
  EXPECT_EQ(read(path()), b);
}

// The service's timer never waits on a pipe whose reader stalls: it sends what the pipe has room
// for, keeps the rest, and sends that once the reader has read.
TEST_F(OutputFileTest, TheTimerNeverWaitsOnAStalledPipe) {
  std::array<int, 2> ends{};
  ASSERT_EQ(::pipe(ends.data()), 0);
  ASSERT_GT(::fcntl(ends[1], F_SETPIPE_SZ, 4096), 0);
  {
    OutputFile file("/dev/fd/" + std::to_string(ends[1]), {.flush_interval = 10ms});
    const std::string text(20'000, 'x');  // kept for the flush: more than the pipe holds
    EXPECT_EQ(file.write(text, 5).written, 0U);
    std::this_thread::sleep_for(20ms);
    const OutputResult partly = file.tick();  // returns, with the pipe full
    EXPECT_FALSE(partly.failed);
    EXPECT_EQ(partly.written, 0U);
    EXPECT_FALSE(file.holding());
    std::string got;
    std::uint64_t written = 0;
    for (int i = 0; i < 1000 && written == 0; ++i) {
      std::array<char, 4096> buffer{};
      const ssize_t n = ::read(ends[0], buffer.data(), buffer.size());
      if (n > 0) got.append(buffer.data(), static_cast<std::size_t>(n));
      written += file.tick().written;
    }
    EXPECT_EQ(written, 5U);
    for (std::array<char, 4096> buffer{}; got.size() < text.size();) {
      const ssize_t n = ::read(ends[0], buffer.data(), buffer.size());
      if (n <= 0) break;
      got.append(buffer.data(), static_cast<std::size_t>(n));
    }
    EXPECT_EQ(got, text);
  }
  ::close(ends[0]);
  ::close(ends[1]);
}

TEST_F(OutputFileTest, NoneAndAnUnwritablePath) {
  OutputFile none("none", {});
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.write("a\n", 1));
  EXPECT_THROW(OutputFile("/proc/no-such-dir/records.jsonl", {}), std::runtime_error);
}

}  // namespace
