// send_load: the sample's lines over TCP or UDP, paced.
#include "load_generator.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/write.hpp>

#include "latency_probe.hpp"
#include "service_input.hpp"

namespace conveyor::log_ingest {

namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

// Now, as 2026-11-26T10:00:00.123Z.
std::string rfc3339_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  const std::size_t length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + length, sizeof text - length, ".%03dZ", static_cast<int>(millis));
  return text;
}

struct Target {
  bool udp = false;
  Endpoint endpoint;
  std::string file;  // file://PATH: lines appended to it (PATH-N.EXT for connection N of several)
};

Target parse_target(const std::string& to) {
  Target target;
  std::string rest;
  if (to.rfind("tcp://", 0) == 0) {
    rest = to.substr(6);
  } else if (to.rfind("udp://", 0) == 0) {
    target.udp = true;
    rest = to.substr(6);
  } else if (to.rfind("file://", 0) == 0 && to.size() > 7) {
    target.file = to.substr(7);
    return target;
  } else {
    throw std::invalid_argument("--to '" + to +
                                "' must be tcp://HOST:PORT, udp://HOST:PORT or file://PATH");
  }
  target.endpoint = parse_endpoint(rest);
  return target;
}

// The file connection `index` of `connections` appends to.
std::string file_of(const std::string& path, unsigned index, unsigned connections) {
  if (connections == 1) return path;
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.rfind('.');
  const std::size_t at =
      dot == std::string::npos || (slash != std::string::npos && dot < slash) ? path.size() : dot;
  return path.substr(0, at) + "-" + std::to_string(index) + path.substr(at);
}

// Appends to a file, as a program writing its log does.
class AppendFile {
 public:
  explicit AppendFile(const std::string& path)
      : fd_(path.empty() ? -1
                         : ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) {
    if (!path.empty() && fd_ < 0) {
      throw std::runtime_error("cannot open '" + path +
                               "': " + std::generic_category().message(errno));
    }
  }
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;
  ~AppendFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  void write(std::string_view text) {
    while (!text.empty()) {
      const ssize_t wrote = ::write(fd_, text.data(), text.size());
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote < 0)
        throw std::runtime_error(std::string("cannot append: ") +
                                 std::generic_category().message(errno));
      text.remove_prefix(static_cast<std::size_t>(wrote));
    }
  }

 private:
  int fd_;
};

// A file mapped into memory, read-only; empty when it is empty. Throws std::runtime_error.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      throw std::runtime_error("cannot open '" + path +
                               "': " + std::generic_category().message(errno));
    struct stat status {};
    if (::fstat(fd, &status) == 0 && status.st_size > 0) {
      size_ = static_cast<std::size_t>(status.st_size);
      data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    }
    const int error = errno;
    ::close(fd);
    if (data_ == MAP_FAILED) {
      throw std::runtime_error("cannot map '" + path +
                               "': " + std::generic_category().message(error));
    }
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  [[nodiscard]] std::string_view text() const noexcept {
    return data_ == nullptr ? std::string_view()
                            : std::string_view(static_cast<char*>(data_), size_);
  }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// `text` cut into `parts` shares of whole lines, about equal.
std::vector<std::string_view> shares_of(std::string_view text, unsigned parts) {
  std::vector<std::string_view> shares;
  for (unsigned part = parts; part > 0; --part) {
    std::size_t end = part == 1 ? text.size() : text.size() / part;
    if (end < text.size()) {
      const std::size_t lf = text.find('\n', end);
      end = lf == std::string_view::npos ? text.size() : lf + 1;
    }
    shares.push_back(text.substr(0, end));
    text.remove_prefix(end);
  }
  return shares;
}

// One connection's share: makes its lines (or takes them from `replay`) and sends them in
// batches, paced to `rate` (0: none).
class Sender {
 public:
  Sender(const LoadOptions& options, const Target& target, unsigned index, std::uint64_t lines,
         double rate, std::optional<std::string_view> replay)
      : options_(options),
        target_(target),
        index_(index),
        connections_(std::max(1U, options.connections)),
        lines_(replay ? UINT64_MAX : lines),
        rate_(rate),
        replay_(replay),
        generator_([&] {
          SampleOptions sample = options.sample;
          sample.lines = lines;
          sample.seed = options.sample.seed + index;
          sample.format = options.format == "json" ? SampleFormat::json : SampleFormat::combined;
          return sample;
        }()) {}

