// `log-ingest serve` as operators run it, over real sockets on 127.0.0.1: systemd readiness on a
// notify socket. Loops are bounded; a watchdog ends a hang.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "serve_harness.hpp"
#include "watchdog.hpp"

namespace {

using namespace conveyor::testing::serve;  // NOLINT(google-build-using-namespace)
namespace fs = std::filesystem;
using namespace std::chrono_literals;

#ifdef CONVEYOR_HAS_SYSTEMD
// A socket that stands in for systemd's: what the service sends to $NOTIFY_SOCKET.
class NotifySocket {
 public:
  explicit NotifySocket(const fs::path& path)
      : fd_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      throw std::runtime_error("cannot bind " + path.string());
    }
  }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;
  ~NotifySocket() { ::close(fd_); }

  // The next datagram, or "" after `timeout`.
  [[nodiscard]] std::string next(std::chrono::milliseconds timeout = 10s) const {
    pollfd ready{.fd = fd_, .events = POLLIN, .revents = 0};
    if (::poll(&ready, 1, static_cast<int>(timeout.count())) <= 0) return {};
    std::string message(4096, '\0');
    const ssize_t got = ::recv(fd_, message.data(), message.size(), 0);
    message.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    return message;
  }

 private:
  int fd_;
};

// READY=1 once the listeners are bound, RELOADING=1 and READY=1 again around SIGHUP, and
// STOPPING=1 when SIGTERM starts the drain.
TEST(LogIngestServeOps, TellsSystemdWhenReadyReloadingAndStopping) {
  conveyor::testing::Watchdog watchdog(60s);
  std::unique_ptr<NotifySocket> notify;
  Service service("notify", ServiceSetup{.prepare = [&](const fs::path& dir) {
                    notify = std::make_unique<NotifySocket>(dir / "notify.sock");
                    ::setenv("NOTIFY_SOCKET", (dir / "notify.sock").c_str(), 1);
                  }});
  ::unsetenv("NOTIFY_SOCKET");
  const std::string ready = notify->next();
  EXPECT_NE(ready.find("READY=1"), std::string::npos) << ready;
  EXPECT_NE(ready.find("STATUS=serving 2 inputs"), std::string::npos) << ready;
  service.child().send_signal(SIGHUP);
  EXPECT_EQ(notify->next(), "RELOADING=1");
  EXPECT_NE(notify->next().find("READY=1"), std::string::npos);
  service.child().send_signal(SIGTERM);
  EXPECT_NE(notify->next().find("STOPPING=1"), std::string::npos);
  EXPECT_EQ(service.child().wait(30s), 0) << service.log();
}
#endif

}  // namespace
