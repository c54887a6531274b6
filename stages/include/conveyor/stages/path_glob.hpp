// PathGlob: a shell pattern over whole paths, where `**` stands for any number of directories.
//
//   PathGlob logs("/var/log/**/*.log");
//   logs.matches("/var/log/nginx/access.log");  // true
//   find_files({logs}, {PathGlob("/var/log/**/*.gz")}, 10000);
//
// Contract:
// - A pattern is cut at '/'. A segment `**` matches zero or more whole segments; any other segment
//   is matched against one segment by fnmatch(3) (`*`, `?`, `[...]`), so `*` never crosses a '/'.
// - `find_files` walks from each include's base (its leading segments without wildcards): through
//   every directory below it when the pattern has `**`, otherwise only as deep as the pattern. It
//   returns the regular files (symbolic links to them included) that an include matches and no
//   exclude does, sorted, without duplicates, and at most `limit` of them (`truncated` says when
//   more matched). Directories it cannot read are skipped. Symbolic links to directories are not
//   followed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace conveyor::stages {

class PathGlob {
 public:
  explicit PathGlob(std::string pattern);

  [[nodiscard]] bool matches(std::string_view path) const;
  [[nodiscard]] const std::string& pattern() const noexcept { return pattern_; }
  // The directory the pattern starts from ("." for a relative pattern without one).
  [[nodiscard]] const std::string& base() const noexcept { return base_; }
  // Whether it has `**`; otherwise how many segments below base() it reaches.
  [[nodiscard]] bool recursive() const noexcept { return recursive_; }
  [[nodiscard]] std::size_t depth() const noexcept { return depth_; }

 private:
  std::string pattern_;
  std::vector<std::string> segments_;
  std::string base_;
  bool recursive_ = false;
  std::size_t depth_ = 0;
};

struct FoundFiles {
  std::vector<std::string> paths;
  bool truncated = false;
};

FoundFiles find_files(const std::vector<PathGlob>& include, const std::vector<PathGlob>& exclude,
                      std::size_t limit);

}  // namespace conveyor::stages