  // Bytes sent; throws boost::system::system_error.
  std::uint64_t run() {
    asio::io_context io;
    asio::ip::tcp::socket tcp(io);
    asio::ip::udp::socket udp(io);
    const bool to_file = !target_.file.empty();
    AppendFile file(to_file ? file_of(target_.file, index_, connections_) : std::string());
    if (target_.udp) {
      udp.open(target_.endpoint.address.is_v6() ? asio::ip::udp::v6() : asio::ip::udp::v4());
    } else if (!to_file) {
      tcp.connect({target_.endpoint.address, target_.endpoint.port});
      tcp.set_option(asio::ip::tcp::no_delay(true));
    }
    const asio::ip::udp::endpoint to(target_.endpoint.address, target_.endpoint.port);
    const bool syslog = options_.format == "syslog5424" && !replay_ && !to_file;
    const SyslogFrame frame = target_.udp               ? SyslogFrame::none
                              : options_.octet_counting ? SyslogFrame::octet_counted
                                                        : SyslogFrame::lf;
    // Lines sent as they are: replayed ones are framed as asked, generated ones end in LF.
    const SyslogFrame plain_frame = to_file                  ? SyslogFrame::lf
                                    : replay_ || target_.udp ? frame
                                                             : SyslogFrame::lf;
    // How long a paced sender waits once it sent what was due (load_generator.hpp).
    const auto pace = to_file ? std::chrono::microseconds(200) : std::chrono::microseconds(1000);
    const Clock::time_point start = Clock::now();
    std::string line;
    std::string batch;
    std::uint64_t sent = 0;
    std::uint64_t bytes = 0;
    while (sent < lines_) {
      std::uint64_t due = 512;
      if (rate_ > 0) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        const auto target = static_cast<std::uint64_t>(elapsed * rate_) + 1;
        if (target <= sent) {
          std::this_thread::sleep_for(pace);
          continue;
        }
        due = std::min<std::uint64_t>(target - sent, 512);
      }
      due = std::min(due, lines_ - sent);
      const std::string timestamp = syslog ? rfc3339_now() : std::string();
      batch.clear();
      std::uint64_t made = 0;
      for (; made < due; ++made) {
        std::string_view text;
        if (replay_) {
          if (!next_replayed(text)) break;
          if (probe_ && (sent + made) % options_.probe_every == 0) {
            line.assign(text);
            if (LatencyProbe::mark(line)) {
              ++marks_;
              text = line;
            }
          }
        } else {
          line.clear();
          if (!generator_.next(line)) break;
          line.pop_back();  // its LF
          if (probe_ && (sent + made) % options_.probe_every == 0 && LatencyProbe::mark(line)) {
            ++marks_;
          }
          text = line;
        }
        const std::size_t start_of_message = batch.size();
        if (syslog) {
          append_syslog5424(batch, text, sent + made, timestamp, frame);
        } else {
          append_framed(batch, text, plain_frame);
        }
        if (target_.udp) {
          udp.send_to(
              asio::buffer(batch.data() + start_of_message, batch.size() - start_of_message), to);
        }
      }
      if (to_file && !batch.empty()) {
        file.write(batch);
      } else if (!target_.udp && !batch.empty()) {
        asio::write(tcp, asio::buffer(batch));
      }
      bytes += batch.size();
      sent += made;
      if (made < due) break;  // the lines ran out
    }
    sent_ = sent;
    return bytes;
  }

  [[nodiscard]] std::uint64_t sent() const { return sent_; }

  [[nodiscard]] std::uint64_t marks() const { return marks_; }

 private:
  // The next non-empty line of the replayed share, without its LF; false at its end.
  bool next_replayed(std::string_view& text) {
    while (!replay_->empty()) {
      const std::size_t lf = replay_->find('\n');
      text = replay_->substr(0, lf);
      replay_->remove_prefix(lf == std::string_view::npos ? replay_->size() : lf + 1);
      if (!text.empty()) return true;
    }
    return false;
  }

  const LoadOptions& options_;
  Target target_;
  unsigned index_;
  unsigned connections_;
  std::uint64_t lines_;
  double rate_;
  std::optional<std::string_view> replay_;
  std::uint64_t sent_ = 0;
  bool probe_ = !options_.latency_file.empty() && options_.probe_every > 0;
  std::uint64_t marks_ = 0;
  SampleGenerator generator_;
};

}  // namespace

