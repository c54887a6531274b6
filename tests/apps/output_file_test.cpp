// serve's OutputFile: flush policies, rotation by size and by time, keeping N rotated files,
// reopening, a path that cannot be written, and writes and flushes that fail part-way.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "output_file.hpp"
#include "scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;
using conveyor::log_ingest::OutputFile;
using conveyor::log_ingest::OutputResult;
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
  EXPECT_EQ(read(path()), "");  // still in the stream's buffer
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
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(file.write("0123456789\n", 1));  // each write fills a file
  EXPECT_EQ(file.rotations(), 5U);
  const std::vector<std::string> names = rotated();
  ASSERT_EQ(names.size(), 2U);
  for (const std::string& name : names) {
    EXPECT_TRUE(name.starts_with("records-")) << name;
    EXPECT_TRUE(name.ends_with(".jsonl")) << name;
    EXPECT_EQ(name[std::string("records-").size() + 8], 'T') << name;
    EXPECT_EQ(read(dir_ / name), "0123456789\n");
  }
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

// While it lives, files may grow to `bytes` only: a write beyond fails (EFBIG), as one on a full
// disk fails (ENOSPC), after what fits has been written.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) : ignored_(std::signal(SIGXFSZ, SIG_IGN)) {
    ::getrlimit(RLIMIT_FSIZE, &before_);
    const rlimit limit{bytes, before_.rlim_max};
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &before_);
    std::signal(SIGXFSZ, ignored_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  void (*ignored_)(int);
  rlimit before_{};
};

// A write cut short leaves no half record: what reached the file is taken out, its records count
// as lost, and the next record starts a line of its own.
TEST_F(OutputFileTest, AWriteCutShortIsTakenOutAndItsRecordsCountAsLost) {
  OutputFile file(path(), {});
  const std::string a = std::string(99, 'a') + "\n";
  ASSERT_EQ(file.write(a, 1).written, 1U);
  {
    FileSizeLimit limit(250);
    const OutputResult cut = file.write(std::string(299, 'b') + "\n", 3);  // 150 bytes fit
    EXPECT_TRUE(cut.failed);
    EXPECT_EQ(cut.lost, 3U);
    EXPECT_EQ(cut.written, 0U);
  }
  EXPECT_EQ(read(path()), a);
  const OutputResult next = file.write("c\n", 1);
  EXPECT_EQ(next.written, 1U);
  EXPECT_EQ(read(path()), a + "c\n");
}

// Records held in the stream's buffer count as written only once a flush covers them: a flush that
// fails loses them with the rest, and they are not in the file.
TEST_F(OutputFileTest, RecordsBufferedBeforeAFailedFlushAreLostNotWritten) {
  OutputFile file(path(), {.flush_records = 10});
  EXPECT_EQ(file.write(std::string(99, 'a') + "\n", 5).written, 0U);  // buffered
  {
    FileSizeLimit limit(150);
    const OutputResult failed = file.write(std::string(99, 'b') + "\n", 5);  // the flush is due
    EXPECT_TRUE(failed.failed);
    EXPECT_EQ(failed.lost, 10U);
    EXPECT_EQ(failed.written, 0U);
  }
  EXPECT_TRUE(file.flushed());
  EXPECT_EQ(read(path()), "");
  EXPECT_EQ(file.write("c\n", 10).written, 10U);
  EXPECT_EQ(read(path()), "c\n");
}

TEST_F(OutputFileTest, NoneAndAnUnwritablePath) {
  OutputFile none("none", {});
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.write("a\n", 1));
  EXPECT_THROW(OutputFile("/proc/no-such-dir/records.jsonl", {}), std::runtime_error);
}

}  // namespace
