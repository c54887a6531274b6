// OutputFile: appending, flushing, fsyncing and rotating one output, and holding what a failure
// left until it is written.
#include "output_file.hpp"

#include <fcntl.h>
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

// A flush is due once this much waits, whatever the policy: it bounds what a failure holds.
constexpr std::size_t hold_at_most = std::size_t{16} << 20;
// Less than this waiting is kept until the flush: a deferred flush saves system calls.
constexpr std::size_t send_at = std::size_t{64} << 10;

// fsync, where the file can be synced: a pipe, a socket or a terminal cannot (EINVAL), and has
// nothing to sync.
bool sync_descriptor(int fd) {
  return ::fsync(fd) == 0 || errno == EINVAL;
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
    fd_ = STDOUT_FILENO;
    standard_output_ = true;
    return true;
  }
  const fs::path path(path_);
  if (path.has_parent_path()) {
    std::error_code ignored;
    fs::create_directories(path.parent_path(), ignored);
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if (fd_ < 0) return false;
  struct stat status {};
  const bool known = ::fstat(fd_, &status) == 0;
  size_ = known ? static_cast<std::uint64_t>(status.st_size) : 0;
  regular_ = known && S_ISREG(status.st_mode);
  flushed_size_ = size_;
  opened_at_ = Clock::now();
  flushed_at_ = opened_at_;
  started_ = std::chrono::system_clock::now();
  return true;
}

bool OutputFile::close_descriptor() {
  const bool closed = standard_output_ || ::close(fd_) == 0;
  fd_ = -1;
  return closed;
}

std::size_t OutputFile::send(std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t wrote = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (wrote > 0) {
      done += static_cast<std::size_t>(wrote);
    } else if (wrote == 0) {
      errno = EIO;
      break;
    } else if (errno != EINTR) {
      break;
    }
  }
  size_ += done;
  return done;
}

OutputResult OutputFile::flush() {
  if (fd_ < 0 || failed_) return {};
  if (sent_ < pending_.size()) {
    sent_ += send(std::string_view(pending_).substr(sent_));
    if (sent_ != pending_.size()) return hold(errno);
  }
  if (policy_.fsync && !standard_output_ && !sync_descriptor(fd_)) return hold(errno);
  OutputResult result{.written = unflushed_};
  unflushed_ = 0;
  pending_.clear();
  sent_ = 0;
  flushed_size_ = size_;
  flushed_at_ = Clock::now();
  return result;
}

OutputResult OutputFile::hold(int error) {
  failed_ = true;
  error_ = error;
  if (fd_ >= 0 && regular_) {
    // Taken out, so that no half record stays, and written again whole: after a failed fsync
    // the kernel may have dropped what it had taken. If it cannot be taken out, the retry goes
    // on from where the write stopped instead.
    if (::ftruncate(fd_, static_cast<off_t>(flushed_size_)) == 0) {
      size_ = flushed_size_;
      sent_ = 0;
    }
  } else {
    pending_.erase(0, sent_);  // a pipe: what it took is gone
    sent_ = 0;
    if (error == EPIPE) return give_up();  // nobody reads it any more
  }
  return {.failed = true};
}

OutputResult OutputFile::write(std::string_view text, std::uint64_t records) {
  if (!enabled()) return {.written = records};
  if (text.empty()) return {};
  unflushed_ += records;
  if (failed_) {  // joins what waits for retry()
    pending_.append(text);
    return {};
  }
  const bool each_write = policy_.flush_records == 0 && policy_.flush_interval.count() == 0;
  OutputResult result;
  if (each_write && pending_.empty()) {
    // The usual case: written and flushed at once, and copied only when that fails.
    const std::size_t sent = send(text);
    if (sent != text.size() || (policy_.fsync && !standard_output_ && !sync_descriptor(fd_))) {
      const int error = errno;
      pending_.assign(text);
      sent_ = sent;
      return hold(error);
    }
    result.written = unflushed_;
    unflushed_ = 0;
    flushed_size_ = size_;
    flushed_at_ = Clock::now();
  } else {
    pending_.append(text);
    if (pending_.size() - sent_ >= send_at) {
      sent_ += send(std::string_view(pending_).substr(sent_));
      if (sent_ != pending_.size()) return hold(errno);
    }
    const bool by_records = policy_.flush_records != 0 && unflushed_ >= policy_.flush_records;
    const bool by_time =
        policy_.flush_interval.count() != 0 && Clock::now() - flushed_at_ >= policy_.flush_interval;
    if (each_write || by_records || by_time || pending_.size() >= hold_at_most) result = flush();
  }
  if (!failed_ && policy_.rotate_bytes != 0 && size_ >= policy_.rotate_bytes) result += rotate();
  return result;
}

OutputResult OutputFile::retry() {
  if (!failed_) return {};
  if (fd_ < 0 && !open()) {
    error_ = errno;
    return {.failed = true};
  }
  failed_ = false;
  OutputResult result = flush();
  if (!failed_ && policy_.rotate_bytes != 0 && size_ >= policy_.rotate_bytes) result += rotate();
  return result;
}

OutputResult OutputFile::give_up() {
  OutputResult result{.lost = unflushed_, .failed = true};
  unflushed_ = 0;
  pending_.clear();
  sent_ = 0;
  failed_ = fd_ < 0;  // without a file, the next write tries to open one
  return result;
}

OutputResult OutputFile::tick() {
  if (fd_ < 0 || failed_) return {};
  OutputResult result;
  const Clock::time_point now = Clock::now();
  if (policy_.flush_interval.count() != 0 && unflushed_ != 0 &&
      now - flushed_at_ >= policy_.flush_interval) {
    result = flush();
  }
  if (!failed_ && policy_.rotate_interval.count() != 0 && size_ != 0 &&
      now - opened_at_ >= policy_.rotate_interval) {
    result += rotate();
  }
  return result;
}

OutputResult OutputFile::rotate() {
  if (fd_ < 0 || standard_output_ || size_ == 0) return {};
  OutputResult result = flush();
  if (failed_) return result;
  if (!close_descriptor()) result.failed = true;
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
  if (!open()) result += hold(errno);  // opened again by retry()
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
  if (fd_ < 0 || standard_output_) return {};  // without a file, retry() opens the path anyway
  OutputResult result = flush();  // nothing, while holding: what is held goes to the new file
  if (!close_descriptor()) result.failed = true;
  if (!open()) result += hold(errno);
  return result;
}

OutputResult OutputFile::close() {
  if (!enabled()) return {};
  OutputResult result = failed_ ? retry() : flush();
  if (failed_) result += give_up();
  if (fd_ < 0) return result;
  if (!standard_output_ && !sync_descriptor(fd_)) result.failed = true;
  if (!close_descriptor()) result.failed = true;
  failed_ = false;
  return result;
}

}  // namespace conveyor::log_ingest