void append_framed(std::string& out, std::string_view message, SyslogFrame frame) {
  if (frame == SyslogFrame::octet_counted)
    out.append(std::to_string(message.size())).push_back(' ');
  out.append(message);
  if (frame == SyslogFrame::lf) out.push_back('\n');
}

void append_syslog5424(std::string& out, std::string_view line, std::uint64_t number,
                       std::string_view timestamp, SyslogFrame frame) {
  // local0 (16), informational (6): what nginx's `access_log syslog:` sends by default.
  char header[96];
  const int length = std::snprintf(header, sizeof header, "<134>1 %.*s web-%02u nginx %u - - ",
                                   static_cast<int>(timestamp.size()), timestamp.data(),
                                   static_cast<unsigned>(number * 2654435761U % 32),
                                   static_cast<unsigned>(1000 + number % 7));
  const std::size_t size = static_cast<std::size_t>(length) + line.size();
  if (frame == SyslogFrame::octet_counted) out.append(std::to_string(size)).push_back(' ');
  out.append(header, static_cast<std::size_t>(length)).append(line);
  if (frame == SyslogFrame::lf) out.push_back('\n');
}

int send_load(const LoadOptions& options) {
  Target target;
  try {
    target = parse_target(options.to);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "log-ingest: %s\n", error.what());
    return 2;
  }
  const unsigned connections = std::max(1U, options.connections);
  const std::uint64_t lines = options.sample.lines;
  std::optional<MappedFile> replayed;
  std::vector<std::string_view> shares;
  if (!options.from.empty()) {
    try {
      replayed.emplace(options.from);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "log-ingest: --from: %s\n", error.what());
      return 1;
    }
    shares = shares_of(replayed->text(), connections);
  }
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> messages{0};
  std::atomic<std::uint64_t> marks{0};
  std::atomic<bool> failed{false};
  std::optional<LatencyProbe> probe;
  if (!options.latency_file.empty()) {
    if (options.format == "json") {
      std::fprintf(stderr, "log-ingest: --latency needs --format syslog5424 or combined\n");
      return 2;
    }
    probe.emplace(options.latency_file);
  }
  const Clock::time_point start = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (unsigned c = 0; c < connections; ++c) {
      const std::uint64_t share = lines / connections + (c < lines % connections ? 1 : 0);
      threads.emplace_back([&, c, share] {
        try {
          Sender sender(options, target, c, share, options.rate / connections,
                        replayed ? std::optional<std::string_view>(shares[c]) : std::nullopt);
          bytes.fetch_add(sender.run(), std::memory_order_relaxed);
          messages.fetch_add(sender.sent(), std::memory_order_relaxed);
          marks.fetch_add(sender.marks(), std::memory_order_relaxed);
        } catch (const std::exception& error) {
          if (!failed.exchange(true, std::memory_order_relaxed)) {
            std::fprintf(stderr, "log-ingest: cannot send to %s: %s\n", options.to.c_str(),
                         error.what());
          }
        }
      });
    }
  }
  if (failed.load(std::memory_order_relaxed)) return 1;
  const std::uint64_t sent = messages.load(std::memory_order_relaxed);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::fprintf(stderr,
               "log-ingest: sent %llu messages (%.1f MB) to %s over %u connections in %.2f s: "
               "%.0f messages/s\n",
               static_cast<unsigned long long>(sent),
               static_cast<double>(bytes.load(std::memory_order_relaxed)) / 1e6, options.to.c_str(),
               connections, seconds, static_cast<double>(sent) / std::max(seconds, 1e-9));
  if (!probe) return 0;
  const std::uint64_t expected = marks.load(std::memory_order_relaxed);
  const LatencyReport report = probe->finish(expected, std::chrono::seconds(10));
  std::fprintf(stderr,
               "log-ingest: latency from send to %s: %llu of %llu marks, p50 %.2f ms, p99 %.2f ms, "
               "p99.9 %.2f ms, max %.2f ms\n",
               options.latency_file.c_str(), static_cast<unsigned long long>(report.micros.size()),
               static_cast<unsigned long long>(expected), report.quantile_ms(0.5),
               report.quantile_ms(0.99), report.quantile_ms(0.999), report.quantile_ms(1.0));
  return report.micros.size() == expected ? 0 : 1;
}

}  // namespace conveyor::log_ingest
