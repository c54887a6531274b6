// `log-ingest serve` as operators run it, over real sockets on 127.0.0.1: an output that stalls
// (TCP senders wait, memory stays bounded, UDP drops are counted, HTTP answers 429), HTTP
// ingestion, TLS with client certificates made by the openssl CLI, and systemd readiness on a
// notify socket. Every message is counted. Loops are bounded; a watchdog ends a hang.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "serve_harness.hpp"
#include "watchdog.hpp"

namespace {

using namespace conveyor::testing::serve;  // NOLINT(google-build-using-namespace)
namespace fs = std::filesystem;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace http = boost::beast::http;

// More than the kernel's socket buffers hold (several MiB a connection on loopback), so that the
// senders must wait while the output stalls.
#ifdef CONVEYOR_SANITIZED
constexpr int stall_clients = 2;
constexpr int stall_messages_each = 200'000;
#else
constexpr int stall_clients = 4;
constexpr int stall_messages_each = 200'000;
#endif

// The records output as a FIFO that the test reads only when it chooses: until then the service's
// writer blocks once the pipe is full, as on a disk or a consumer that stalls.
class StalledOutput {
 public:
  // Makes the FIFO at `path` and opens its read end (so that the service can open it to write).
  explicit StalledOutput(const fs::path& path) {
    if (::mkfifo(path.c_str(), 0600) != 0) throw std::runtime_error("mkfifo failed");
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error("cannot open the FIFO");
  }
  StalledOutput(const StalledOutput&) = delete;
  StalledOutput& operator=(const StalledOutput&) = delete;
  ~StalledOutput() {
    if (reader_.joinable()) reader_.join();
    ::close(fd_);
  }

  // Reads everything into memory from now on, until the writer closes its end.
  void resume() {
    reader_ = std::thread([this] {
      char buffer[1 << 16];
      for (;;) {
        pollfd ready{.fd = fd_, .events = POLLIN, .revents = 0};
        if (::poll(&ready, 1, 100) <= 0) continue;
        const ssize_t got = ::read(fd_, buffer, sizeof buffer);
        if (got == 0) return;  // the service closed it
        if (got > 0) text_.append(buffer, static_cast<std::size_t>(got));
      }
    });
  }
  // What was read, once the service has exited.
  std::string finish() {
    reader_.join();
    return text_;
  }

 private:
  int fd_ = -1;
  std::thread reader_;
  std::string text_;
};

// A service whose records go to a StalledOutput, made into `output`, behind a short queue.
ServiceSetup stalled_setup(std::unique_ptr<StalledOutput>& output) {
  return ServiceSetup{.pipeline_yaml = "  workers: 2\n  queue_chunks: 4\n",
                      .prepare = [&output](const fs::path& dir) {
                        output = std::make_unique<StalledOutput>(dir / "records.jsonl");
                      }};
}

// The service's peak resident memory, in MiB.
double peak_rss_mib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(text.substr(start, end - start));
  return lines;
}

// One POST to /ingest on a new connection: the status and the body of the answer.
std::pair<unsigned, std::string> post(std::uint16_t port, const std::string& body,
                                      const std::string& target = "/ingest") {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::address_v4::loopback(), port});
  http::request<http::string_body> request(http::verb::post, target, 11);
  request.set(http::field::host, "127.0.0.1");
  request.body() = body;
  request.prepare_payload();
  http::write(socket, request);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  return {response.result_int(), response.body()};
}

// A CA, a server certificate for 127.0.0.1 and a client certificate that it signed, and a
// self-signed client certificate it did not sign: made by the openssl CLI into `dir`.
void make_certificates(const fs::path& dir) {
  std::ofstream(dir / "make-certificates.sh") << R"(set -e
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key"; }
sign() {  # name, common name, subjectAltName
  key "$1"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2"
  printf 'subjectAltName=%s\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.pem"
}
key ca
openssl req -x509 -new -key ca.key -out ca.pem -days 2 -subj /CN=test-ca
sign server 127.0.0.1 IP:127.0.0.1
sign client client DNS:client
key rogue
openssl req -x509 -new -key rogue.key -out rogue.pem -days 2 -subj /CN=rogue
)";
  const std::string command =
      "cd '" + dir.string() + "' && bash make-certificates.sh > openssl.log 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << read_file(dir / "openssl.log");
}

// A TLS client on 127.0.0.1 that trusts `ca` and presents `certificate` (when not empty).
class TlsClient {
 public:
  TlsClient(std::uint16_t port, const fs::path& ca, const fs::path& certificate = {})
      : context_(asio::ssl::context::tls_client) {
    context_.load_verify_file(ca.string());
    context_.set_verify_mode(asio::ssl::verify_peer);
    if (!certificate.empty()) {
      context_.use_certificate_chain_file(certificate.string());
      fs::path key = certificate;
      context_.use_private_key_file(key.replace_extension(".key").string(),
                                    asio::ssl::context::pem);
    }
    // After the context is complete: a stream copies the certificate when it is made.
    stream_.emplace(io_, context_);
    stream_->lowest_layer().connect({asio::ip::address_v4::loopback(), port});
  }

  // Whether the handshake succeeded and `bytes` were all sent, then the stream shut down.
  bool send(const std::string& bytes) {
    boost::system::error_code error;
    stream_->handshake(asio::ssl::stream_base::client, error);
    if (error) return false;
    asio::write(*stream_, asio::buffer(bytes), error);
    if (error) return false;
    // A server that refused the certificate ends the stream (TLS 1.3 says so only after the
    // handshake): reading tells.
    stream_->shutdown(error);
    return !error || error == asio::error::eof || error == asio::ssl::error::stream_truncated;
  }

  // POST `body` to /ingest over HTTPS: the status and the body of the answer (0 when the
  // handshake or the exchange failed).
  std::pair<unsigned, std::string> post(const std::string& body) {
    boost::system::error_code error;
    stream_->handshake(asio::ssl::stream_base::client, error);
    if (error) return {0, error.message()};
    http::request<http::string_body> request(http::verb::post, "/ingest", 11);
    request.set(http::field::host, "127.0.0.1");
    request.body() = body;
    request.prepare_payload();
    http::write(*stream_, request, error);
    if (error) return {0, error.message()};
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(*stream_, buffer, response, error);
    if (error) return {0, error.message()};
    return {response.result_int(), response.body()};
  }

 private:
  asio::io_context io_;
  asio::ssl::context context_;
  std::optional<asio::ssl::stream<asio::ip::tcp::socket>> stream_;
};

