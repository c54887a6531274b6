// OutputFile: appending, flushing, fsyncing and rotating one output.
#include "output_file.hpp"

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
  opened_at_ = Clock::now();
  flushed_at_ = opened_at_;
  started_ = std::chrono::system_clock::now();
  return true;
}

bool OutputFile::flush() {
  if (file_ == nullptr) return true;
  bool good = std::fflush(file_) == 0;
  if (policy_.fsync && file_ != stdout) good = sync_file(file_) && good;
  unflushed_ = 0;
  flushed_at_ = Clock::now();
  return good;
}

bool OutputFile::write(std::string_view text, std::uint64_t records) {
  if (text.empty() || !enabled()) return true;
  if (file_ == nullptr && !open()) return false;  // an open that failed before: try again
  bool good = std::fwrite(text.data(), 1, text.size(), file_) == text.size();
  std::clearerr(file_);
  size_ += text.size();
  unflushed_ += records;
  const bool by_records = policy_.flush_records != 0 && unflushed_ >= policy_.flush_records;
  const bool by_time =
      policy_.flush_interval.count() != 0 && Clock::now() - flushed_at_ >= policy_.flush_interval;
  const bool each_write = policy_.flush_records == 0 && policy_.flush_interval.count() == 0;
  if (each_write || by_records || by_time) good = flush() && good;
  if (policy_.rotate_bytes != 0 && size_ >= policy_.rotate_bytes) good = rotate() && good;
  return good;
}

bool OutputFile::tick() {
  if (file_ == nullptr) return true;
  bool good = true;
  const Clock::time_point now = Clock::now();
  if (policy_.flush_interval.count() != 0 && unflushed_ != 0 &&
      now - flushed_at_ >= policy_.flush_interval) {
    good = flush();
  }
  if (policy_.rotate_interval.count() != 0 && size_ != 0 &&
      now - opened_at_ >= policy_.rotate_interval) {
    good = rotate() && good;
  }
  return good;
}

bool OutputFile::rotate() {
  if (file_ == nullptr || file_ == stdout || size_ == 0) return true;
  bool good = flush();
  good = std::fclose(file_) == 0 && good;
  file_ = nullptr;
  const fs::path path(path_);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const fs::path target = rotated_name(path, started_, attempt);
    std::error_code error;
    if (fs::exists(target, error)) continue;
    fs::rename(path, target, error);
    good = !error && good;
    break;
  }
  ++rotations_;
  prune();
  return open() && good;
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

bool OutputFile::reopen() {
  if (file_ == nullptr || file_ == stdout) return true;
  bool good = flush();
  good = std::fclose(file_) == 0 && good;
  file_ = nullptr;
  return open() && good;
}

bool OutputFile::close() {
  if (file_ == nullptr) return true;
  bool good = flush();
  if (file_ != stdout) {
    good = sync_file(file_) && good;
    good = std::fclose(file_) == 0 && good;
  }
  file_ = nullptr;
  return good;
}

}  // namespace conveyor::log_ingest
