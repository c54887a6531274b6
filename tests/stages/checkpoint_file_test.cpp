// CheckpointFile: a save interrupted at any step leaves the old checkpoint or the new one; a
// damaged file is reported and set aside, never trusted and never fatal.
#include "conveyor/stages/checkpoint_file.hpp"
#include "scratch_dir.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace {

namespace fs = std::filesystem;
using conveyor::stages::CheckpointEntry;
using conveyor::stages::CheckpointFile;
using conveyor::stages::CheckpointLoad;
using conveyor::stages::CheckpointStep;

class CheckpointFileTest : public ::testing::Test {
 protected:
  [[nodiscard]] std::string path() const { return (dir_ / "input.checkpoint").string(); }

  conveyor::testing::ScratchDir dir_{"checkpoint"};
};

std::vector<CheckpointEntry> some_entries(std::uint64_t offset) {
  return {{.device = 2049,
           .inode = 131077,
           .fingerprint = 0x1234abcdef,
           .fingerprint_length = 256,
           .offset = offset,
           .path = "/var/log/nginx/access.log"},
          {.device = 2049,
           .inode = 7,
           .fingerprint = 1,
           .fingerprint_length = 12,
           .offset = offset * 2,
           .path = "/tmp/odd name with 100% and\na line feed\r.log"}};
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

TEST_F(CheckpointFileTest, WhatIsSavedIsLoaded) {
  const CheckpointFile checkpoint(path());
  checkpoint.save(some_entries(1000));
  const CheckpointLoad loaded = checkpoint.load();
  EXPECT_EQ(loaded.status, CheckpointLoad::Status::loaded) << loaded.problem;
  EXPECT_EQ(loaded.entries, some_entries(1000));
  EXPECT_FALSE(fs::exists(path() + ".tmp"));
  checkpoint.save({});
  EXPECT_EQ(checkpoint.load().status, CheckpointLoad::Status::loaded);
  EXPECT_TRUE(checkpoint.load().entries.empty());
}

TEST_F(CheckpointFileTest, AMissingFileIsMissing) {
  const CheckpointLoad loaded = CheckpointFile(path()).load();
  EXPECT_EQ(loaded.status, CheckpointLoad::Status::missing);
  EXPECT_TRUE(loaded.entries.empty());
}

// The out-of-memory kill that leaves an empty checkpoint behind: reported, set aside, and the
// next start finds no checkpoint rather than failing again.
TEST_F(CheckpointFileTest, AnEmptyFileIsSetAsideNotFatal) {
  write_file(path(), "");
  const CheckpointFile checkpoint(path());
  const CheckpointLoad loaded = checkpoint.load();
  EXPECT_EQ(loaded.status, CheckpointLoad::Status::corrupt);
  EXPECT_NE(loaded.problem.find("empty"), std::string::npos) << loaded.problem;
  EXPECT_NE(loaded.problem.find(".corrupt"), std::string::npos) << loaded.problem;
  EXPECT_TRUE(fs::exists(path() + ".corrupt"));
  EXPECT_EQ(checkpoint.load().status, CheckpointLoad::Status::missing);
}

// Every prefix of a valid file, and every single flipped byte, is found out: never loaded as
// entries that were not saved.
TEST_F(CheckpointFileTest, EveryTruncationAndFlippedByteIsFoundOut) {
  const std::string valid = CheckpointFile::format(some_entries(5));
  std::vector<CheckpointEntry> entries;
  std::string problem;
  ASSERT_TRUE(CheckpointFile::parse(valid, entries, problem)) << problem;
  for (std::size_t length = 0; length < valid.size(); ++length) {
    EXPECT_FALSE(CheckpointFile::parse(valid.substr(0, length), entries, problem)) << length;
    EXPECT_TRUE(entries.empty());
  }
  for (std::size_t at = 0; at < valid.size(); ++at) {
    std::string damaged = valid;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x20);
    if (CheckpointFile::parse(damaged, entries, problem)) {
      // Only a case change in the checksum's hex digits reads the same.
      EXPECT_EQ(entries, some_entries(5)) << at;
    }
  }
}

// The process dies (SIGKILL) at each step of a save: afterwards the checkpoint loads, and holds
// either what was there before or what was being saved.
TEST_F(CheckpointFileTest, KilledAtEveryStepOfASaveLeavesTheOldOrTheNew) {
  for (const CheckpointStep step :
       {CheckpointStep::write, CheckpointStep::halfway, CheckpointStep::fsync_file,
        CheckpointStep::rename, CheckpointStep::fsync_directory}) {
    CheckpointFile(path()).save(some_entries(1));
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      const CheckpointFile dying(path(), [step](CheckpointStep at) {
        if (at == step) ::raise(SIGKILL);
      });
      dying.save(some_entries(2));
      ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << static_cast<int>(step);
    const CheckpointLoad loaded = CheckpointFile(path()).load();
    ASSERT_EQ(loaded.status, CheckpointLoad::Status::loaded)
        << "step " << static_cast<int>(step) << ": " << loaded.problem;
    if (step == CheckpointStep::fsync_directory) {
      EXPECT_EQ(loaded.entries, some_entries(2));  // renamed before it died
    } else {
      EXPECT_EQ(loaded.entries, some_entries(1)) << static_cast<int>(step);
    }
    // The next save replaces a temporary file left behind.
    CheckpointFile(path()).save(some_entries(3));
    EXPECT_EQ(CheckpointFile(path()).load().entries, some_entries(3));
  }
}

TEST_F(CheckpointFileTest, ASaveThatCannotWriteThrowsAndNamesThePath) {
  const CheckpointFile nowhere((dir_ / "no-such-directory" / "input.checkpoint").string());
  try {
    nowhere.save(some_entries(1));
    FAIL() << "saved into a missing directory";
  } catch (const std::system_error& error) {
    EXPECT_NE(std::string(error.what()).find("no-such-directory"), std::string::npos)
        << error.what();
  }
}

}  // namespace