// TLS with client certificates required: a client with a certificate the CA signed has every
// message written; one without a certificate, one with a certificate the CA did not sign, and
// one that does not speak TLS are refused and counted, and none of their messages is written. One
// silent in the handshake is disconnected when idle, and not counted as a failed handshake.
TEST(LogIngestServeOps, TlsWithClientCertificates) {
  conveyor::testing::Watchdog watchdog(120s);
  fs::path dir;
  const std::string inputs =
      "  - name: syslog_tls\n"
      "    type: syslog_tcp\n"
      "    listen: 127.0.0.1:0\n"
      "    tls: {cert: CERTS/server.pem, key: CERTS/server.key, client_ca: CERTS/ca.pem}\n";
  const fs::path certs =
      fs::temp_directory_path() / ("conveyor-serve-certs-" + std::to_string(::getpid()));
  fs::create_directories(certs);
  make_certificates(certs);
  std::string with_paths = inputs;
  for (std::size_t at = 0; (at = with_paths.find("CERTS", at)) != std::string::npos;)
    with_paths.replace(at, 5, certs.string());
  Service service("tls", ServiceSetup{.service_yaml = "  limits: {idle_timeout: 2s}\n",
                                      .inputs_yaml = with_paths});
  const std::uint16_t port = service.port("syslog_tls");
  EXPECT_NE(service.log().find("on tls://127.0.0.1:"), std::string::npos) << service.log();

  constexpr int messages = 2000;
  std::string good;
  for (int i = 0; i < messages; ++i) {
    const std::string message = syslog_message(name("tls-", i));
    good += i % 2 == 0 ? std::to_string(message.size()) + " " + message : message + "\n";
  }
  EXPECT_TRUE(TlsClient(port, certs / "ca.pem", certs / "client.pem").send(good));
  // Refused: TLS 1.3 may let the client finish its side of the handshake before the server
  // rejects it, so the proof is what is written and counted, not what the client saw.
  (void)TlsClient(port, certs / "ca.pem").send(syslog_message("no-certificate") + "\n");
  (void)TlsClient(port, certs / "ca.pem", certs / "rogue.pem").send(syslog_message("rogue") + "\n");
  {
    Client plain(port);
    (void)plain.send(syslog_message("plain-text") + "\n");
    EXPECT_TRUE(plain.closed_within(10s));
  }
  {
    // Silent in the handshake: closed by the idle timeout, and counted as that alone.
    Client silent(port);
    EXPECT_TRUE(silent.closed_within(20s));
  }
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_TRUE(Service::eventually([&] {
    return service.metric("log_ingest_idle_disconnects_total{input=\"syslog_tls\"}") == 1.0;
  }));
  EXPECT_TRUE(Service::eventually([&] {
    return service.metric("log_ingest_tls_handshake_failures_total{input=\"syslog_tls\"}") == 3.0;
  })) << service.metric("log_ingest_tls_handshake_failures_total{input=\"syslog_tls\"}")
             .value_or(-1);
#endif
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), std::uint64_t{messages}) << service.log();
  EXPECT_EQ(counts.at("written"), std::uint64_t{messages});
  std::set<std::string> seen;
  for (const std::string& line : lines_of(service.records()))
    seen.insert(message_of(line));
  EXPECT_EQ(seen.size(), std::size_t{messages});
  EXPECT_EQ(seen.count("tls-0"), 1U);
  EXPECT_EQ(seen.count(name("tls-", messages - 1)), 1U);
  fs::remove_all(certs);
}

// HTTPS: POST /ingest over TLS (no client certificate asked for) is answered and its lines are
// written; a client that speaks plain HTTP to the TLS port is refused and counted, and one silent
// in the handshake is disconnected when idle, and not counted as a failed handshake.
TEST(LogIngestServeOps, HttpsIngest) {
  conveyor::testing::Watchdog watchdog(120s);
  const fs::path certs =
      fs::temp_directory_path() / ("conveyor-https-certs-" + std::to_string(::getpid()));
  fs::create_directories(certs);
  make_certificates(certs);
  Service service(
      "https", ServiceSetup{.service_yaml = "  limits: {idle_timeout: 2s}\n",
                            .inputs_yaml = "  - {name: web, type: http, listen: 127.0.0.1:0, "
                                           "tls: {cert: " +
                                           (certs / "server.pem").string() +
                                           ", key: " + (certs / "server.key").string() + "}}\n"});
  const std::uint16_t port = service.port("web");
  std::string body;
  for (int i = 0; i < 100; ++i) {
    body += R"({"time":"2024-10-11T22:14:15Z","remote_addr":"10.0.0.1","method":"GET","path":"/)";
    body += name("s", i) + R"(","status":200})" + "\n";
  }
  const auto [status, answer] = TlsClient(port, certs / "ca.pem").post(body);
  EXPECT_EQ(status, 200U) << answer;
  EXPECT_EQ(answer, "{\"accepted\":100}\n");
  {
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    socket.connect({asio::ip::address_v4::loopback(), port});
    http::request<http::string_body> request(http::verb::post, "/ingest", 11);
    request.body() = body;
    request.prepare_payload();
    boost::system::error_code error;
    http::write(socket, request, error);
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(socket, buffer, response, error);
    EXPECT_TRUE(error) << "plain HTTP was answered " << response.result_int();
  }
  {
    // Silent in the handshake: closed by the idle timeout, and counted as that alone.
    Client silent(port);
    EXPECT_TRUE(silent.closed_within(20s));
  }
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_TRUE(Service::eventually(
      [&] { return service.metric("log_ingest_idle_disconnects_total{input=\"web\"}") == 1.0; }));
  EXPECT_TRUE(Service::eventually([&] {
    return service.metric("log_ingest_tls_handshake_failures_total{input=\"web\"}") == 1.0;
  })) << service.metric("log_ingest_tls_handshake_failures_total{input=\"web\"}").value_or(-1);
  // The bytes of the requests it read, the accepted body's among them.
  EXPECT_GE(service.metric("log_ingest_received_bytes_total{input=\"web\"}").value_or(0),
            static_cast<double>(body.size()));
#endif
  {
    // Still in its handshake when a reload (new limits) retires the input: the drain ends it, and
    // that counts as neither a failed handshake nor an idle disconnect.
    Client cut(port);
    ASSERT_TRUE(Service::eventually([&] {
      return service.metric("log_ingest_connections{input=\"web\"}").value_or(0) == 1.0;
    }));
    ASSERT_TRUE(service.reload_replacing("idle_timeout: 2s", "idle_timeout: 3s"));
    EXPECT_TRUE(cut.closed_within(20s));
    ASSERT_TRUE(Service::eventually([&] {
      return service.log().find("reopened 1") != std::string::npos;
    })) << service.log();
  }
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_EQ(service.metric("log_ingest_tls_handshake_failures_total{input=\"web\"}"), 1.0);
  EXPECT_EQ(service.metric("log_ingest_idle_disconnects_total{input=\"web\"}"), 1.0);
#endif
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  EXPECT_EQ(accounting(service.log(), "drained").at("written"), 100U);
  EXPECT_EQ(lines_of(service.records()).size(), 100U);
  fs::remove_all(certs);
}

