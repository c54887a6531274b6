// async_sink: a pipeline whose sink writes records to an HTTP service without a thread per request.
//
// The program starts a small HTTP server on 127.0.0.1 (Boost.Beast), which answers each POST after
// a simulated latency and checks that the records of each key arrive in order. The pipeline's
// sink is asynchronous: each record is a coroutine on the pipeline's I/O threads, up to
// --in-flight per worker.
// - A TaskSequencer per key keeps the writes of one key in order, while other keys go ahead.
// - The connections form a shared pool; an AsyncMutex per connection lets one request at a time
//   use it (HTTP/1.1 without pipelining), held across the request's co_awaits.
// At the end it prints what was sent and what the server saw; it fails if a record was lost,
// duplicated, or reached the server out of its key's order.
//
//   async_sink [--records N] [--keys N] [--workers N] [--in-flight N] [--connections N]
//              [--latency-us N]
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "command_line.hpp"
#include "conveyor/framework.hpp"
#include "conveyor/framework/async.hpp"
#include "conveyor/sync/async_mutex.hpp"
#include "conveyor/sync/task_sequencer.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;

struct Record {
  std::uint32_t key = 0;
  std::uint64_t seq = 0;  // the record's number within its key, from 1
  std::string body;
};

// The service: answers POST /records/<key> after `latency`, and counts what it saw. One thread.
class Server {
 public:
  explicit Server(std::chrono::microseconds latency)
      : latency_(latency), acceptor_(context_, {asio::ip::make_address("127.0.0.1"), 0}) {
    asio::co_spawn(context_, accept(), asio::detached);
    thread_ = std::thread([this] { context_.run(); });
  }
  ~Server() {
    context_.stop();
    thread_.join();
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  [[nodiscard]] tcp::endpoint endpoint() const { return acceptor_.local_endpoint(); }
  [[nodiscard]] std::uint64_t received() const { return received_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t out_of_order() const {
    return out_of_order_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t connections() const {
    return connections_.load(std::memory_order_relaxed);
  }

 private:
  asio::awaitable<void> accept() {
    for (;;) {
      tcp::socket socket = co_await acceptor_.async_accept(asio::use_awaitable);
      connections_.fetch_add(1, std::memory_order_relaxed);
      asio::co_spawn(context_, serve(std::move(socket)), asio::detached);
    }
  }

  asio::awaitable<void> serve(tcp::socket socket) {
    boost::beast::flat_buffer buffer;
    asio::steady_timer timer(socket.get_executor());
    try {
      for (;;) {
        http::request<http::string_body> request;
        co_await http::async_read(socket, buffer, request, asio::use_awaitable);
        timer.expires_after(latency_);
        co_await timer.async_wait(asio::use_awaitable);
        http::response<http::string_body> response(check(request), request.version());
        response.keep_alive(request.keep_alive());
        response.prepare_payload();
        co_await http::async_write(socket, response, asio::use_awaitable);
        if (!request.keep_alive()) break;
      }
    } catch (const boost::system::system_error&) {
      // The client closed the connection.
    }
  }

  // The target is /records/<key>; the body starts with the record's number within its key.
  http::status check(const http::request<http::string_body>& request) {
    const std::string target(request.target());
    constexpr std::string_view prefix = "/records/";
    if (request.method() != http::verb::post || target.rfind(prefix, 0) != 0) {
      return http::status::not_found;
    }
    const std::uint64_t key = std::stoull(target.substr(prefix.size()));
    const std::uint64_t seq = std::stoull(request.body());
    // One thread serves every connection: no lock.
    std::uint64_t& last = last_seq_[key];
    if (seq != last + 1) out_of_order_.fetch_add(1, std::memory_order_relaxed);
    last = seq;
    received_.fetch_add(1, std::memory_order_relaxed);
    return http::status::ok;
  }

  std::chrono::microseconds latency_;
  asio::io_context context_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::unordered_map<std::uint64_t, std::uint64_t> last_seq_;
  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uint64_t> out_of_order_{0};
  std::atomic<std::uint64_t> connections_{0};
};

// Keep-alive connections shared by every worker's coroutines. A connection carries one request
// at a time: its AsyncMutex is held from the request's write to its response's read.
class ConnectionPool {
 public:
  ConnectionPool(const tcp::endpoint& server, std::size_t size)
      : server_(server), connections_(size) {}

  asio::awaitable<void> post(std::string target, std::string body) {
    Connection& connection =
        connections_[next_.fetch_add(1, std::memory_order_relaxed) % connections_.size()];
    const conveyor::sync::AsyncMutex::Guard guard = co_await connection.mutex.lock();
    if (!connection.socket) {
      connection.socket.emplace(co_await asio::this_coro::executor);
      co_await connection.socket->async_connect(server_, asio::use_awaitable);
    }
    http::request<http::string_body> request(http::verb::post, target, 11);
    request.set(http::field::host, "127.0.0.1");
    request.keep_alive(true);
    request.body() = std::move(body);
    request.prepare_payload();
    co_await http::async_write(*connection.socket, request, asio::use_awaitable);
    http::response<http::string_body> response;
    co_await http::async_read(*connection.socket, connection.buffer, response, asio::use_awaitable);
    if (response.result() != http::status::ok) {
      throw std::runtime_error("the server answered " + std::to_string(response.result_int()) +
                               " to " + target);
    }
  }

 private:
  struct Connection {
    conveyor::sync::AsyncMutex mutex;
    std::optional<tcp::socket> socket;
    boost::beast::flat_buffer buffer;
  };

  tcp::endpoint server_;
  std::deque<Connection> connections_;
  std::atomic<std::size_t> next_{0};
};

struct Settings {
  std::uint64_t records = 20'000;
  std::uint32_t keys = 100;
  std::size_t workers = 2;
  std::size_t in_flight = 64;
  std::size_t connections = 32;
  std::uint64_t latency_us = 1000;
};

int run(const Settings& settings) {
  Server server{std::chrono::microseconds(settings.latency_us)};
  conveyor::Pipeline pipeline({.name = "async-sink", .io_threads = settings.workers});
  // After the pipeline, so that it goes first: its sockets belong to the pipeline's I/O context.
  ConnectionPool pool(server.endpoint(), settings.connections);
  std::deque<conveyor::sync::TaskSequencer> sequencers(settings.keys);
  std::vector<std::uint64_t> next_seq(settings.keys, 0);

  std::uint64_t made = 0;
  pipeline.source([&]() -> std::optional<Record> {
    if (made == settings.records) return std::nullopt;
    const std::uint64_t n = made++;
    const auto key = static_cast<std::uint32_t>(n * 2654435761ULL % settings.keys);
    const std::uint64_t seq = ++next_seq[key];
    return Record{key, seq, std::to_string(seq) + " record " + std::to_string(n)};
  }) |
      conveyor::sink(
          [&](Record record) -> asio::awaitable<void> {
            auto write = [&pool, target = "/records/" + std::to_string(record.key),
                          body = std::move(record.body)]() mutable {
              return pool.post(std::move(target), std::move(body));
            };
            co_await sequencers[record.key].run(std::move(write));
          },
          {.name = "post",
           .mode = conveyor::Mode::parallel,
           .workers = settings.workers,
           // All the records of a key reach one worker, in the source's order, and start their
           // coroutines (and so take their turns in the key's sequencer) in that order.
           .dispatch = conveyor::Dispatch::by_key(&Record::key),
           .in_flight = settings.in_flight});
  const auto started = std::chrono::steady_clock::now();
  pipeline.run();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  std::printf("records sent        %llu in %.3f s (%.0f/s)\n",
              static_cast<unsigned long long>(settings.records), seconds,
              static_cast<double>(settings.records) / seconds);
  std::printf("server received     %llu\n", static_cast<unsigned long long>(server.received()));
  std::printf("out of key order    %llu\n", static_cast<unsigned long long>(server.out_of_order()));
  std::printf("connections opened  %llu\n", static_cast<unsigned long long>(server.connections()));
  const bool exact = server.received() == settings.records && server.out_of_order() == 0;
  std::printf("%s\n", exact ? "every record arrived once, in its key's order" : "MISMATCH");
  return exact ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return conveyor::examples::guarded("async_sink", [&] {
    Settings settings;
    CLI::App app{"Writes records to an HTTP service on loopback through an asynchronous sink."};
    app.add_option("--records", settings.records, "records to send")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_option("--keys", settings.keys, "distinct keys")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_option("--workers", settings.workers, "sink workers (and I/O threads)")
        ->capture_default_str()
        ->check(CLI::Range(1, 64));
    app.add_option("--in-flight", settings.in_flight, "requests each worker may have waiting")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
    app.add_option("--connections", settings.connections, "connections in the pool")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    app.add_option("--latency-us", settings.latency_us, "the server's latency per request")
        ->capture_default_str()
        ->check(CLI::Range(0, 1'000'000));
    if (const auto status = conveyor::examples::parse_command_line(app, argc, argv)) return *status;
    return run(settings);
  });
}
