// What the tests of `log-ingest serve` share: a service started on ports the kernel picks, with
// its outputs in a directory of its own; TCP clients and UDP datagrams on 127.0.0.1; the accounting
// line read back from the service's log. Loops are bounded.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "child_process.hpp"

#ifdef CONVEYOR_HAS_PROMETHEUS
#include "http_get.hpp"
#endif

namespace conveyor::testing::serve {

namespace fs = std::filesystem;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace): test helpers

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline std::vector<std::string> lines_of(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

// `prefix` followed by the numbers, dash-separated (GCC 12 warns, wrongly, on "x" + to_string(n)).
inline std::string name(std::string prefix, int number, int second = -1) {
  prefix.append(std::to_string(number));
  if (second >= 0) prefix.append("-").append(std::to_string(second));
  return prefix;
}

// An RFC 5424 message whose text is `text`.
inline std::string syslog_message(const std::string& text) {
  return "<34>1 2024-10-11T22:14:15.003Z web-1 app 42 - - " + text;
}

// The "message" field of a record line.
inline std::string message_of(const std::string& record) {
  static const std::string key = "\"message\":\"";
  const std::size_t start = record.find(key);
  if (start == std::string::npos) return {};
  const std::size_t from = start + key.size();
  return record.substr(from, record.find('"', from) - from);
}

// A connected TCP client on 127.0.0.1; from the loopback address `from` when given (any of
// 127.0.0.0/8 is this host's, so a test can play several clients).
class Client {
 public:
  explicit Client(std::uint16_t port, const char* from = nullptr)
      : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (fd_ < 0) throw std::runtime_error("socket failed");
    if (from != nullptr) {
      sockaddr_in source{};
      source.sin_family = AF_INET;
      const bool bound =
          ::inet_pton(AF_INET, from, &source.sin_addr) == 1 &&
          // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
          ::bind(fd_, reinterpret_cast<const sockaddr*>(&source), sizeof source) == 0;
      if (!bound) {
        ::close(fd_);
        throw std::runtime_error(std::string("cannot bind to ") + from);
      }
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd_);
      throw std::runtime_error("cannot connect to port " + std::to_string(port));
    }
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client() { close(); }

  // False once the peer has closed.
  bool send(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t sent = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (sent < 0 && errno == EINTR) continue;
      if (sent <= 0) return false;
      done += static_cast<std::size_t>(sent);
    }
    return true;
  }

  // Whether the server closes the connection within `timeout`.
  bool closed_within(std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd ready{.fd = fd_, .events = POLLIN, .revents = 0};
      if (::poll(&ready, 1, 50) <= 0) continue;
      char byte = 0;
      const ssize_t got = ::recv(fd_, &byte, 1, 0);
      if (got <= 0) return true;
    }
    return false;
  }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

inline void send_datagram(int fd, std::uint16_t port, const std::string& message) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  (void)::sendto(fd, message.data(), message.size(), 0, reinterpret_cast<sockaddr*>(&address),
                 sizeof address);
}

// The accounting line's numbers: received, written, rejected, filtered, dropped, lost.
inline std::map<std::string, std::uint64_t> accounting(const std::string& log,
                                                       const std::string& how) {
  std::map<std::string, std::uint64_t> numbers;
  std::string prefix = "log-ingest: ";
  prefix.append(how).append(": ");
  const std::size_t line = log.find(prefix);
  if (line == std::string::npos) return numbers;
  const std::string text = log.substr(line, log.find('\n', line) - line);
  static const std::regex pair(R"(([a-z_]+)=([0-9]+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pair); it != std::sregex_iterator();
       ++it) {
    numbers[(*it)[1]] = std::stoull((*it)[2]);
  }
  return numbers;
}

// CPU seconds a process has used, from /proc.
inline double cpu_seconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i)
    if (i >= 14) ticks += std::stod(field);  // utime, stime
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

inline constexpr const char* default_inputs =
    "  - {name: syslog_tcp, type: syslog_tcp, listen: \"127.0.0.1:0\"}\n"
    "  - {name: syslog_udp, type: syslog_udp, listen: \"127.0.0.1:0\"}\n";

// How a test's service is configured, beyond what every test's has.
struct ServiceSetup {
  std::string service_yaml{};                    // lines under `service:`
  std::string inputs_yaml = default_inputs;      // the list under `inputs:`
  std::string outputs_yaml{};                    // lines under `outputs:`, after the two files
  std::string pipeline_yaml = "  workers: 2\n";  // lines under `pipeline:`
  bool pipe_stdin = false;   // the service's stdin is a pipe (ChildProcess::write_stdin)
  std::string stdin_file{};  // or this file in the service's directory (`prepare` makes it)
  std::function<void(const fs::path& dir)> prepare{};  // runs before the service starts
  std::vector<std::string> launcher{};  // runs the service, its arguments first (a path)
};