// The writer stalls for 5 s: TCP senders are slowed (they cannot finish while it stalls), the
// service's memory stays bounded, UDP drops are counted (received = written + dropped), and once
// the output moves again every TCP message is written exactly once.
// An output that takes nothing cannot hold the drain up for ever: at stop_timeout the service
// stops as at a second signal, and its line counts what it could not write as lost.
TEST(LogIngestServeOps, AStalledOutputEndsTheDrainAtStopTimeout) {
  conveyor::testing::Watchdog watchdog(120s);
  std::unique_ptr<StalledOutput> output;
  ServiceSetup setup = stalled_setup(output);
  setup.service_yaml = "  drain_timeout: 200ms\n  stop_timeout: 1500ms\n";
  Service service("stall-stop", setup);
  // Far more than the FIFO's 64 KiB hold; what the service does not read before it stops
  // fails to send.
  std::thread sender([port = service.port("syslog_tcp")] {
    Client client(port);
    std::string bytes;
    for (int i = 0; i < 5000; ++i)
      bytes += syslog_message(name("m", 0, i)) + "\n";
    (void)client.send(bytes);
  });
  std::this_thread::sleep_for(1s);
  const auto signalled = std::chrono::steady_clock::now();
  EXPECT_EQ(service.child().stop(SIGTERM, 60s), 1) << service.log();
  EXPECT_GE(std::chrono::steady_clock::now() - signalled, 1500ms);
  const auto counts =
      accounting(service.log(), "the drain did not end within stop_timeout (1500 ms); stopped");
  ASSERT_FALSE(counts.empty()) << service.log();
  EXPECT_GT(counts.at("received"), counts.at("written"));
  EXPECT_GT(counts.at("lost"), 0U);
  EXPECT_EQ(counts.at("written") + counts.at("rejected") + counts.at("filtered") +
                counts.at("dropped") + counts.at("lost_on_output") + counts.at("lost"),
            counts.at("received"))
      << service.log();
  sender.join();
}

TEST(LogIngestServeOps, StalledOutputSlowsSendersAndLosesNothing) {
  conveyor::testing::Watchdog watchdog(300s);
  std::unique_ptr<StalledOutput> output;
  Service service("stall", stalled_setup(output));
  const std::uint16_t port = service.port("syslog_tcp");
  std::atomic<std::uint64_t> sent_bytes{0};
  std::atomic<int> finished{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  std::uint64_t total_bytes = 0;
  for (int c = 0; c < stall_clients; ++c) {
    std::string bytes;
    for (int i = 0; i < stall_messages_each; ++i)
      bytes += syslog_message(name("s", c, i)) + "\n";
    total_bytes += bytes.size();
    clients.emplace_back([&, bytes = std::move(bytes)] {
      Client client(port);
      for (std::size_t at = 0; at < bytes.size(); at += 64 << 10) {
        if (!client.send(bytes.substr(at, 64 << 10))) failures.fetch_add(1);
        sent_bytes.fetch_add(std::min<std::size_t>(64 << 10, bytes.size() - at));
      }
      finished.fetch_add(1);
    });
  }
  // UDP once the queue is full, paced so that the kernel's buffer does not overflow; the
  // service drops what its full queue cannot take, and counts it.
  const auto stalled_since = std::chrono::steady_clock::now();
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_TRUE(Service::eventually(
      [&] { return service.metric("log_ingest_queue_chunks").value_or(0) >= 4.0; }));
#else
  std::this_thread::sleep_for(2s);
#endif
  const int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  constexpr int datagrams = 4000;
  for (int i = 0; i < datagrams; ++i) {
    send_datagram(udp, service.port("syslog_udp"), syslog_message(name("u", i)));
    if (i % 50 == 49) std::this_thread::sleep_for(2ms);
  }
  ::close(udp);
  std::this_thread::sleep_until(stalled_since + 5s);
  EXPECT_LT(finished.load(), stall_clients) << "the senders were not held back";
  EXPECT_LT(sent_bytes.load(), total_bytes);
  const double stalled_rss = peak_rss_mib(service.child().pid());
  output->resume();
  for (std::thread& client : clients)
    client.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_EQ(service.child().stop(SIGTERM, 120s), 0) << service.log();
  const std::string written = output->finish();

  const std::uint64_t tcp_messages = std::uint64_t{stall_clients} * stall_messages_each;
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), tcp_messages + datagrams) << service.log();
  EXPECT_EQ(counts.at("written") + counts.at("dropped"), tcp_messages + datagrams);
  EXPECT_GT(counts.at("dropped"), 0U) << "the queue never filled";
  EXPECT_EQ(counts.at("lost"), 0U);
  std::set<std::string> seen;
  std::uint64_t tcp_seen = 0;
  for (const std::string& line : split_lines(written)) {
    const std::string message = message_of(line);
    ASSERT_TRUE(seen.insert(message).second) << "written twice: " << line;
    tcp_seen += message.front() == 's' ? 1 : 0;
  }
  EXPECT_EQ(tcp_seen, tcp_messages);
  EXPECT_EQ(seen.size(), counts.at("written"));
  // What the service held while the senders waited: its queues, not what they had to send.
  std::printf("peak RSS while stalled: %.0f MiB, with %.0f MiB to send\n", stalled_rss,
              static_cast<double>(total_bytes) / (1 << 20));
#ifndef CONVEYOR_SANITIZED
  EXPECT_LT(stalled_rss, 256.0);
#endif
}

// 800 connections held back by a stalled output wait in one line for room, retried by one timer:
// what the service spends meanwhile does not grow with the number waiting (each connection had a
// timer of its own, every millisecond, before), and once the output goes on every message is
// written once.
TEST(LogIngestServeOps, ManyHeldBackConnectionsCostNextToNoCpu) {
#ifdef CONVEYOR_SANITIZED
  GTEST_SKIP() << "measures CPU: runs in the optimised build";
#endif
  conveyor::testing::Watchdog watchdog(300s);
  std::unique_ptr<StalledOutput> output;
  Service service("held-back", stalled_setup(output));
  const std::uint16_t port = service.port("syslog_tcp");
  constexpr int few_clients = 100;  // 20 MB: more than the pipeline and the writer hold
  constexpr int held_clients = 800;
  constexpr int messages_each = 2000;  // about 200 KB each
  std::vector<std::unique_ptr<Client>> clients;
  const auto connect = [&](int from, int to) {
    for (int c = from; c < to; ++c) {
      // Eight clients of 100 connections each: more than one would hold is over its limit.
      const std::string client = "127.0.0." + std::to_string(1 + (c % 8));
      clients.push_back(std::make_unique<Client>(port, client.c_str()));
      std::string bytes;
      for (int i = 0; i < messages_each; ++i)
        bytes += syslog_message(name("h", c, i)) + "\n";
      EXPECT_TRUE(clients.back()->send(bytes));
    }
  };
  // Until every connection has read and waits for room: nothing more comes in for a second (20 s
  // at most, on a loaded host).
  const std::string received = "log_ingest_received_total{input=\"syslog_tcp\"}";
  const auto held_still = [&] {
    double last = -1;
    for (int look = 0, steady = 0; look < 100 && steady < 5; ++look) {
      std::this_thread::sleep_for(200ms);
      const double now_in = service.metric(received).value_or(-1);
      steady = now_in == last ? steady + 1 : 0;
      last = now_in;
    }
  };
  const pid_t pid = service.child().pid();
  const auto cpu_in_2s = [&] {
    const double start = cpu_seconds(pid);
    std::this_thread::sleep_for(2s);
    return cpu_seconds(pid) - start;
  };
  connect(0, few_clients);
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_TRUE(Service::eventually(
      [&] { return service.metric("log_ingest_queue_chunks").value_or(0) >= 4.0; }));
#endif
  held_still();
  const double few = cpu_in_2s();
  connect(few_clients, held_clients);
  held_still();
  const double many = cpu_in_2s();
  std::printf(
      "CPU in 2 s while %d connections wait: %.2f s; while %d wait: %.2f s; %.0f messages in\n",
      few_clients, few, held_clients, many, service.metric(received).value_or(-1));
  // With a timer for each connection, 800 took 0.38 s of CPU in these 2 s; with one for all,
  // 0.08 s to 0.2 s, as much as 100 take: what the service spends waiting at all (its clocks,
  // the host's load) is in both figures.
  EXPECT_LT(many - few, 0.12);
  output->resume();
  clients.clear();
  ASSERT_EQ(service.child().stop(SIGTERM, 120s), 0) << service.log();
  const std::string written = output->finish();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("written"), std::uint64_t{held_clients} * messages_each) << service.log();
  EXPECT_EQ(split_lines(written).size(), counts.at("written"));
}

