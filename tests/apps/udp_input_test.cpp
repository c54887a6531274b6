// log-ingest serve's UDP input on an io_context that the test turns by hand: a queue of datagrams
// is read a few chunks at a time, so that a flood cannot keep the I/O thread from its other work,
// and every datagram is read all the same.
#include "udp_input.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include <boost/asio/io_context.hpp>

#include "ingress.hpp"
#include "serve_config.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::log_ingest::Ingress;
using conveyor::log_ingest::InputConfig;
using conveyor::log_ingest::InputCounters;
using conveyor::log_ingest::InputType;
using conveyor::log_ingest::LimitsConfig;
using conveyor::log_ingest::UdpInput;
using namespace std::chrono_literals;

constexpr int datagrams = 200;
constexpr std::size_t datagram_bytes = 8000;  // 1.6 MB in all: 7 chunks

// Whether the input's socket can hold them all: its 8 MiB receive buffer needs root
// (SO_RCVBUFFORCE) or net.core.rmem_max.
bool kernel_holds_them() {
  std::ifstream rmem_max("/proc/sys/net/core/rmem_max");
  std::uint64_t most = 0;
  rmem_max >> most;
  return ::geteuid() == 0 || most >= (std::uint64_t{4} << 20);
}

// Sends the datagrams before the io_context runs: the kernel holds them all, as it holds what a
// flood sends faster than the input reads.
void send_all(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string message = "<13>Jun  1 00:00:00 host app: " + std::string(datagram_bytes, 'x');
  for (int i = 0; i < datagrams; ++i) {
    ASSERT_EQ(::sendto(fd, message.data(), message.size(), 0, reinterpret_cast<sockaddr*>(&to),
                       sizeof to),
              static_cast<ssize_t>(message.size()));
  }
  ::close(fd);
}

InputConfig udp_config() {
  InputConfig config;
  config.name = "udp";
  config.type = InputType::syslog_udp;
  config.listen = "127.0.0.1:0";
  return config;
}

std::uint16_t port_of(const UdpInput& input) {
  const std::string where = input.where();
  return static_cast<std::uint16_t>(std::stoi(where.substr(where.rfind(':') + 1)));
}

// An input on an io_context that is not running yet, with the datagrams queued to it.
struct UdpFixture {
  UdpFixture() { send_all(port_of(input)); }
  [[nodiscard]] std::uint64_t received() const { return InputCounters::read(counters.received); }

  boost::asio::io_context io;
  Ingress ingress{1024};
  InputCounters counters{"udp"};
  UdpInput input{io, udp_config(), LimitsConfig{}, ingress, counters};
};

// One turn of the I/O thread reads a few chunks of a long queue, not all of it, and gives the
// thread back; later turns read the rest without a datagram more to wake the input.
TEST(UdpInput, AQueueOfDatagramsLeavesTheIoThreadToItsOtherWork) {
  if (!kernel_holds_them()) GTEST_SKIP() << "needs root or net.core.rmem_max >= 4 MiB";
  conveyor::testing::Watchdog watchdog(60s);
  UdpFixture queued;
  queued.input.start();
  ASSERT_EQ(queued.io.run_one(), 1U);  // the input's first turn: nothing else is queued
  const std::uint64_t first_turn = queued.received();
  EXPECT_GT(first_turn, 0U);
  EXPECT_LT(first_turn, static_cast<std::uint64_t>(datagrams)) << "one turn read them all";
  for (int i = 0; i < 300 && queued.received() < datagrams; ++i)
    (void)queued.io.run_one_for(100ms);
  EXPECT_EQ(queued.received(), static_cast<std::uint64_t>(datagrams));
}

// Empty datagrams fill no chunk by their bytes: a turn still ends after a bounded number of them.
TEST(UdpInput, AQueueOfEmptyDatagramsLeavesTheIoThreadToo) {
  if (!kernel_holds_them()) GTEST_SKIP() << "needs root or net.core.rmem_max >= 4 MiB";
  conveyor::testing::Watchdog watchdog(60s);
  boost::asio::io_context io;
  Ingress ingress{1024};
  InputCounters counters{"udp"};
  UdpInput input{io, udp_config(), LimitsConfig{}, ingress, counters};
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port_of(input));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  constexpr int empty = 6000;
  for (int i = 0; i < empty; ++i)
    ASSERT_EQ(::sendto(fd, "", 0, 0, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  ::close(fd);
  input.start();
  ASSERT_EQ(io.run_one(), 1U);
  // Six thousand datagrams, at most four chunks of 1,024 a turn: more turns are queued.
  EXPECT_EQ(io.poll_one(), 1U) << "one turn read every datagram";
}

// The drain reads what was queued when it began, then closes.
TEST(UdpInput, StopAcceptingReadsWhatIsQueuedThenCloses) {
  if (!kernel_holds_them()) GTEST_SKIP() << "needs root or net.core.rmem_max >= 4 MiB";
  conveyor::testing::Watchdog watchdog(60s);
  UdpFixture queued;
  queued.input.stop_accepting();
  EXPECT_TRUE(queued.input.finished());
  EXPECT_EQ(queued.received(), static_cast<std::uint64_t>(datagrams));
}

}  // namespace
