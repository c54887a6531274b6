// `log-ingest serve` end to end, over real sockets on 127.0.0.1: many TCP clients with both
// framings, the limits (connections, frame size, idle clients, bad octet counts), UDP, the drain
// on SIGTERM with /readyz, the drain timeout, and a second signal. Every test counts every message
// and checks the accounting line the service logs. Loops are bounded; a watchdog ends a hang.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "serve_harness.hpp"
#include "watchdog.hpp"

namespace {

using namespace conveyor::testing::serve;  // NOLINT(google-build-using-namespace)
namespace fs = std::filesystem;
using namespace std::chrono_literals;

#ifdef CONVEYOR_SANITIZED
constexpr int many_clients = 20;
constexpr int messages_each = 1000;
#else
constexpr int many_clients = 100;
constexpr int messages_each = 10'000;
#endif

// Every message of every client, octet-counted and LF-terminated frames mixed on each
// connection, is written exactly once, and the accounting adds up.
TEST(LogIngestServe, ManyTcpClientsEveryMessageWrittenOnce) {
  conveyor::testing::Watchdog watchdog(300s);
  Service service("many", "");
  const std::uint16_t port = service.port("syslog_tcp");
  std::vector<std::thread> clients;
  clients.reserve(many_clients);
  std::atomic<int> failures{0};
  for (int c = 0; c < many_clients; ++c) {
    clients.emplace_back([&, c] {
      Client client(port);
      std::string batch;
      for (int i = 0; i < messages_each; ++i) {
        const std::string message = syslog_message(name("m", c, i));
        if (i % 2 == 0) {
          batch += std::to_string(message.size()) + " " + message;
        } else {
          batch += message + "\n";
        }
        if (batch.size() > 16384 || i + 1 == messages_each) {
          if (!client.send(batch)) failures.fetch_add(1, std::memory_order_relaxed);
          batch.clear();
        }
      }
    });
  }
  for (std::thread& client : clients)
    client.join();
  ASSERT_EQ(failures.load(), 0);
  ASSERT_EQ(service.child().stop(SIGTERM, 120s), 0) << service.log();

  const std::uint64_t total = std::uint64_t{many_clients} * messages_each;
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), total) << service.log();
  EXPECT_EQ(counts.at("written"), total);
  EXPECT_EQ(counts.at("lost"), 0U);
  std::set<std::string> seen;
  for (const std::string& line : lines_of(service.records())) {
    ASSERT_TRUE(seen.insert(message_of(line)).second) << "written twice: " << line;
  }
  ASSERT_EQ(seen.size(), total);
  for (int c = 0; c < many_clients; c += 7) {
    EXPECT_EQ(seen.count(name("m", c, messages_each - 1)), 1U);
  }
}

// The limits: connections over max_connections are closed at once, an oversized frame is
// dead-lettered and the next one parsed, a bad octet count closes its connection, and a client
// that goes quiet is disconnected. The good messages around them are all written.
TEST(LogIngestServe, LimitsHoldAndGoodMessagesSurvive) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("limits",
                  "  limits: {max_connections: 3, max_frame_bytes: 1KiB, idle_timeout: 300ms}\n");
  const std::uint16_t port = service.port("syslog_tcp");
  int good = 0;
  {
    std::vector<std::unique_ptr<Client>> held;
    for (int i = 0; i < 3; ++i) {
      held.push_back(std::make_unique<Client>(port));
      ASSERT_TRUE(held.back()->send(syslog_message(name("held-", i)) + "\n"));
      ++good;
    }
    Client extra(port);
    EXPECT_TRUE(extra.closed_within(5s)) << "the connection over the limit stayed open";
    for (auto& client : held) {
      EXPECT_FALSE(client->closed_within(50ms));
      EXPECT_TRUE(client->send(syslog_message(name("still-", good)) + "\n"));
      ++good;
    }
  }
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_EQ(
      service.metric(
          "log_ingest_connections_rejected_total{input=\"syslog_tcp\",reason=\"max_connections\"}"),
      1.0);
  ASSERT_TRUE(Service::eventually(
      [&] { return service.metric("log_ingest_connections{input=\"syslog_tcp\"}") == 0.0; }));
