// PathGlob: fnmatch(3) per segment, `**` across segments, and a bounded directory walk.
#include "conveyor/stages/path_glob.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

namespace conveyor::stages {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> split(std::string_view path) {
  std::vector<std::string> segments;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::size_t end = slash == std::string_view::npos ? path.size() : slash;
    if (end > start) segments.emplace_back(path.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return segments;
}

bool wild(std::string_view segment) {
  return segment.find_first_of("*?[") != std::string_view::npos;
}

bool match_segments(const std::vector<std::string>& pattern, std::size_t p,
                    const std::vector<std::string>& path, std::size_t q) {
  while (p < pattern.size()) {
    if (pattern[p] == "**") {
      // Zero or more segments: try each way to go on.
      for (std::size_t skip = q; skip <= path.size(); ++skip) {
        if (match_segments(pattern, p + 1, path, skip)) return true;
      }
      return false;
    }
    if (q == path.size() || ::fnmatch(pattern[p].c_str(), path[q].c_str(), 0) != 0) return false;
    ++p;
    ++q;
  }
  return q == path.size();
}

}  // namespace

PathGlob::PathGlob(std::string pattern) : pattern_(std::move(pattern)) {
  segments_ = split(pattern_);
  const bool absolute = pattern_.starts_with('/');
  // The base never takes the last segment: a pattern without wildcards walks its directory for it.
  std::size_t fixed = 0;
  while (fixed + 1 < segments_.size() && !wild(segments_[fixed]))
    ++fixed;
  std::string base = absolute ? "/" : "";
  for (std::size_t i = 0; i < fixed; ++i) {
    if (!base.empty() && base.back() != '/') base += '/';
    base += segments_[i];
  }
  base_ = base.empty() ? "." : base;
  recursive_ = std::find(segments_.begin(), segments_.end(), "**") != segments_.end();
  depth_ = segments_.size() - fixed;
}

bool PathGlob::matches(std::string_view path) const {
  if (segments_.empty()) return false;
  if (pattern_.starts_with('/') != path.starts_with('/')) return false;
  return match_segments(segments_, 0, split(path), 0);
}

FoundFiles find_files(const std::vector<PathGlob>& include, const std::vector<PathGlob>& exclude,
                      std::size_t limit) {
  FoundFiles found;
  const auto consider = [&](const fs::path& candidate) {
    std::string path = candidate.lexically_normal().string();
    if (path.starts_with("./")) path.erase(0, 2);
    const auto matched = [&](const PathGlob& glob) { return glob.matches(path); };
    if (!std::any_of(include.begin(), include.end(), matched) ||
        std::any_of(exclude.begin(), exclude.end(), matched)) {
      return;
    }
    std::error_code error;
    if (!fs::is_regular_file(candidate, error)) return;
    found.paths.push_back(std::move(path));
  };
  for (const PathGlob& glob : include) {
    std::error_code error;
    const fs::path base(glob.base());
    if (!fs::is_directory(base, error)) continue;
    const auto options = fs::directory_options::skip_permission_denied;
    for (fs::recursive_directory_iterator it(base, options, error), end; !error && it != end;
         it.increment(error)) {
      if (!glob.recursive() && static_cast<std::size_t>(it.depth()) + 1 >= glob.depth()) {
        it.disable_recursion_pending();
      }
      consider(it->path());
    }
  }
  std::sort(found.paths.begin(), found.paths.end());
  found.paths.erase(std::unique(found.paths.begin(), found.paths.end()), found.paths.end());
  if (found.paths.size() > limit) {
    found.paths.resize(limit);
    found.truncated = true;
  }
  return found;
}

}  // namespace conveyor::stages