// POST /ingest: 200 once the lines are taken, 429 with Retry-After while the output stalls and
// the queue is full, 404 and 405 elsewhere. A client that sends each refused body again has every
// line written exactly once.
TEST(LogIngestServeOps, HttpIngestAnswers429WhileFullAndLosesNothing) {
  conveyor::testing::Watchdog watchdog(180s);
  std::unique_ptr<StalledOutput> output;
  Service service(
      "http", ServiceSetup{.inputs_yaml = "  - {name: web, type: http, listen: \"127.0.0.1:0\"}\n",
                           .pipeline_yaml = "  workers: 1\n  queue_chunks: 2\n",
                           .prepare = [&](const fs::path& dir) {
                             output = std::make_unique<StalledOutput>(dir / "records.jsonl");
                           }});
  const std::uint16_t port = service.port("web");
  EXPECT_EQ(post(port, "", "/other").first, 404U);
  {
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    socket.connect({asio::ip::address_v4::loopback(), port});
    http::request<http::empty_body> request(http::verb::get, "/ingest", 11);
    http::write(socket, request);
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(socket, buffer, response);
    EXPECT_EQ(response.result_int(), 405U);
    EXPECT_EQ(response[http::field::allow], "POST");
  }
  // Bodies of 500 JSON lines each, posted until the stalled output makes the service refuse one.
  const auto body = [](int n) {
    std::string text;
    for (int i = 0; i < 500; ++i) {
      text += R"({"time":"2024-10-11T22:14:15Z","remote_addr":"10.0.0.1","method":"GET","path":"/)";
      text += name("b", n, i) + R"(","status":200})" + "\n";
    }
    return text;
  };
  int bodies = 0;
  bool refused = false;
  for (; bodies < 20'000 && !refused; ++bodies) {
    const auto [status, answer] = post(port, body(bodies));
    if (status == 429) {
      refused = true;
      break;
    }
    ASSERT_EQ(status, 200U) << answer;
    ASSERT_EQ(answer, "{\"accepted\":500}\n");
  }
  ASSERT_TRUE(refused) << "no 429 while the output stalled";
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_GE(service.metric("log_ingest_http_responses_total{input=\"web\",code=\"429\"}"), 1.0);
  EXPECT_EQ(service.metric("log_ingest_http_responses_total{input=\"web\",code=\"404\"}"), 1.0);
#endif
  output->resume();
  // The refused body and a few more, each sent again after a 429 as Retry-After asks (sooner
  // here), until taken.
  for (const int last = bodies + 5; bodies <= last; ++bodies) {
    bool taken = false;
    for (int attempts = 0; attempts < 1000 && !taken; ++attempts) {
      const auto [status, answer] = post(port, body(bodies));
      taken = status == 200;
      if (!taken) {
        ASSERT_EQ(status, 429U) << answer;
        std::this_thread::sleep_for(10ms);
      }
    }
    ASSERT_TRUE(taken);
  }
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  const std::string written = output->finish();
  std::set<std::string> paths;
  for (const std::string& line : split_lines(written)) {
    const std::size_t at = line.find("\"path\":\"/");
    ASSERT_NE(at, std::string::npos) << line;
    ASSERT_TRUE(paths.insert(line.substr(at, line.find('"', at + 9) - at)).second)
        << "written twice: " << line;
  }
  EXPECT_EQ(paths.size(), std::size_t(bodies) * 500);
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), std::uint64_t(bodies) * 500) << service.log();
  EXPECT_EQ(counts.at("written"), std::uint64_t(bodies) * 500);
}

// Sends `bytes` on a new connection and reads an answer if one comes: its status, or 0 when the
// service closed (or reset) the connection first.
unsigned exchange_raw(std::uint16_t port, const std::string& bytes) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::address_v4::loopback(), port});
  boost::system::error_code error;
  asio::write(socket, asio::buffer(bytes), error);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response, error);
  return error ? 0U : response.result_int();
}

// One chunk of a chunked body.
std::string chunk(const std::string& data, const std::string& extension = {}) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx", data.size());
  return std::string(size) + extension + "\r\n" + data + "\r\n";
}

// Chunked bodies are taken, one larger than the read buffer too; a chunk's size line (with its
// extensions) or trailers over 16 KiB get 431 and cost nothing more than the read buffer.
TEST(LogIngestServeOps, HttpChunkedBodiesAreTakenAndTheirFramingIsBounded) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service(
      "http-chunked",
      ServiceSetup{.inputs_yaml = "  - {name: web, type: http, listen: \"127.0.0.1:0\"}\n"});
  const std::uint16_t port = service.port("web");
  const std::string head =
      "POST /ingest HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n";
  const auto line = [](int i) {
    return R"({"time":"2024-10-11T22:14:15Z","method":"GET","path":"/chunked-)" +
           std::to_string(i) + R"(","status":200})" + "\n";
  };
  // 3 lines in three chunks; then 2,000 lines (about 160 KiB) in chunks of 50 lines and one of
  // 1,000, ten times the read buffer.
  std::string small = head;
  for (int i = 0; i < 3; ++i)
    small += chunk(line(i), i == 1 ? ";name=value" : "");
  EXPECT_EQ(exchange_raw(port, small + "0\r\n\r\n"), 200U);
  std::string large = head;
  std::string lines;
  for (int i = 3; i < 2003; ++i) {
    lines += line(i);
    if ((i - 2) % 50 == 0 && i < 1000) {
      large += chunk(lines);
      lines.clear();
    }
  }
  large += chunk(lines) + "0\r\nX-Trailer: fine\r\n\r\n";
  EXPECT_EQ(exchange_raw(port, large), 200U);
  // A last chunk with 64 KiB of extension, and trailers of 30 KiB.
  (void)exchange_raw(port,
                     head + chunk(line(9999)) + "0;" + std::string(64 << 10, 'x') + "\r\n\r\n");
  std::string trailers = head + chunk(line(9998)) + "0\r\n";
  for (int i = 0; i < 5000; ++i)
    trailers += "a: b\r\n";
  (void)exchange_raw(port, trailers + "\r\n");
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_TRUE(Service::eventually([&] {
    return service.metric("log_ingest_http_responses_total{input=\"web\",code=\"431\"}") == 2.0;
  })) << service.log();
