// OutputFile: appending, flushing, fsyncing and rotating one output.
#include "output_file.hpp"

#include <stdio_ext.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

namespace conveyor::log_ingest {

namespace fs = std::filesystem;

namespace {

// fsync, where the file can be synced: a pipe, a socket or a terminal cannot (EINVAL), and has
// nothing to sync.
bool sync_file(std::FILE* file) {
  return ::fsync(::fileno(file)) == 0 || errno == EINVAL;
}

// records.jsonl started at T -> records-20261126T125500.jsonl
fs::path rotated_name(const fs::path& path, std::chrono::system_clock::time_point started,
                      int attempt) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(started);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  const std::size_t length = std::strftime(stamp, sizeof stamp, "-%Y%m%dT%H%M%S", &utc);
  std::string name = path.stem().string();
  name.append(stamp, length);
  if (attempt > 0) name.append("-").append(std::to_string(attempt));
  name.append(path.extension().string());
  return path.parent_path() / name;
}

}  // namespace

OutputFile::OutputFile(std::string path, const OutputPolicy& policy)
    : path_(path == "none" ? std::string() : std::move(path)), policy_(policy) {
  if (!enabled()) return;
  if (!open()) {
    const std::string why = std::generic_category().message(errno);
    std::string message = "cannot write '";
    throw std::runtime_error(message.append(path_).append("': ").append(why));
  }
}

OutputFile::~OutputFile() {
  (void)close();
}

bool OutputFile::open() {
  if (path_ == "-") {
    file_ = stdout;
    return true;
  }
  const fs::path path(path_);
  if (path.has_parent_path()) {
    std::error_code ignored;
    fs::create_directories(path.parent_path(), ignored);
  }
  file_ = std::fopen(path_.c_str(), "ab");
  if (file_ == nullptr) return false;
  struct stat status {};
  size_ = ::fstat(::fileno(file_), &status) == 0 ? static_cast<std::uint64_t>(status.st_size) : 0;
  flushed_size_ = size_;
  opened_at_ = Clock::now();
  flushed_at_ = opened_at_;
  started_ = std::chrono::system_clock::now();
  return true;
}

OutputResult OutputFile::flush() {
  if (file_ == nullptr) return {};
  const bool flushed = std::fflush(file_) == 0;
  if (!flushed || (policy_.fsync && file_ != stdout && !sync_file(file_))) return discard();
  OutputResult result{.written = unflushed_};
  unflushed_ = 0;
  flushed_size_ = size_;
  flushed_at_ = Clock::now();
  return result;
}

OutputResult OutputFile::discard() {
  OutputResult result{.lost = unflushed_, .failed = true};
  ::__fpurge(file_);
  std::clearerr(file_);
  if (file_ != stdout) {
    // Whatever reached the file since the last good flush, a record cut short among it.
    (void)::ftruncate(::fileno(file_), static_cast<off_t>(flushed_size_));
  }
  size_ = flushed_size_;
  unflushed_ = 0;
  flushed_at_ = Clock::now();
  return result;
}

OutputResult OutputFile::write(std::string_view text, std::uint64_t records) {
  if (!enabled()) return {.written = records};
  if (text.empty()) return {};
  // An open that failed before: try again.
  if (file_ == nullptr && !open()) return {.lost = records, .failed = true};
  const bool whole = std::fwrite(text.data(), 1, text.size(), file_) == text.size();
  size_ += text.size();
  unflushed_ += records;
  if (!whole) return discard();
  const bool by_records = policy_.flush_records != 0 && unflushed_ >= policy_.flush_records;
  const bool by_time =
      policy_.flush_interval.count() != 0 && Clock::now() - flushed_at_ >= policy_.flush_interval;
  const bool each_write = policy_.flush_records == 0 && policy_.flush_interval.count() == 0;
  OutputResult result;
  if (each_write || by_records || by_time) result = flush();
  if (policy_.rotate_bytes != 0 && size_ >= policy_.rotate_bytes) result += rotate();
  return result;
}

OutputResult OutputFile::tick() {
  if (file_ == nullptr) return {};
  OutputResult result;
  const Clock::time_point now = Clock::now();
  if (policy_.flush_interval.count() != 0 && unflushed_ != 0 &&
      now - flushed_at_ >= policy_.flush_interval) {
    result = flush();
  }
  if (policy_.rotate_interval.count() != 0 && size_ != 0 &&
      now - opened_at_ >= policy_.rotate_interval) {
    result += rotate();
  }
  return result;
}

OutputResult OutputFile::rotate() {
  if (file_ == nullptr || file_ == stdout || size_ == 0) return {};
  OutputResult result = flush();
  if (std::fclose(file_) != 0) result.failed = true;
  file_ = nullptr;
  const fs::path path(path_);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const fs::path target = rotated_name(path, started_, attempt);
    std::error_code error;
    if (fs::exists(target, error)) continue;
    fs::rename(path, target, error);
    if (error) result.failed = true;
    break;
  }
  ++rotations_;
  prune();
  if (!open()) result.failed = true;
  return result;
}

void OutputFile::prune() const {
  const fs::path path(path_);
  const fs::path directory = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::string prefix = path.stem().string() + "-";
  const std::string extension = path.extension().string();
  std::vector<fs::path> rotated;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    // STEM-YYYYMMDDTHHMMSS[-N].EXT
    if (name.size() >= prefix.size() + 15 + extension.size() && name.starts_with(prefix) &&
        name.ends_with(extension) && name[prefix.size() + 8] == 'T') {
      rotated.push_back(entry.path());
    }
  }
  if (rotated.size() <= policy_.keep) return;
  std::sort(rotated.begin(), rotated.end());  // the stamps sort by time
  for (std::size_t i = 0; i + policy_.keep < rotated.size(); ++i)
    fs::remove(rotated[i], error);
}

OutputResult OutputFile::reopen() {
  if (file_ == nullptr || file_ == stdout) return {};
  OutputResult result = flush();
  if (std::fclose(file_) != 0) result.failed = true;
  file_ = nullptr;
  if (!open()) result.failed = true;
  return result;
}

OutputResult OutputFile::close() {
  if (file_ == nullptr) return {};
  OutputResult result = flush();
  if (file_ != stdout) {
    if (!sync_file(file_)) result.failed = true;
    if (std::fclose(file_) != 0) result.failed = true;
  }
  file_ = nullptr;
  return result;
}

}  // namespace conveyor::log_ingest