#else
  std::this_thread::sleep_for(500ms);
#endif
  {
    // Oversized, LF-terminated and octet-counted, each followed by a good frame; between them,
    // frames blank but for a carriage return, which count nowhere.
    Client client(port);
    const std::string big(2000, 'x');
    std::string bytes = syslog_message(big) + "\n" + syslog_message("after-lf") + "\n";
    bytes += "\r\r\n \r\n1 \r";
    const std::string counted = syslog_message(big);
    bytes += std::to_string(counted.size()) + " " + counted;
    const std::string after = syslog_message("after-counted");
    bytes += std::to_string(after.size()) + " " + after;
    ASSERT_TRUE(client.send(bytes));
    good += 2;
    // A bad octet count (eleven digits) ends the connection.
    ASSERT_TRUE(client.send("12345678901 x"));
    EXPECT_TRUE(client.closed_within(5s));
  }
  {
    // Slowloris: a message without its end, then nothing. Cut off, it is dead-lettered, not
    // written as if it were whole (it parses).
    Client client(port);
    ASSERT_TRUE(client.send(syslog_message("cut-he")));
    EXPECT_TRUE(client.closed_within(10s)) << "an idle client was not disconnected";
  }
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("written"), static_cast<std::uint64_t>(good)) << service.log();
  // Two oversized frames and the slowloris's cut-off frame.
  EXPECT_EQ(counts.at("rejected"), 3U) << service.log();
  EXPECT_EQ(counts.at("received"), counts.at("written") + counts.at("rejected"));
  std::set<std::string> messages;
  for (const std::string& line : lines_of(service.records()))
    messages.insert(message_of(line));
  EXPECT_EQ(messages.count("after-lf"), 1U);
  EXPECT_EQ(messages.count("after-counted"), 1U);
  EXPECT_EQ(messages.count("cut-he"), 0U);
  const std::string dead = read_file(service.dead_letters());
  EXPECT_NE(dead.find("too long"), std::string::npos) << dead;
  EXPECT_NE(dead.find("interrupted before the end of the line"), std::string::npos) << dead;
  EXPECT_NE(dead.find("cut-he"), std::string::npos) << dead;
}

// UDP: one message per datagram; everything sent is received, written or counted as dropped.
TEST(LogIngestServe, UdpDatagramsAreAllAccountedFor) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("udp", "");
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  constexpr int sent = 2000;
  for (int i = 0; i < sent; ++i) {
    send_datagram(fd, service.port("syslog_udp"), syslog_message(name("u", i)));
    // Paced, so that the kernel's socket buffer never overflows: its drops nobody can count.
    if (i % 50 == 49) std::this_thread::sleep_for(2ms);
  }
  ::close(fd);
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_TRUE(Service::eventually([&] {
    return service.metric("log_ingest_received_total{input=\"syslog_udp\"}") == double{sent};
  }));
#else
  std::this_thread::sleep_for(1s);
#endif
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), static_cast<std::uint64_t>(sent)) << service.log();
  EXPECT_EQ(counts.at("written") + counts.at("dropped"), static_cast<std::uint64_t>(sent));
  EXPECT_EQ(lines_of(service.records()).size(), counts.at("written"));
}

// Out of file descriptors (its limit lowered to what it holds and four more), the service does not
// retry the failing accept at once, which would spin: it waits, using next to no CPU, while the
// clients wait in the backlog; once it may open descriptors again, every message is written.
TEST(LogIngestServe, OutOfDescriptorsItWaitsRatherThanSpins) {
#ifdef CONVEYOR_SANITIZED
  // The sanitizers' runtimes open files of their own as the service runs (UBSan's type checks
  // read /proc/self/maps), and report an error when they cannot.
  GTEST_SKIP() << "runs in the optimised build";
#endif
  conveyor::testing::Watchdog watchdog(120s);
  Service service("descriptors", "");
  const std::uint16_t port = service.port("syslog_tcp");
  const pid_t pid = service.child().pid();
  std::size_t held = 0;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    (void)entry;
    ++held;
  }
  rlimit before{};
  ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, nullptr, &before), 0);
  const rlimit lowered{.rlim_cur = held + 4, .rlim_max = before.rlim_max};
  ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, &lowered, nullptr), 0);
  constexpr int clients_count = 20;
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < clients_count; ++c) {
    clients.push_back(std::make_unique<Client>(port));
    ASSERT_TRUE(clients.back()->send(syslog_message(name("fd-", c)) + "\n"));
  }
  std::this_thread::sleep_for(300ms);
  const double start = cpu_seconds(pid);
  std::this_thread::sleep_for(1s);
  // Retrying at once keeps a core busy (2 CPU seconds a second, both I/O threads, before).
  EXPECT_LT(cpu_seconds(pid) - start, 0.5) << "the service spins on the failing accept";
  ASSERT_EQ(::prlimit(pid, RLIMIT_NOFILE, &before, nullptr), 0);
  std::this_thread::sleep_for(500ms);  // it accepts the clients in the backlog
  clients.clear();
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), std::uint64_t{clients_count}) << service.log();
  EXPECT_EQ(counts.at("written"), std::uint64_t{clients_count});
}

