// LatencyProbe: marks in the sent lines, found again in the output file.
#include "latency_probe.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

namespace conveyor::log_ingest {

namespace {

constexpr std::string_view kMark = "latency-probe-";

// The file open at its end, or -1 when it is not there.
int open_at_end(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) ::lseek(fd, 0, SEEK_END);
  return fd;
}

}  // namespace

std::uint64_t steady_micros() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

double LatencyReport::quantile_ms(double q) const {
  if (micros.empty()) return 0;
  const auto last = static_cast<double>(micros.size() - 1);
  const auto index = static_cast<std::size_t>(std::llround(std::clamp(q, 0.0, 1.0) * last));
  return micros[index] / 1000.0;
}

LatencyProbe::LatencyProbe(std::string file)
    : file_(std::move(file)),
      start_us_(steady_micros()),
      // Opened here rather than on the thread, so that nothing sent meanwhile is skipped.
      fd_(open_at_end(file_)),
      thread_([this] { follow(); }) {}

LatencyProbe::~LatencyProbe() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

bool LatencyProbe::mark(std::string& line) {
  // Only a whole access-log line, which ends in its user agent's closing quote: one that would
  // be dead-lettered never reaches the records, and its mark would go missing.
  if (line.empty() || line.back() != '"') return false;
  // `… "GET /path HTTP/1.1" …`: the path is between the first space after the first quote and the
  // next space.
  const std::size_t quote = line.find('"');
  if (quote == std::string::npos) return false;
  const std::size_t begin = line.find(' ', quote);
  if (begin == std::string::npos) return false;
  const std::size_t end = line.find(' ', begin + 1);
  if (end == std::string::npos) return false;
  std::string path = "/";
  path.append(kMark);
  path.append(std::to_string(steady_micros()));
  line.replace(begin + 1, end - begin - 1, path);
  return true;
}

void LatencyProbe::scan(std::string_view text) {
  const std::uint64_t now = steady_micros();
  for (std::size_t at = text.find(kMark); at != std::string_view::npos;
       at = text.find(kMark, at + kMark.size())) {
    const char* digits = text.data() + at + kMark.size();
    std::uint64_t stamp = 0;
    const auto [end, error] = std::from_chars(digits, text.data() + text.size(), stamp);
    if (error != std::errc() || end == digits || stamp < start_us_ || stamp > now) continue;
    micros_.push_back(static_cast<std::uint32_t>(std::min<std::uint64_t>(now - stamp, UINT32_MAX)));
  }
  seen_.store(micros_.size(), std::memory_order_release);
}

void LatencyProbe::follow() {
  std::string carry;
  bool rotated = false;
  std::string buffer(1U << 20U, '\0');
  while (!stop_.load(std::memory_order_relaxed)) {
    if (fd_ < 0) {  // not there yet: read from its beginning once it is
      fd_ = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
    }
    const ssize_t got = ::read(fd_, buffer.data(), buffer.size());
    if (got <= 0) {
      if (seen_.load(std::memory_order_relaxed) >= expected_.load(std::memory_order_relaxed)) {
        break;
      }
      if (rotated) {  // the old file read to its end once the path named the new one
        ::close(fd_);
        fd_ = -1;
        carry.clear();
        rotated = false;
        continue;
      }
      // The output rotated (its path names another file): read the rest of this one, then go on
      // in the new one from its beginning.
      struct stat by_path {};
      struct stat open_file {};
      rotated = ::stat(file_.c_str(), &by_path) == 0 && ::fstat(fd_, &open_file) == 0 &&
                (by_path.st_ino != open_file.st_ino || by_path.st_dev != open_file.st_dev);
      if (!rotated) std::this_thread::sleep_for(std::chrono::microseconds(500));
      continue;
    }
    // Whole lines only, so that a mark is never cut in two.
    const std::string_view chunk(buffer.data(), static_cast<std::size_t>(got));
    const std::size_t last_newline = chunk.rfind('\n');
    if (last_newline == std::string_view::npos) {
      carry.append(chunk);
      continue;
    }
    if (carry.empty()) {
      scan(chunk.substr(0, last_newline + 1));
    } else {
      carry.append(chunk.substr(0, last_newline + 1));
      scan(carry);
      carry.clear();
    }
    carry.append(chunk.substr(last_newline + 1));
  }
}

LatencyReport LatencyProbe::finish(std::uint64_t expected, std::chrono::milliseconds wait) {
  expected_.store(expected, std::memory_order_relaxed);
  std::uint64_t seen = seen_.load(std::memory_order_acquire);
  auto last_news = std::chrono::steady_clock::now();
  while (seen < expected && std::chrono::steady_clock::now() - last_news < wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::uint64_t now_seen = seen_.load(std::memory_order_acquire);
    if (now_seen != seen) last_news = std::chrono::steady_clock::now();
    seen = now_seen;
  }
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
  LatencyReport report;
  report.micros = std::move(micros_);
  std::sort(report.micros.begin(), report.micros.end());
  return report;
}

}  // namespace conveyor::log_ingest
