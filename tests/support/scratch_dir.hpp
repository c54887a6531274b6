// ScratchDir: a directory of one test's own under the temp directory, for tests that write files.
//
// Named `conveyor-TAG-PID-TEST` (TEST: the running GoogleTest test's name, `/` made `_`), so that
// tests in parallel processes and tests of one process never share one. Whatever an earlier run
// left there is removed when it is made; the directory and everything in it are removed with the
// object. `Made::no` leaves the directory itself uncreated, for code under test that must make it.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace conveyor::testing {

class ScratchDir {
 public:
  enum class Made { yes, no };

  explicit ScratchDir(std::string_view tag, Made made = Made::yes)
      : path_(std::filesystem::temp_directory_path() / name(tag)) {
    std::filesystem::remove_all(path_);
    if (made == Made::yes) std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;  // a test that failed may have left it unreadable; never throw here
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  operator const std::filesystem::path&() const noexcept { return path_; }  // NOLINT: implicit
  [[nodiscard]] std::string string() const { return path_.string(); }
  friend std::filesystem::path operator/(const ScratchDir& dir, const std::filesystem::path& name) {
    return dir.path_ / name;
  }

 private:
  static std::string name(std::string_view tag) {
    std::string result = "conveyor-" + std::string(tag) + "-" + std::to_string(::getpid());
    if (const auto* test = ::testing::UnitTest::GetInstance()->current_test_info()) {
      std::string test_name = test->name();
      std::replace(test_name.begin(), test_name.end(), '/', '_');
      result += "-" + test_name;
    }
    return result;
  }

  std::filesystem::path path_;
};

}  // namespace conveyor::testing