// Under a hard limit of 512 descriptors, the default inputs (1,024 TCP connections) may hold more
// than the process may open: serve says so when it starts. With 100 connections it does not.
TEST(LogIngestServe, WarnsWhenTheInputsMayHoldMoreDescriptorsThanItMayOpen) {
  conveyor::testing::Watchdog watchdog(60s);
  const std::vector<std::string> low_limit{"/usr/bin/prlimit", "--nofile=512:512"};
  {
    Service service("descriptor-budget", ServiceSetup{.launcher = low_limit});
    EXPECT_NE(service.log().find("warning: the inputs may hold 1088 file descriptors"),
              std::string::npos)
        << service.log();
    EXPECT_NE(service.log().find("the process may open 512"), std::string::npos);
    ASSERT_EQ(service.child().stop(SIGTERM, 30s), 0) << service.log();
  }
  Service service(
      "descriptor-budget-fits",
      ServiceSetup{.service_yaml = "  limits: {max_connections: 100}\n", .launcher = low_limit});
  EXPECT_EQ(service.log().find("file descriptors"), std::string::npos) << service.log();
  ASSERT_EQ(service.child().stop(SIGTERM, 30s), 0) << service.log();
}

// SIGTERM drains: no new connections, /readyz 503, but a connected client's messages, even those
// sent after the signal, are all written before the process exits 0 once the client closes.
TEST(LogIngestServe, SigtermDrainsConnectedClients) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("drain", "");
  const std::uint16_t port = service.port("syslog_tcp");
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_EQ(service.readyz(), 200);
#endif
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < 50; ++c) {
    clients.push_back(std::make_unique<Client>(port));
    ASSERT_TRUE(clients.back()->send(syslog_message(name("before-", c)) + "\n"));
  }
  service.child().send_signal(SIGTERM);
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_TRUE(Service::eventually([&] { return service.readyz() == 503; }));
#else
  std::this_thread::sleep_for(300ms);
#endif
  EXPECT_TRUE(service.child().running()) << "exited while clients were still connected";
  for (int c = 0; c < 50; ++c) {
    ASSERT_TRUE(clients[c]->send(syslog_message(name("after-", c)) + "\n"));
  }
  clients.clear();
  ASSERT_EQ(service.child().wait(60s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), 100U) << service.log();
  EXPECT_EQ(counts.at("written"), 100U);
  EXPECT_EQ(counts.at("lost"), 0U);
  EXPECT_EQ(lines_of(service.records()).size(), 100U);
}

// A client that never closes is cut off at drain_timeout; what it sent is still written.
TEST(LogIngestServe, DrainTimeoutEndsAClientThatStays) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("timeout", "  drain_timeout: 300ms\n");
  Client client(service.port("syslog_tcp"));
  ASSERT_TRUE(client.send(syslog_message("kept") + "\n"));
  std::this_thread::sleep_for(100ms);
  ASSERT_EQ(service.child().stop(SIGTERM, 30s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("written"), 1U) << service.log();
}