// `log-ingest serve` with its outputs in a directory of its own and every port picked by the
// kernel (0), read back from its log.
class Service {
 public:
  Service(const std::string& test, const std::string& service_yaml,
          const std::string& inputs_yaml = default_inputs, bool pipe_stdin = false)
      : Service(test, ServiceSetup{.service_yaml = service_yaml,
                                   .inputs_yaml = inputs_yaml,
                                   .pipe_stdin = pipe_stdin}) {}

  Service(const std::string& test, const ServiceSetup& setup)
      : dir_(fs::temp_directory_path() /
             ("conveyor-serve-" + test + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    if (setup.prepare) setup.prepare(dir_);
    std::ofstream(dir_ / "serve.yaml")
        << "inputs:\n"
        << setup.inputs_yaml << "outputs:\n  records: " << (dir_ / "records.jsonl").string()
        << "\n  dead_letters: " << (dir_ / "dead.jsonl").string() << "\n"
        << setup.outputs_yaml << "pipeline:\n"
        << setup.pipeline_yaml << "service:\n  metrics_listen: 127.0.0.1:0\n"
        << setup.service_yaml;
    std::vector<std::string> command = setup.launcher;
    for (std::string argument : {std::string(CONVEYOR_LOG_INGEST), std::string("serve"),
                                 std::string("--config"), (dir_ / "serve.yaml").string()})
      command.push_back(std::move(argument));
    child_ = std::make_unique<conveyor::testing::ChildProcess>(
        command, (dir_ / "stderr.txt").string(), setup.pipe_stdin,
        setup.stdin_file.empty() ? std::string() : (dir_ / setup.stdin_file).string());
    for (int i = 0; i < 1000 && log().find("serving;") == std::string::npos; ++i) {
      if (!child_->running()) break;
      std::this_thread::sleep_for(10ms);
    }
    if (log().find("serving;") == std::string::npos) {
      throw std::runtime_error("serve did not start:\n" + log());
    }
    static const std::regex listening(
        R"(input '([a-z_]+)' \([a-z_]+\) on [a-z]+://[0-9.]+:([0-9]+))");
    static const std::regex metrics(R"(metrics on http://[0-9.]+:([0-9]+)/)");
    const std::string text = log();
    for (auto it = std::sregex_iterator(text.begin(), text.end(), listening);
         it != std::sregex_iterator(); ++it) {
      ports_[(*it)[1]] = static_cast<std::uint16_t>(std::stoi((*it)[2]));
    }
    std::smatch match;
    if (std::regex_search(text, match, metrics)) {
      ports_["metrics"] = static_cast<std::uint16_t>(std::stoi(match[1]));
    }
  }

  // The service is killed first; its directory goes with it unless the test has failed, when it
  // stays for whoever reads the failure (its log is stderr.txt).
  ~Service() {
    child_.reset();
    if (!::testing::Test::HasFailure()) {
      std::error_code ignored;
      fs::remove_all(dir_, ignored);
    }
  }
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;
  Service(Service&&) = delete;
  Service& operator=(Service&&) = delete;

  [[nodiscard]] std::uint16_t port(const std::string& input) const { return ports_.at(input); }
  [[nodiscard]] std::string log() const { return read_file(dir_ / "stderr.txt"); }
  [[nodiscard]] const fs::path& dir() const { return dir_; }
  [[nodiscard]] fs::path records() const { return dir_ / "records.jsonl"; }
  [[nodiscard]] fs::path dead_letters() const { return dir_ / "dead.jsonl"; }
  conveyor::testing::ChildProcess& child() { return *child_; }

  // Replaces `from` by `to` in the service's configuration file and sends it SIGHUP; false, and no
  // signal, if the file does not hold `from`.
  [[nodiscard]] bool reload_replacing(const std::string& from, const std::string& to) {
    const fs::path file = dir_ / "serve.yaml";
    std::string yaml = read_file(file);
    const std::size_t at = yaml.find(from);
    if (at == std::string::npos) return false;
    yaml.replace(at, from.size(), to);
    std::ofstream(file) << yaml;
    child_->send_signal(SIGHUP);
    return true;
  }

#ifdef CONVEYOR_HAS_PROMETHEUS
  // The value of one sample on /metrics, e.g. `log_ingest_connections{input="syslog_tcp"}`.
  std::optional<double> metric(const std::string& sample) const {
    const conveyor::testing::HttpResponse response =
        conveyor::testing::http_get(ports_.at("metrics"), "/metrics");
    std::string line(1, '\n');
    line.append(sample).append(" ");
    const std::size_t at = response.body.find(line);
    if (at == std::string::npos) return std::nullopt;
    return std::stod(response.body.substr(at + sample.size() + 2));
  }
  int readyz() const {
    return conveyor::testing::http_get(ports_.at("metrics"), "/readyz").status;
  }
#endif

  // Polls `condition` every 20 ms for up to `timeout`.
  template <class Condition>
  static bool eventually(Condition condition, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (condition()) return true;
      std::this_thread::sleep_for(20ms);
    }
    return condition();
  }

 private:
  fs::path dir_;
  std::unique_ptr<conveyor::testing::ChildProcess> child_;
  std::map<std::string, std::uint16_t> ports_;
};

}  // namespace conveyor::testing::serve
