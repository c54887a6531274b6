// A child process for integration tests: started with posix_spawn, its stdout read line by line
// with a timeout, its stdin optionally a pipe the test writes to, stopped with a signal, and never
// left behind (the destructor kills and reaps it).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace conveyor::testing {

class ChildProcess {
 public:
  // Runs argv[0] (a path) with `argv`; its stderr goes to `stderr_path` when one is given, and
  // its stdin is a pipe that write_stdin() fills when `pipe_stdin` is set, or the file
  // `stdin_path` when one is given.
  explicit ChildProcess(const std::vector<std::string>& argv, const std::string& stderr_path = {},
                        bool pipe_stdin = false, const std::string& stdin_path = {}) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    int in[2] = {-1, -1};
    if (pipe_stdin && ::pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    if (pipe_stdin) posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    if (!stdin_path.empty()) {
      posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, stdin_path.c_str(), O_RDONLY, 0);
    }
    if (!stderr_path.empty()) {
      posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const std::string& arg : argv)
      args.push_back(const_cast<char*>(arg.c_str()));  // NOLINT: posix_spawn's signature
    args.push_back(nullptr);
    const int error = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    out_ = fds[0];
    // The read end stays open here too, so that stdin_unread() can tell what the child has read.
    stdin_reader_ = in[0];
    stdin_ = in[1];
    if (error != 0) {
      ::close(out_);
      close_stdin();
      throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(error));
    }
  }

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  ~ChildProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(out_);
    close_stdin();
  }

  // Writes all of `text` to the child's stdin pipe.
  void write_stdin(const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t wrote = ::write(stdin_, text.data() + done, text.size() - done);
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote < 0) throw std::runtime_error("cannot write to the child's stdin");
      done += static_cast<std::size_t>(wrote);
    }
  }

  // Bytes written to the child's stdin that it has not read yet.
  [[nodiscard]] int stdin_unread() const {
    int unread = 0;
    if (::ioctl(stdin_reader_, FIONREAD, &unread) != 0) return -1;
    return unread;
  }

  // Ends the child's stdin (it reads end of file once it has read what was written).
  void close_stdin() {
    if (stdin_ >= 0) ::close(stdin_);
    if (stdin_reader_ >= 0) ::close(stdin_reader_);
    stdin_ = stdin_reader_ = -1;
  }

  // The next line of its stdout, or nullopt at end of file or after `timeout`.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd ready{.fd = out_, .events = POLLIN, .revents = 0};
      if (::poll(&ready, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[4096];
      const ssize_t got = ::read(out_, chunk, sizeof chunk);
      if (got <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<std::size_t>(got));
    }
  }

  // Sends `signal` and waits up to `timeout` for the exit. Returns the exit status, or -1 when it
  // did not exit in time (then it is killed) or died of a signal.
  int stop(int signal, std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, signal);
    return wait(timeout);
  }

  // Sends `signal` and returns at once.
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }

  void send_signal(int signal) const {
    if (pid_ > 0) ::kill(pid_, signal);
  }

  // Waits up to `timeout` for the exit: its status, or -1 as stop() says.
  int wait(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return -1;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        pid_ = 0;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;  // the destructor kills it
  }

  // Whether it still runs.
  [[nodiscard]] bool running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) pid_ = 0;
    return pid_ > 0;
  }

 private:
  pid_t pid_ = 0;
  int out_ = -1;
  int stdin_ = -1;         // the write end of its stdin pipe
  int stdin_reader_ = -1;  // a copy of the read end
  std::string buffer_;
};

}  // namespace conveyor::testing