#endif
  EXPECT_EQ(exchange_raw(port, small + "0\r\n\r\n"), 200U);  // still serving
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  // Both small bodies and the large one, and nothing of the two refused.
  EXPECT_EQ(accounting(service.log(), "drained").at("received"), 3U + 2000U + 3U) << service.log();
}

// A client that sends request after request and reads no answer: once the answers fill the
// socket's buffers, the service's write waits on the client, and after idle_timeout it closes
// the connection rather than hold it (and its place under max_connections) for good.
TEST(LogIngestServeOps, HttpClientThatReadsNoAnswerIsDisconnected) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service(
      "http-unread",
      ServiceSetup{.service_yaml = "  limits: {idle_timeout: 300ms}\n",
                   .inputs_yaml = "  - {name: web, type: http, listen: \"127.0.0.1:0\"}\n"});
  const std::uint16_t port = service.port("web");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  const int small = 4096;  // a small receive window: the answers back up sooner
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
  std::string requests;
  for (int i = 0; i < 1000; ++i)
    requests += "GET /nothing HTTP/1.1\r\nHost: test\r\n\r\n";
  // Send until the service stops taking requests (its write waits on us) for half a second,
  // within 64 MiB and 20 s.
  std::size_t sent = 0;
  auto stalled_since = std::chrono::steady_clock::now();
  const auto give_up = stalled_since + 20s;
  while (sent < (64U << 20U) && std::chrono::steady_clock::now() < give_up) {
    const ssize_t n = ::send(fd, requests.data(), requests.size(), MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      stalled_since = std::chrono::steady_clock::now();
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (std::chrono::steady_clock::now() - stalled_since > 500ms) break;
      std::this_thread::sleep_for(5ms);
    } else {
      break;  // closed already
    }
  }
  EXPECT_LT(sent, 64U << 20U) << "the service never stopped taking requests";
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_TRUE(Service::eventually([&] {
    return service.metric("log_ingest_idle_disconnects_total{input=\"web\"}") == 1.0;
  })) << "a client that reads no answer kept its connection";
  EXPECT_TRUE(Service::eventually(
      [&] { return service.metric("log_ingest_connections{input=\"web\"}") == 0.0; }));
#else
  std::this_thread::sleep_for(2s);
#endif
  ::close(fd);
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  EXPECT_EQ(accounting(service.log(), "drained").at("received"), 0U) << service.log();
}

// SIGTERM while a client is halfway through a POST's body: the drain waits for the rest, answers
// the request and writes every line. (The parser takes a body's bytes out of the read buffer as it
// goes: an empty buffer does not mean that nothing is in flight.)
TEST(LogIngestServeOps, HttpDrainAnswersTheRequestInProgress) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("http-drain", ServiceSetup{.inputs_yaml = "  - {name: web, type: http, "
                                                            "listen: \"127.0.0.1:0\"}\n"});
  const std::uint16_t port = service.port("web");
  std::string body;
  for (int i = 0; i < 100; ++i) {
    body += R"({"time":"2024-10-11T22:14:15Z","remote_addr":"10.0.0.1","method":"GET","path":"/)";
    body += name("d", i) + R"(","status":200})" + "\n";
  }
  const std::string head =
      "POST /ingest HTTP/1.1\r\nHost: test\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n";
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::address_v4::loopback(), port});
  asio::write(socket, asio::buffer(head + body.substr(0, body.size() / 2)));
  std::this_thread::sleep_for(300ms);  // the service has read the headers and half the body
  service.child().send_signal(SIGTERM);
  std::this_thread::sleep_for(500ms);  // it drains: a connection with nothing in flight is closed
  boost::system::error_code error;
  asio::write(socket, asio::buffer(body.substr(body.size() / 2)), error);
  EXPECT_FALSE(error) << error.message();
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response, error);
  EXPECT_FALSE(error) << "the request in progress got no answer: " << error.message();
  EXPECT_EQ(response.result_int(), 200U);
  EXPECT_EQ(response.body(), "{\"accepted\":100}\n");
  EXPECT_EQ(service.child().wait(60s), 0) << service.log();
  EXPECT_EQ(accounting(service.log(), "drained").at("written"), 100U) << service.log();
}

// Keep-alive clients that POST one line after another while the service drains: every line
// written was answered 200, and every line answered 200 was written. (A request read just as the
// drain began used to be written, its connection closed before its answer: the client, seeing no
// answer, would send it again.)
TEST(LogIngestServeOps, HttpDrainAnswersEveryRequestItTook) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("http-keepalive", ServiceSetup{.inputs_yaml = "  - {name: web, type: http, "
                                                                "listen: \"127.0.0.1:0\"}\n"});
  const std::uint16_t port = service.port("web");
  constexpr int clients_count = 16;
  std::vector<std::set<std::string>> answered(clients_count);
  std::vector<std::thread> clients;
  for (int c = 0; c < clients_count; ++c) {
    clients.emplace_back([&, c] {
      asio::io_context io;
      asio::ip::tcp::socket socket(io);
      boost::system::error_code error;
      socket.connect({asio::ip::address_v4::loopback(), port}, error);
      boost::beast::flat_buffer buffer;
      for (int i = 0; i < 100'000 && !error; ++i) {
        std::string line = R"({"time":"2024-10-11T22:14:15Z","method":"GET","path":"/)";
        line.append(name("k", c, i)).append(R"(","status":200})").append("\n");
        http::request<http::string_body> request(http::verb::post, "/ingest", 11);
        request.set(http::field::host, "127.0.0.1");
        request.body() = line;
        request.prepare_payload();
        http::write(socket, request, error);
        if (error) break;
        http::response<http::string_body> response;
        http::read(socket, buffer, response, error);
        if (!error && response.result_int() == 200) answered[c].insert(name("k", c, i));
        if (!error && !response.keep_alive()) break;
      }
    });
  }
  std::this_thread::sleep_for(500ms);
  service.child().send_signal(SIGTERM);
  for (std::thread& client : clients)
    client.join();
  ASSERT_EQ(service.child().wait(60s), 0) << service.log();
  std::set<std::string> all_answered;
  for (const std::set<std::string>& some : answered)
    all_answered.insert(some.begin(), some.end());
  std::set<std::string> written;
  for (const std::string& line : lines_of(service.records())) {
    const std::size_t at = line.find("\"path\":\"/");
    ASSERT_NE(at, std::string::npos) << line;
    const std::size_t start = at + 9;
    written.insert(line.substr(start, line.find('"', start) - start));
  }
  EXPECT_GT(written.size(), 0U);
  EXPECT_EQ(written, all_answered);
}

