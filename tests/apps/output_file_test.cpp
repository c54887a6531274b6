// serve's OutputFile: flush policies, rotation by size and by time, keeping N rotated files,
// reopening, and a path that cannot be written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "output_file.hpp"

namespace {

namespace fs = std::filesystem;
using conveyor::log_ingest::OutputFile;
using namespace std::chrono_literals;

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("conveyor-output-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

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

  fs::path dir_;
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

TEST_F(OutputFileTest, NoneAndAnUnwritablePath) {
  OutputFile none("none", {});
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.write("a\n", 1));
  EXPECT_THROW(OutputFile("/proc/no-such-dir/records.jsonl", {}), std::runtime_error);
}

}  // namespace
