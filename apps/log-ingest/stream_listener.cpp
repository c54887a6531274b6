// StreamListener: accepting, the connection limit, and the drain of stream inputs.
#include "stream_listener.hpp"

#include <system_error>
#include <utility>
#include <vector>

#include "tls_context.hpp"

namespace conveyor::log_ingest {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

StreamListener::StreamListener(asio::io_context& io, const InputConfig& config,
                               const LimitsConfig& limits, Ingress& ingress,
                               InputCounters& counters)
    : ServiceInput(config, limits, ingress, counters), io_(io), acceptor_(io) {
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
  for (StreamConnection* connection : connections_)
    connection->close();
}

void StreamListener::start() {
  accepting_ = true;
  accept();
}

void StreamListener::accept() {
  acceptor_.async_accept([this](const error_code& error, tcp::socket socket) {
    if (error) {
      if (!accepting_) return;
      accept();  // a client that went away before it was accepted; EMFILE: try the next
      return;
    }
    adopt(std::move(socket));
    if (accepting_) accept();
  });
}

void StreamListener::adopt(tcp::socket socket) {
  if (connections_.size() >= limits_.max_connections) {
    InputCounters::add(counters_.connections_rejected, 1);
    error_code ignored;
    socket.close(ignored);
    return;
  }
  const std::shared_ptr<StreamConnection> connection = connect(std::move(socket));
  connections_.insert(connection.get());
  counters_.connections.store(connections_.size(), std::memory_order_relaxed);
  InputCounters::add(counters_.connections_total, 1);
  connection->start();
}

void StreamListener::closed(StreamConnection* connection) {
  connections_.erase(connection);
  counters_.connections.store(connections_.size(), std::memory_order_relaxed);
}

void StreamListener::stop_accepting() {
  if (!acceptor_.is_open()) return;
  accepting_ = false;
  // Clients the kernel has already connected wait in the backlog, and may have sent data:
  // closing the listener would reset them. They are taken in, and drained like the others.
  error_code error;
  acceptor_.non_blocking(true, error);
  while (!error) {
    tcp::socket socket(io_);
    acceptor_.accept(socket, error);
    if (!error) adopt(std::move(socket));
  }
  error_code ignored;
  acceptor_.close(ignored);
  // drain() may end a connection, and with it its entry.
  const std::vector<StreamConnection*> open(connections_.begin(), connections_.end());
  for (StreamConnection* connection : open)
    if (connections_.count(connection) != 0) connection->drain();
}

void StreamListener::close_all() {
  stop_accepting();
  for (StreamConnection* connection : connections_)
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