// Silent HTTP clients that wait in the listen backlog when the drain begins (the service is
// stopped while they connect) are taken in and ended at once: the service exits long before its
// drain timeout.
TEST(LogIngestServeOps, HttpDrainEndsSilentClientsTakenFromTheBacklog) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("http-backlog", ServiceSetup{.service_yaml = "  drain_timeout: 20s\n",
                                               .inputs_yaml = "  - {name: web, type: http, "
                                                              "listen: \"127.0.0.1:0\"}\n"});
  const std::uint16_t port = service.port("web");
  service.child().send_signal(SIGSTOP);
  asio::io_context io;  // before the sockets, which it outlives
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> silent;
  for (int c = 0; c < 20; ++c) {  // the kernel connects them; the service does not accept yet
    silent.push_back(std::make_unique<asio::ip::tcp::socket>(io));
    silent.back()->connect({asio::ip::address_v4::loopback(), port});
  }
  service.child().send_signal(SIGTERM);  // pending until it goes on
  const auto start = std::chrono::steady_clock::now();
  service.child().send_signal(SIGCONT);
  EXPECT_EQ(service.child().wait(60s), 0) << service.log();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "it waited for the silent clients";
}

// SIGHUP re-reads the configuration: an input that did not change keeps its connection, a
// removed one stops, a new one opens; an invalid file changes nothing and the service stays up.
TEST(LogIngestServeOps, SighupReloadsTheInputsAndKeepsUnchangedConnections) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("reload", "");
  Client kept(service.port("syslog_tcp"));
  ASSERT_TRUE(kept.send(syslog_message("before") + "\n"));
  ASSERT_TRUE(service.reload_replacing(
      "  - {name: syslog_udp, type: syslog_udp, listen: \"127.0.0.1:0\"}\n",
      "  - {name: access, type: tcp, listen: \"127.0.0.1:0\", format: combined}\n"));
  // The summary comes first, then a line for each input that listens.
  std::smatch match;
  std::string log;
  ASSERT_TRUE(Service::eventually([&] {
    log = service.log();
    return log.find("inputs: kept 1, reopened 0, removed 1, added 1") != std::string::npos &&
           std::regex_search(log, match,
                             std::regex(R"(input 'access' \(tcp\) on tcp://[0-9.]+:([0-9]+))"));
  })) << service.log();
  Client access(static_cast<std::uint16_t>(std::stoi(match[1])));
  ASSERT_TRUE(access.send(
      R"(10.0.0.1 - - [11/Oct/2024:22:14:15 +0000] "GET /reloaded HTTP/1.1" 200 5 "-" "curl")"
      "\n"));
  EXPECT_FALSE(kept.closed_within(100ms));
  ASSERT_TRUE(kept.send(syslog_message("after-reload") + "\n"));

  std::ofstream(service.dir() / "serve.yaml") << "inputs: [\n";  // not YAML
  service.child().send_signal(SIGHUP);
  ASSERT_TRUE(Service::eventually([&] {
    return service.log().find("keeping the running configuration") != std::string::npos;
  })) << service.log();
  ASSERT_TRUE(kept.send(syslog_message("after-invalid") + "\n"));
  kept.close();
  access.close();
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), 4U) << service.log();
  EXPECT_EQ(counts.at("written"), 4U);
  std::set<std::string> messages;
  for (const std::string& line : lines_of(service.records()))
    messages.insert(line.find("/reloaded") != std::string::npos ? "/reloaded" : message_of(line));
  EXPECT_EQ(messages,
            (std::set<std::string>{"before", "after-reload", "after-invalid", "/reloaded"}));
}

// The last port the log names for input `name` (a reload names it again).
std::uint16_t last_port(const std::string& log, const std::string& name, const std::string& type) {
  const std::regex where("input '" + name + "' \\(" + type + "\\) on [a-z]+://[0-9.]+:([0-9]+)");
  std::uint16_t port = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), where); it != std::sregex_iterator();
       ++it)
    port = static_cast<std::uint16_t>(std::stoi((*it)[1]));
  return port;
}

// Reloads with `from` replaced by `to`, waits until the log says `reopened` of the inputs, and
// returns the port the log names last for input `name` (of `type`): its new listener's. 0 when
// the reload did not happen.
std::uint16_t reload_and_reopen(Service& service, const std::string& from, const std::string& to,
                                const std::string& reopened, const std::string& name,
                                const std::string& type) {
  if (!service.reload_replacing(from, to)) return 0;
  // The summary comes first, then a line for each input that listens.
  std::uint16_t port = 0;
  (void)Service::eventually([&] {
    const std::string log = service.log();
    if (log.find("inputs: kept 0, reopened " + reopened) == std::string::npos) return false;
    port = last_port(log, name, type);
    return port != 0;
  });
  return port;
}

// A SIGHUP that moves an input to an address it cannot bind leaves that input on its previous
// settings (listening again) and still opens the other inputs of the new configuration.
TEST(LogIngestServeOps, AnInputThatCannotReopenGoesOnWithItsPreviousSettings) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("reload-fails", "");
  asio::io_context io;
  asio::ip::tcp::acceptor taken(io, {asio::ip::address_v4::loopback(), 0});  // listens
  const std::uint16_t taken_port = taken.local_endpoint().port();
  ASSERT_TRUE(service.reload_replacing(
      "{name: syslog_tcp, type: syslog_tcp, listen: \"127.0.0.1:0\"}",
      "{name: syslog_tcp, type: syslog_tcp, listen: \"127.0.0.1:" + std::to_string(taken_port) +
          "\"}\n  - {name: access, type: tcp, listen: " + "\"127.0.0.1:0\", format: combined}"));
  ASSERT_TRUE(Service::eventually([&] {
    return service.log().find(
               "inputs: kept 1, reopened 0, removed 0, added 1; input 'syslog_tcp' "
               "not reopened (") != std::string::npos &&
           service.log().find("it goes on with its previous settings") != std::string::npos &&
           service.log().find("input 'access' (tcp)") != std::string::npos;
  })) << service.log();
  const std::string log = service.log();
  const std::uint16_t syslog_port = last_port(log, "syslog_tcp", "syslog_tcp");
  ASSERT_NE(syslog_port, 0) << log;
  ASSERT_NE(syslog_port, taken_port) << log;
  Client syslog(syslog_port);
  ASSERT_TRUE(syslog.send(syslog_message("after-failed-reload") + "\n"));
  Client access(last_port(log, "access", "tcp"));
  ASSERT_TRUE(access.send(
      R"(10.0.0.1 - - [11/Oct/2024:22:14:15 +0000] "GET /added HTTP/1.1" 200 5 "-" "curl")"
      "\n"));
  syslog.close();
  access.close();
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), 2U) << service.log();
  EXPECT_EQ(counts.at("written"), 2U);
}

