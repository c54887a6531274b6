// OutputFile: appending, flushing, fsyncing and rotating one output, and holding what a failure
// left until it is written.
#include "output_file.hpp"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <ctime>
#include <stdexcept>
#include <string_view>
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

// When a file was started, as its rotated name says it (UTC): YYYYMMDDTHHMMSS.
std::string stamp_of(std::chrono::system_clock::time_point started) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(started);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  const std::size_t length = std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &utc);
  return {stamp, length};
}

// records.jsonl started at T -> records-20261126T125500.jsonl (records-20261126T125500-N.jsonl)
fs::path rotated_name(const fs::path& path, const std::string& stamp, int attempt) {
  std::string name = path.stem().string();
  name.append("-").append(stamp);
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
  sent_ = 0;  // a new descriptor: what is held is written to it whole
  if (path_ == "-") {
    fd_ = STDOUT_FILENO;
    standard_output_ = true;
    opened_at_ = Clock::now();
    flushed_at_ = opened_at_;
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

std::size_t OutputFile::send(std::string_view bytes, Wait wait) {
  // A pipe, a socket or a terminal may take nothing for as long as its reader stalls: the
  // timer's thread gives it only what it has room for, PIPE_BUF bytes at a time (a write that
  // size to a pipe with room does not block).
  const bool careful = wait == Wait::never && !regular_;
  std::size_t done = 0;
  while (done < bytes.size()) {
    std::size_t size = bytes.size() - done;
    if (careful) {
      pollfd ready{.fd = fd_, .events = POLLOUT, .revents = 0};
      if (::poll(&ready, 1, 0) != 1 || (ready.revents & POLLOUT) == 0) {
        errno = EAGAIN;
        break;
      }
      size = std::min<std::size_t>(size, PIPE_BUF);
    }
    const ssize_t wrote = ::write(fd_, bytes.data() + done, size);
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

bool OutputFile::send_pending(Wait wait) {
  sent_ += send(std::string_view(pending_).substr(sent_), wait);
  return sent_ == pending_.size();
}

bool OutputFile::synced(bool sync) const {
  return !(sync || policy_.fsync) || standard_output_ || sync_descriptor(fd_);
}

bool OutputFile::rotation_due() noexcept {
  if (policy_.rotate_bytes == 0 || size_ < policy_.rotate_bytes) return false;
  struct stat status {};
  if (regular_ && fd_ >= 0 && ::fstat(fd_, &status) == 0) {
    size_ = static_cast<std::uint64_t>(status.st_size);
  }
  return size_ >= policy_.rotate_bytes;
}

void OutputFile::mark_flushed() noexcept {
  ++flushes_;
  unflushed_ = 0;
  pending_.clear();
  sent_ = 0;
  flushed_at_ = Clock::now();
}

OutputResult OutputFile::flush(Wait wait, bool sync) {
  if (fd_ < 0 || failed_) return {};
  if (!send_pending(wait)) {
    if (errno == EAGAIN && wait == Wait::never) return {};  // the rest later
    return hold(errno, false);
  }
  if (!synced(sync)) return hold(errno, true);
  const OutputResult result{.written = unflushed_};
  mark_flushed();
  return result;
}

OutputResult OutputFile::hold(int error, bool sync_failed) {
  failed_ = true;
  error_ = error;
  if (fd_ >= 0 && regular_) {
    // What reached the file since the last good flush is its last `sent_` bytes: taken out from
    // its real end (another program may have truncated it meanwhile), so that no half record
    // stays, and written again whole.
    struct stat status {};
    const bool known = ::fstat(fd_, &status) == 0;
    const auto end = known ? static_cast<std::uint64_t>(status.st_size) : 0;
    if (known && end >= sent_ && ::ftruncate(fd_, static_cast<off_t>(end - sent_)) == 0) {
      size_ = end - sent_;
      sent_ = 0;
    } else if (sync_failed) {
      // The kernel may have dropped what it took: all of it is written again, even if a part
      // of it stays twice.
      sent_ = 0;
    }
    // Otherwise the retry goes on where the failed write stopped, and completes the record.
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
    const std::size_t sent = send(text, Wait::may);
    const bool whole = sent == text.size();
    if (!whole || !synced(false)) {
      const int error = errno;
      pending_.assign(text);
      sent_ = sent;
      return hold(error, whole);
    }
    result.written = unflushed_;
    mark_flushed();
  } else {
    pending_.append(text);
    if (pending_.size() - sent_ >= send_at && !send_pending(Wait::may)) return hold(errno, false);
    const bool by_records = policy_.flush_records != 0 && unflushed_ >= policy_.flush_records;
    const bool by_time =
        policy_.flush_interval.count() != 0 && Clock::now() - flushed_at_ >= policy_.flush_interval;
    if (each_write || by_records || by_time || pending_.size() >= hold_at_most) {
      result = flush(Wait::may, false);
    }
  }
  if (rotation_due()) result += rotate(Wait::may);
  return result;
}

OutputResult OutputFile::retry(Wait wait) {
  if (!failed_) return {};
  if (fd_ < 0 && !open()) {
    error_ = errno;
    return {.failed = true};
  }
  OutputResult result;
  if (error_ == EFBIG && policy_.rotate_bytes != 0 && size_ != 0) {
    // Too large to grow: what is held goes to the next file.
    result = start_next_file();
    if (fd_ < 0) return result;
  }
  failed_ = false;
  result += flush(wait, false);
  // A pipe with no room for all of it (the timer's retry): still holding the rest.
  if (!failed_ && sent_ < pending_.size()) failed_ = true;
  if (rotation_due()) result += rotate(wait);
  return result;
}

OutputResult OutputFile::give_up() {
  if (!failed_) return {};
  OutputResult result{.lost = unflushed_, .failed = true};
  unflushed_ = 0;
  pending_.clear();
  sent_ = 0;
  failed_ = fd_ < 0;  // without a file, what comes next waits for a retry that opens one
  return result;
}

OutputResult OutputFile::tick() {
  if (fd_ < 0 || failed_) return {};
  OutputResult result;
  const Clock::time_point now = Clock::now();
  if (policy_.flush_interval.count() != 0 && unflushed_ != 0 &&
      now - flushed_at_ >= policy_.flush_interval) {
    result = flush(Wait::never, false);
  }
  if (policy_.rotate_interval.count() != 0 && size_ != 0 &&
      now - opened_at_ >= policy_.rotate_interval) {
    result += rotate(Wait::never);
  }
  return result;
}

OutputResult OutputFile::rotate(Wait wait) {
  // Only a regular file rotates; never while holding, or with bytes not yet sent.
  if (fd_ < 0 || !regular_ || failed_ || size_ == 0) return {};
  OutputResult result = flush(wait, false);
  if (failed_ || !pending_.empty()) return result;
  return result += start_next_file();
}

OutputResult OutputFile::start_next_file() {
  OutputResult result;
  if (!close_descriptor()) result.failed = true;
  // After the newest file of the same stamp, never in a name pruning freed: that name would sort
  // as the oldest, and the next prune would delete the newest file.
  int attempt = 0;
  const std::string stamp = stamp_of(started_);
  for (const RotatedFile& file : rotated_files()) {
    if (file.stamp == stamp) attempt = std::max(attempt, static_cast<int>(file.attempt) + 1);
  }
  const fs::path path(path_);
  for (std::error_code error; attempt < 1'000'000; ++attempt) {
    const fs::path target = rotated_name(path, stamp, attempt);
    if (fs::exists(target, error)) continue;
    fs::rename(path, target, error);
    if (error) result.failed = true;
    break;
  }
  ++rotations_;
  prune();
  if (!open()) result += hold(errno, false);  // opened again by retry()
  return result;
}

std::vector<OutputFile::RotatedFile> OutputFile::rotated_files() const {
  const fs::path path(path_);
  const fs::path directory = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::string prefix = path.stem().string() + "-";
  const std::string extension = path.extension().string();
  std::vector<RotatedFile> rotated;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
    // STEM-YYYYMMDDTHHMMSS[-N].EXT
    const std::string name = entry.path().filename().string();
    if (name.size() < prefix.size() + 15 + extension.size() || !name.starts_with(prefix) ||
        !name.ends_with(extension) || name[prefix.size() + 8] != 'T') {
      continue;
    }
    RotatedFile file{.stamp = name.substr(prefix.size(), 15), .path = entry.path()};
    const std::string_view rest = std::string_view(name).substr(
        prefix.size() + 15, name.size() - prefix.size() - 15 - extension.size());
    if (!rest.empty()) {
      const auto [end, parsed] =
          std::from_chars(rest.data() + 1, rest.data() + rest.size(), file.attempt);
      if (rest[0] != '-' || parsed != std::errc() || end != rest.data() + rest.size()) continue;
    }
    rotated.push_back(std::move(file));
  }
  return rotated;
}

void OutputFile::prune() const {
  std::vector<RotatedFile> rotated = rotated_files();
  if (rotated.size() <= policy_.keep) return;
  // In the order they were made: by stamp, then by N (none first; as text, "-1" would come
  // before the stamp's own file, and "-10" before "-2").
  std::sort(rotated.begin(), rotated.end(), [](const RotatedFile& a, const RotatedFile& b) {
    return a.stamp != b.stamp ? a.stamp < b.stamp : a.attempt < b.attempt;
  });
  std::error_code error;
  for (std::size_t i = 0; i + policy_.keep < rotated.size(); ++i)
    fs::remove(rotated[i].path, error);
}

OutputResult OutputFile::reopen(Wait wait) {
  // Without a file, retry() opens the path anyway; a pipe is not opened again.
  if (fd_ < 0 || !regular_) return {};
  OutputResult result = flush(wait, false);  // nothing, while holding: it goes to the new file
  if (!close_descriptor()) result.failed = true;
  if (!open()) result += hold(errno, false);
  return result;
}

OutputResult OutputFile::close() {
  if (!enabled()) return {};
  OutputResult result;
  if (failed_) {  // one last try of what is held, in the flush below (no rotation)
    if (fd_ >= 0 || open()) {
      failed_ = false;
    } else {
      error_ = errno;
    }
  }
  // The drain always fsyncs: records count as written once that worked.
  if (!failed_) result += flush(Wait::may, true);
  if (failed_) result += give_up();
  failed_ = false;
  if (fd_ >= 0 && !close_descriptor()) result.failed = true;
  return result;
}

}  // namespace conveyor::log_ingest