// A second signal during the drain exits 1 at once, with the accounting line.
TEST(LogIngestServe, SecondSignalExitsAtOnce) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("second", "");
  Client client(service.port("syslog_tcp"));
  ASSERT_TRUE(client.send(syslog_message("one") + "\n"));
  service.child().send_signal(SIGTERM);
  ASSERT_TRUE(
      Service::eventually([&] { return service.log().find("draining") != std::string::npos; }));
  ASSERT_EQ(service.child().stop(SIGTERM, 30s), 1) << service.log();
  EXPECT_FALSE(accounting(service.log(), "stopped before the drain ended").empty())
      << service.log();
}

// Plain lines over TCP, in the format the input names.
TEST(LogIngestServe, PlainLinesOverTcp) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("lines", "",
                  "  - {name: access, type: tcp, listen: \"127.0.0.1:0\", format: combined}\n");
  {
    Client client(service.port("access"));
    std::string text;
    for (int i = 0; i < 100; ++i) {
      text += "10.0.0." + std::to_string(i) +
              " - - [10/Oct/2024:13:55:36 +0000] \"GET /a HTTP/1.1\" 200 5 \"-\" \"curl\"\n";
    }
    ASSERT_TRUE(client.send(text + "not a log line\n"));
  }
  ASSERT_EQ(service.child().stop(SIGTERM, 30s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("written"), 100U) << service.log();
  EXPECT_EQ(counts.at("rejected"), 1U);
}

}  // namespace

namespace {

// `validate` exits 1 with the file, line and column of the mistake, and 0 for a good file.
TEST(LogIngestValidate, SaysWhereTheMistakeIs) {
  conveyor::testing::Watchdog watchdog(60s);
  const fs::path dir =
      fs::temp_directory_path() / ("conveyor-validate-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "bad.yaml") << "service:\n  limits:\n    idle_timeout: forever\n";
  std::ofstream(dir / "good.yaml") << "inputs:\n  - {type: syslog_tcp, listen: \"127.0.0.1:0\"}\n";
  conveyor::testing::ChildProcess bad(
      {CONVEYOR_LOG_INGEST, "validate", "--config", (dir / "bad.yaml").string()},
      (dir / "bad.txt").string());
  EXPECT_EQ(bad.wait(30s), 1);
  const std::string error = read_file(dir / "bad.txt");
  EXPECT_NE(error.find("bad.yaml:3:19: service.limits.idle_timeout"), std::string::npos) << error;
  conveyor::testing::ChildProcess good(
      {CONVEYOR_LOG_INGEST, "validate", "--config", (dir / "good.yaml").string()});
  EXPECT_EQ(good.wait(30s), 0);
  fs::remove_all(dir);
}

}  // namespace

namespace {

// logrotate's create mode: the records file is moved away and SIGHUP sent; the service writes
// on into a new file at the path, and no record is lost across the two.
TEST(LogIngestServe, SighupReopensTheOutputsAndLosesNothing) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("hup", "");
  Client client(service.port("syslog_tcp"));
  const auto send = [&](const char* prefix) {
    std::string text;
    for (int i = 0; i < 100; ++i)
      text += syslog_message(name(prefix, i)) + "\n";
    ASSERT_TRUE(client.send(text));
  };
  send("old-");
  ASSERT_TRUE(Service::eventually([&] { return lines_of(service.records()).size() == 100; }));
  const fs::path rotated = service.records().string() + ".1";
  fs::rename(service.records(), rotated);
  service.child().send_signal(SIGHUP);
  ASSERT_TRUE(
      Service::eventually([&] { return service.log().find("SIGHUP") != std::string::npos; }));
  send("new-");
  client.close();
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  std::set<std::string> messages;
  for (const fs::path& file : {rotated, service.records()}) {
    for (const std::string& line : lines_of(file))
      EXPECT_TRUE(messages.insert(message_of(line)).second) << line;
  }
  EXPECT_EQ(messages.size(), 200U);
  EXPECT_EQ(lines_of(service.records()).size(), 100U) << "the new file got the new records";
}

}  // namespace

namespace {

// stdin as the only input: every line is written, and at its end the service drains and exits 0
// by itself.
TEST(LogIngestServe, StdinToItsEndThenExits) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("stdin", "", "  - {type: stdin, format: syslog}\n", /*pipe_stdin=*/true);
  std::string text;
  for (int i = 0; i < 1000; ++i)
    text += syslog_message(name("s", i)) + "\n";
  service.child().write_stdin(text + syslog_message("last, without its newline"));
  service.child().close_stdin();
  ASSERT_EQ(service.child().wait(60s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), 1001U) << service.log();
  EXPECT_EQ(counts.at("written"), 1001U);
  EXPECT_EQ(lines_of(service.records()).size(), 1001U);
}

