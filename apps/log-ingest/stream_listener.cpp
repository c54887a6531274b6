// StreamListener: accepting, the connection limit, and the drain of stream inputs.
#include "stream_listener.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <system_error>
#include <utility>
#include <vector>

#include "tls_context.hpp"

namespace conveyor::log_ingest {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

bool out_of_resources(const error_code& error) {
  if (error.category() != boost::system::system_category()) return false;
  const int code = error.value();
  return code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM;
}

// Who a client is, for max_connections_per_client: its IPv4 address (also when it comes mapped
// into IPv6), or the /64 of its IPv6 address, which one host may hold whole; a link-local address
// whole, with its interface, since every host on a link shares fe80::/64.
asio::ip::address client_of(const asio::ip::address& address) {
  if (!address.is_v6()) return address;
  const asio::ip::address_v6 v6 = address.to_v6();
  if (v6.is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, v6);
  if (v6.is_link_local()) return address;
  asio::ip::address_v6::bytes_type bytes = v6.to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return asio::ip::make_address_v6(bytes);
}

}  // namespace

StreamListener::StreamListener(asio::io_context& io, const InputConfig& config,
                               const LimitsConfig& limits, Ingress& ingress,
                               InputCounters& counters)
    : ServiceInput(config, limits, ingress, counters),
      io_(io),
      acceptor_(io),
      pause_(io),
      room_(io) {
  if (config.tls.enabled()) tls_ = make_tls_context(config);
  const Endpoint endpoint = parse_endpoint(config.listen);
  const tcp::endpoint at(endpoint.address, endpoint.port);
  try {
    acceptor_.open(at.protocol());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(at);
    acceptor_.listen();
  } catch (const boost::system::system_error& error) {
    throw std::system_error(error.code().value(), std::generic_category(),
                            "input '" + config.name + "': cannot listen on " + config.listen);
  }
  bound_ = acceptor_.local_endpoint();
}

StreamListener::~StreamListener() {
  for (const auto& [connection, client] : connections_)
    connection->close();
  counters_.connections.fetch_sub(connections_.size(), std::memory_order_relaxed);
}

void StreamListener::start() {
  accepting_ = true;
  accept();
}

void StreamListener::accept() {
  acceptor_.async_accept([this, alive = std::weak_ptr<const bool>(alive_)](const error_code& error,
                                                                           tcp::socket socket) {
    if (alive.expired()) return;
    if (error) {
      if (!accepting_) return;
      if (out_of_resources(error)) {
        // Out of descriptors or memory: accepting again at once would fail at once, and spin.
        // The clients wait in the backlog meanwhile.
        pause_.expires_after(std::chrono::milliseconds(100));
        pause_.async_wait([this, alive](const error_code& paused) {
          if (!alive.expired() && !paused && accepting_) accept();
        });
        return;
      }
      accept();  // a client that went away before it was accepted: try the next
      return;
    }
    StreamConnection* const connection = adopt(std::move(socket));
    if (accepting_) {
      accept();
    } else if (connection != nullptr && connections_.count(connection) != 0) {
      // Accepted before the drain began, taken in after: it drains like the others.
      connection->drain();
    }
  });
}

StreamConnection* StreamListener::adopt(tcp::socket socket) {
  // The input's connections: after a reload that replaced this listener's input, those of the
  // one it replaced, still draining, share its counters, and max_connections bounds them all.
  // Relaxed: every listener changes the count on the I/O thread; other threads only read it.
  if (refuse(counters_.connections.load(std::memory_order_relaxed) >= limits_.max_connections,
             counters_.connections_rejected, socket))
    return nullptr;
  error_code gone;
  const tcp::endpoint peer = socket.remote_endpoint(gone);
  if (gone) {
    // Reset before it was taken in: nothing to read from it.
    socket.close(gone);
    return nullptr;
  }
  const asio::ip::address client = client_of(peer.address());
  const auto held = per_client_.find(client);
  if (refuse(held != per_client_.end() && held->second >= limits_.max_connections_per_client,
             counters_.client_connections_rejected, socket))
    return nullptr;
  const std::shared_ptr<StreamConnection> connection = connect(std::move(socket));
  ++per_client_[client];
  connections_.emplace(connection.get(), client);
  counters_.connections.fetch_add(1, std::memory_order_relaxed);
  InputCounters::add(counters_.connections_total, 1);
  connection->start();
  return connection.get();
}

bool StreamListener::refuse(bool limited, std::atomic<std::uint64_t>& rejected,
                            tcp::socket& socket) {
  if (!limited) return false;
  InputCounters::add(rejected, 1);
  error_code ignored;
  socket.close(ignored);
  return true;
}

void StreamListener::closed(StreamConnection* connection) {
  const auto open = connections_.find(connection);
  if (open == connections_.end()) return;
  if (const auto held = per_client_.find(open->second); held != per_client_.end()) {
    if (--held->second == 0) per_client_.erase(held);
  }
  connections_.erase(open);
  counters_.connections.fetch_sub(1, std::memory_order_relaxed);
}

void StreamListener::stop_accepting() {
  if (!acceptor_.is_open()) return;
  accepting_ = false;
  pause_.cancel();
  // Clients the kernel has already connected wait in the backlog, and may have sent data:
  // closing the listener would reset them. They are taken in, and drained like the others.
  // At most a full backlog: a client that connects as fast as they are taken cannot keep this
  // loop (and the I/O thread, the drain's deadline with it) going.
  error_code error;
  acceptor_.non_blocking(true, error);
  for (int taken = 0; !error && taken < tcp::acceptor::max_listen_connections; ++taken) {
    tcp::socket socket(io_);
    acceptor_.accept(socket, error);
    if (!error) (void)adopt(std::move(socket));
  }
  error_code ignored;
  acceptor_.close(ignored);
  // drain() may end a connection, and with it its entry.
  std::vector<StreamConnection*> open;
  open.reserve(connections_.size());
  for (const auto& [connection, client] : connections_)
    open.push_back(connection);
  for (StreamConnection* connection : open)
    if (connections_.count(connection) != 0) connection->drain();
}

void StreamListener::close_all() {
  stop_accepting();
  for (const auto& [connection, client] : connections_)
    connection->close();
}

bool StreamListener::finished() const {
  return !accepting_ && connections_.empty();
}

std::string StreamListener::where() const {
  const char* plain = scheme();
  const bool http = std::string_view(plain) == "http";
  return url(tls_ ? (http ? "https" : "tls") : plain, bound_.address(), bound_.port());
}

}  // namespace conveyor::log_ingest
