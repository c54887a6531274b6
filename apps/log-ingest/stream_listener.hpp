// StreamListener: what the TCP-based inputs of `log-ingest serve` (syslog and lines over TCP, HTTP)
// share: the listening socket, TLS when configured (tls_context.hpp), `max_connections`, and the
// set of open connections that the drain stops and waits for. A subclass says what a connection
// does with its client (`connect`).
//
// Contract: ServiceInput's. The constructor binds, and throws std::system_error naming the address
// when it cannot (std::runtime_error for bad TLS files). A connection over `max_connections` is
// closed as soon as it is accepted, and counted; the limit and the `connections` gauge count the
// input's connections, with those of a listener it replaced at a reload that still drain. So is one
// over `max_connections_per_client`, which counts this listener's connections from one client (an
// IPv4 address, or an IPv6 address's /64).
// `stop_accepting` first takes in the clients that the kernel has already connected (they may have
// sent data), then closes the listener and calls `drain()` on every connection; `close_all` closes
// them. A connection calls `closed(this)` once, when it ends.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "room_wait.hpp"
#include "serve_config.hpp"
#include "service_input.hpp"

namespace conveyor::log_ingest {

class StreamConnection {
 public:
  virtual ~StreamConnection() = default;
  virtual void start() = 0;
  // The service drains: end once what the client has already sent is in.
  virtual void drain() {}
  // End now: the operation in progress completes with an error.
  virtual void close() = 0;
};

class StreamListener : public ServiceInput {
 public:
  StreamListener(boost::asio::io_context& io, const InputConfig& config, const LimitsConfig& limits,
                 Ingress& ingress, InputCounters& counters);
  ~StreamListener() override;

  void start() override;
  void stop_accepting() override;
  void close_all() override;
  [[nodiscard]] bool finished() const override;
  [[nodiscard]] std::string where() const override;

  void closed(StreamConnection* connection);

 protected:
  // A connection for an accepted client, to be started.
  virtual std::shared_ptr<StreamConnection> connect(boost::asio::ip::tcp::socket socket) = 0;
  // The URL scheme without TLS ("tcp", "http").
  [[nodiscard]] virtual const char* scheme() const = 0;

  // Set on a TLS input.
  [[nodiscard]] boost::asio::ssl::context* tls() const noexcept { return tls_.get(); }
  [[nodiscard]] bool accepting() const noexcept { return accepting_; }
  // Where connections wait for room in the Ingress.
  [[nodiscard]] RoomWait& room() noexcept { return room_; }

 private:
  void accept();
  // The connection taken in, or null (over a limit, or the client already gone).
  StreamConnection* adopt(boost::asio::ip::tcp::socket socket);
  // Rejects the socket (counted in `rejected`) when `limited`.
  bool refuse(bool limited, std::atomic<std::uint64_t>& rejected,
              boost::asio::ip::tcp::socket& socket);

  boost::asio::io_context& io_;
  // What the handlers look at before they touch the listener: a reload may destroy it while its
  // cancelled accept's handler is still queued.
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer pause_;  // out of descriptors: the next accept waits for it
  boost::asio::ip::tcp::endpoint bound_;
  std::unique_ptr<boost::asio::ssl::context> tls_;
  bool accepting_ = false;
  // The open ones, each owned by its handlers, with its client; and how many each client holds.
  std::unordered_map<StreamConnection*, boost::asio::ip::address> connections_;
  std::map<boost::asio::ip::address, std::size_t> per_client_;
  RoomWait room_;  // holds the connections that wait: they go before the listener
};

}  // namespace conveyor::log_ingest