#ifdef CONVEYOR_HAS_PROMETHEUS
// An input that a reload turns into an HTTP input under the same name has its answers exported.
TEST(LogIngestServeOps, AnInputReloadedAsHttpHasItsAnswersCounted) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("reload-http", "",
                  "  - {name: web, type: tcp, listen: \"127.0.0.1:0\", format: json}\n");
  const std::uint16_t port = reload_and_reopen(service, "{name: web, type: tcp,",
                                               "{name: web, type: http,", "1", "web", "http");
  ASSERT_NE(port, 0U) << service.log();
  EXPECT_EQ(post(port, R"({"path":"/after-reload","status":200})"
                       "\n")
                .first,
            200U);
  EXPECT_TRUE(Service::eventually([&] {
    return service.metric("log_ingest_http_responses_total{input=\"web\",code=\"200\"}") == 1.0;
  })) << service.log();
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
}
#endif

// A reload that raises max_frame_bytes raises what the parse stage takes from the inputs too:
// a frame the new limit allows is written, not dead-lettered as too long by a limit kept from
// the start.
TEST(LogIngestServeOps, AReloadThatRaisesTheFrameLimitLetsLongerFramesThrough) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("reload-frame", "  limits: {max_frame_bytes: 64KiB}\n");
  const std::uint16_t port =
      reload_and_reopen(service, "limits: {max_frame_bytes: 64KiB}",
                        "limits: {max_frame_bytes: 1MiB}", "2", "syslog_tcp", "syslog_tcp");
  ASSERT_NE(port, 0U) << service.log();
  ASSERT_NE(port, service.port("syslog_tcp")) << service.log();
  {
    Client client(port);
    ASSERT_TRUE(client.send(syslog_message(std::string(300 << 10, 'x')) + "\n"));
  }
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), 1U) << service.log();
  EXPECT_EQ(counts.at("written"), 1U) << service.log();
  EXPECT_EQ(counts.at("rejected"), 0U);
}

// A reload that replaces a TCP input (here, the limits changed) leaves the old listener's
// clients connected until they close: `max_connections` and the `connections` gauge count them
// with the new listener's, as one input.
TEST(LogIngestServeOps, AReplacedInputsDrainingClientsCountAgainstItsLimit) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("reload-limit", "  limits: {max_connections: 2}\n");
  Client old_client(service.port("syslog_tcp"));
  ASSERT_TRUE(old_client.send(syslog_message("before") + "\n"));
#ifdef CONVEYOR_HAS_PROMETHEUS
  const auto connections = [&] {
    return service.metric("log_ingest_connections{input=\"syslog_tcp\"}");
  };
  ASSERT_TRUE(Service::eventually([&] { return connections() == 1.0; })) << service.log();
#endif
  const std::uint16_t port = reload_and_reopen(service, "limits: {max_connections: 2}",
                                               "limits: {max_connections: 2, idle_timeout: 10m}",
                                               "2", "syslog_tcp", "syslog_tcp");
  ASSERT_NE(port, 0U) << service.log();
  ASSERT_NE(port, service.port("syslog_tcp")) << service.log();
  Client new_client(port);
  ASSERT_TRUE(new_client.send(syslog_message("new") + "\n"));
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_TRUE(Service::eventually([&] { return connections() == 2.0; })) << service.log();
#endif
  Client over(port);
  EXPECT_TRUE(over.closed_within(5s)) << "a third connection was taken in";
  EXPECT_FALSE(old_client.closed_within(50ms));
  ASSERT_TRUE(old_client.send(syslog_message("after") + "\n"));
  old_client.close();
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_EQ(
      service.metric(
          "log_ingest_connections_rejected_total{input=\"syslog_tcp\",reason=\"max_connections\"}"),
      1.0);
  EXPECT_TRUE(Service::eventually([&] { return connections() == 1.0; })) << service.log();
#endif
  new_client.close();
#ifdef CONVEYOR_HAS_PROMETHEUS
  EXPECT_TRUE(Service::eventually([&] { return connections() == 0.0; })) << service.log();
#endif
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  EXPECT_EQ(accounting(service.log(), "drained").at("received"), 3U) << service.log();
}

// `max_connections_per_client`: one client (here 127.0.0.1) cannot hold more than its share of an
// input's connections, while another client (127.0.0.2) still gets in; a place freed is taken
// again.
TEST(LogIngestServeOps, OneClientHoldsAtMostItsShareOfConnections) {
#ifndef CONVEYOR_HAS_PROMETHEUS
  GTEST_SKIP() << "waits for the connections gauge";
#else
  conveyor::testing::Watchdog watchdog(120s);
  Service service("per-client", "  limits: {max_connections: 10, max_connections_per_client: 2}\n");
  const std::uint16_t port = service.port("syslog_tcp");
  const auto connections = [&] {
    return service.metric("log_ingest_connections{input=\"syslog_tcp\"}");
  };
  std::vector<std::unique_ptr<Client>> first;
  for (int i = 0; i < 2; ++i) {
    first.push_back(std::make_unique<Client>(port, "127.0.0.1"));
    ASSERT_TRUE(first.back()->send(syslog_message(name("first-", i)) + "\n"));
  }
  ASSERT_TRUE(Service::eventually([&] { return connections() == 2.0; })) << service.log();
  Client third(port, "127.0.0.1");
  EXPECT_TRUE(third.closed_within(5s)) << "a client held a third connection";
  Client other(port, "127.0.0.2");
  ASSERT_TRUE(other.send(syslog_message("other") + "\n"));
  ASSERT_TRUE(Service::eventually([&] { return connections() == 3.0; }))
      << "another client was refused\n"
      << service.log();
  for (auto& client : first) {
    EXPECT_FALSE(client->closed_within(50ms));
  }
  first.front()->close();
  ASSERT_TRUE(Service::eventually([&] { return connections() == 2.0; })) << service.log();
  Client again(port, "127.0.0.1");
  ASSERT_TRUE(again.send(syslog_message("again") + "\n"));
  EXPECT_TRUE(Service::eventually([&] { return connections() == 3.0; }))
      << "a freed place was not taken again\n"
      << service.log();
  EXPECT_EQ(service.metric("log_ingest_connections_rejected_total{input=\"syslog_tcp\",reason="
                           "\"max_connections_per_client\"}"),
            1.0);
  EXPECT_EQ(service.metric("log_ingest_connections_rejected_total{input=\"syslog_tcp\",reason="
                           "\"max_connections\"}"),
            0.0);
  // Closed, so that the drain need not wait for them.
  first.back()->close();
  other.close();
  again.close();
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  EXPECT_EQ(accounting(service.log(), "drained").at("written"), 4U) << service.log();
#endif
}