// A quiet stdin pipe, still open, does not hold up a drain: SIGTERM writes what was read and
// exits 0.
TEST(LogIngestServe, QuietStdinDrainsOnSigterm) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("stdin-quiet", "", "  - {type: stdin, format: syslog}\n", /*pipe_stdin=*/true);
  std::string text;
  for (int i = 0; i < 100; ++i)
    text += syslog_message(name("q", i)) + "\n";
  service.child().write_stdin(text);
  ASSERT_TRUE(Service::eventually([&] { return service.child().stdin_unread() == 0; }));
  ASSERT_EQ(service.child().stop(SIGTERM, 30s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), 100U) << service.log();
  EXPECT_EQ(counts.at("written"), 100U);
}

// A drain that finds stdin open and quiet stops reading it there: a line the writer had not
// ended is cut off, and dead-lettered as such, not written as if it were whole.
TEST(LogIngestServe, AQuietStdinsUnfinishedLineIsCutOffByTheDrain) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("stdin-half", "", "  - {type: stdin, format: syslog}\n", /*pipe_stdin=*/true);
  std::string text;
  for (int i = 0; i < 10; ++i)
    text += syslog_message(name("h", i)) + "\n";
  text += syslog_message("half a line");  // its end never comes
  service.child().write_stdin(text);
  ASSERT_TRUE(Service::eventually([&] { return service.child().stdin_unread() == 0; }));
  ASSERT_EQ(service.child().stop(SIGTERM, 30s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), 11U) << service.log();
  EXPECT_EQ(counts.at("written"), 10U);
  EXPECT_EQ(counts.at("rejected"), 1U);
  EXPECT_EQ(lines_of(service.records()).size(), 10U);
  EXPECT_EQ(read_file(service.records()).find("half a line"), std::string::npos);
  EXPECT_NE(read_file(service.dead_letters()).find("half a line"), std::string::npos);
}

// A stdin that is never quiet, here a file that is always ready to read, does not hold up a
// drain past drain_timeout: the reader is cut off there, what it read is accounted for, and the
// service exits 0 without reading the rest. (It read to the file's end, whatever the timeout.)
TEST(LogIngestServe, BusyStdinIsCutOffAtTheDrainTimeout) {
  conveyor::testing::Watchdog watchdog(120s);
  constexpr int lines = 1'000'000;  // about 90 MB: far more than the service parses in 100 ms
  Service service("stdin-busy", ServiceSetup{.service_yaml = "  drain_timeout: 100ms\n",
                                             .inputs_yaml = "  - {type: stdin, format: syslog}\n",
                                             .stdin_file = "stdin.log",
                                             .prepare = [](const fs::path& dir) {
                                               std::ofstream out(dir / "stdin.log",
                                                                 std::ios::binary);
                                               std::string block;
                                               for (int i = 0; i < lines; ++i) {
                                                 block += syslog_message(name("b", i));
                                                 block += '\n';
                                                 if (block.size() > (1U << 20U)) {
                                                   out << block;
                                                   block.clear();
                                                 }
                                               }
                                               out << block;
                                             }});
  ASSERT_TRUE(Service::eventually([&] {
    std::error_code error;
    return fs::file_size(service.records(), error) > 0 && !error;
  })) << service.log();
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_GT(counts.at("received"), 0U) << service.log();
  EXPECT_LT(counts.at("received"), static_cast<std::uint64_t>(lines)) << "it read to the end";
  EXPECT_EQ(counts.at("received"), counts.at("written") + counts.at("rejected") +
                                       counts.at("filtered") + counts.at("dropped"))
      << service.log();
  std::ifstream records(service.records(), std::ios::binary);
  const auto written = std::count(std::istreambuf_iterator<char>(records), {}, '\n');
  EXPECT_EQ(static_cast<std::uint64_t>(written), counts.at("written"));
}

}  // namespace