// Rotation by size while clients send: every record is in exactly one of the files, the current
// one or a rotated `records-%Y%m%dT%H%M%S.jsonl`, and no more than `keep` rotated files remain.
TEST(LogIngestServeOps, RotatesTheRecordsWithoutLosingOne) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("rotate",
                  ServiceSetup{.outputs_yaml = "  rotate: {size: 64KiB, keep: 1000}\n"
                                               "  flush: {records: 100, interval: 100ms}\n"});
  constexpr int messages = 50'000;
  {
    Client client(service.port("syslog_tcp"));
    std::string batch;
    for (int i = 0; i < messages; ++i) {
      batch += syslog_message(name("r", i)) + "\n";
      if (batch.size() > 8192 || i + 1 == messages) {
        ASSERT_TRUE(client.send(batch));
        batch.clear();
      }
    }
  }
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  std::set<std::string> seen;
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(service.dir())) {
    const std::string file = entry.path().filename().string();
    if (!file.starts_with("records")) continue;
    ++files;
    for (const std::string& line : lines_of(entry.path()))
      ASSERT_TRUE(seen.insert(message_of(line)).second) << "written twice: " << line;
  }
  EXPECT_GT(files, 5U);  // rotated at least 5 times, whatever the batches were
  EXPECT_EQ(seen.size(), std::size_t{messages});
  EXPECT_EQ(accounting(service.log(), "drained").at("written"), std::uint64_t{messages});
}

#ifdef CONVEYOR_HAS_PROMETHEUS
// GET /summary: the totals of everything received and the closed windows, whose records add up
// with the window in progress (?window=current) to the totals.
TEST(LogIngestServeOps, SummaryHasTheTotalsAndTheWindows) {
  conveyor::testing::Watchdog watchdog(60s);
  Service service("summary", ServiceSetup{.pipeline_yaml = "  workers: 2\n  summary: {window: "
                                                           "500ms, windows: 100, top: 3}\n"});
  const auto number_after = [](const std::string& body, const std::string& key, std::size_t from) {
    const std::size_t at = body.find(key, from);
    return at == std::string::npos ? -1 : std::stoll(body.substr(at + key.size()));
  };
  Client client(service.port("syslog_tcp"));
  for (int round = 0; round < 3; ++round) {
    std::string batch;
    for (int i = 0; i < 100; ++i) {
      // user.err (11) and user.info (14), alternately
      batch.append(i % 2 == 0 ? "<11>" : "<14>").append("1 2024-10-11T22:14:15Z ");
      batch.append(name("web-", i % 5)).append(" app - - - ").append(name("w", round, i));
      batch.push_back('\n');
    }
    ASSERT_TRUE(client.send(batch));
    std::this_thread::sleep_for(300ms);
  }
  ASSERT_TRUE(Service::eventually([&] {
    const auto page = conveyor::testing::http_get(service.port("metrics"), "/summary");
    return number_after(page.body, "\"records\":", page.body.find("\"totals\":")) == 300;
  }));
  const auto page = conveyor::testing::http_get(service.port("metrics"), "/summary");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "application/json");
  EXPECT_NE(page.body.find(R"("window_seconds":0.5)"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find(R"("by_severity":{"err":150,"info":150})"), std::string::npos);
  // The windows' records and the current window's add up to the totals.
  long long in_windows = 0;
  for (std::size_t at = page.body.find("\"windows\":"); at != std::string::npos;) {
    at = page.body.find("\"summary\":", at);
    if (at == std::string::npos) break;
    in_windows += number_after(page.body, "\"records\":", at);
    ++at;
  }
  const auto current =
      conveyor::testing::http_get(service.port("metrics"), "/summary?window=current");
  EXPECT_NE(current.body.find(R"("partial":true)"), std::string::npos) << current.body;
  const long long now = number_after(current.body, "\"records\":", 0);
  EXPECT_GE(in_windows, 1);
  EXPECT_LE(in_windows + now, 300);  // a window may close between the two requests
  EXPECT_EQ(conveyor::testing::http_get(service.port("metrics"), "/summary?window=9").status, 400);
  client.close();
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
}
#endif

// `generate --to` sends every line it says it sent: over several TCP connections, octet-counted
// and LF-framed, paced, replayed from a file, and marked for latency; each is written as a syslog
// record.
TEST(LogIngestServeOps, LoadGeneratorSendsEveryLine) {
  conveyor::testing::Watchdog watchdog(120s);
  Service service("generate", "");
  const std::string to = "tcp://127.0.0.1:" + std::to_string(service.port("syslog_tcp"));
  const auto generate = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {CONVEYOR_LOG_INGEST, "generate", "--to", to});
    conveyor::testing::ChildProcess generator(args, (service.dir() / "generate.txt").string());
    return generator.wait(60s);
  };
  EXPECT_EQ(generate({"--lines", "3000", "--connections", "3", "--profile", "realistic"}), 0);
  EXPECT_EQ(generate({"--lines", "1000", "--framing", "lf", "--rate", "20000"}), 0);
  EXPECT_NE(read_file(service.dir() / "generate.txt").find("sent 1000 messages"),
            std::string::npos);
  // --from: a file's lines as they are (an empty one is skipped), octet-counted.
  {
    std::ofstream messages(service.dir() / "messages.txt");
    for (int i = 0; i < 500; ++i)
      messages << syslog_message(name("replayed-", i)) << (i == 250 ? "\n\n" : "\n");
  }
  EXPECT_EQ(generate({"--from", (service.dir() / "messages.txt").string(), "--connections", "4"}),
            0);
  EXPECT_NE(read_file(service.dir() / "generate.txt").find("sent 500 messages"), std::string::npos);
  // --latency: one message in 10 marked, and every mark found in the records file.
  EXPECT_EQ(generate({"--lines", "2000", "--rate", "20000", "--probe-every", "10", "--latency",
                      service.records().string()}),
            0);
  EXPECT_NE(read_file(service.dir() / "generate.txt").find(": 200 of 200 marks, p50 "),
            std::string::npos)
      << read_file(service.dir() / "generate.txt");
  {
    conveyor::testing::ChildProcess bad({CONVEYOR_LOG_INGEST, "generate", "--to", "ftp://x:1"},
                                        (service.dir() / "bad.txt").string());
    EXPECT_EQ(bad.wait(30s), 2);
    EXPECT_NE(read_file(service.dir() / "bad.txt")
                  .find("must be tcp://HOST:PORT, udp://HOST:PORT or file://PATH"),
              std::string::npos);
  }
  ASSERT_EQ(service.child().stop(SIGTERM, 60s), 0) << service.log();
  const auto counts = accounting(service.log(), "drained");
  EXPECT_EQ(counts.at("received"), 6500U) << service.log();
  EXPECT_EQ(counts.at("written"), 6500U);
  const std::vector<std::string> records = lines_of(service.records());
  ASSERT_EQ(records.size(), 6500U);
  std::set<std::string> replayed;
  for (const std::string& record : records)
    if (message_of(record).starts_with("replayed-")) replayed.insert(message_of(record));
  EXPECT_EQ(replayed.size(), 500U);
  EXPECT_NE(records.front().find(R"("program":"nginx")"), std::string::npos) << records.front();
}

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
