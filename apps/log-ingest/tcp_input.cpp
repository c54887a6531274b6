// TcpInput and its connections.
#include "tcp_input.hpp"

#include <array>
#include <chrono>
#include <string_view>
#include <system_error>
#include <utility>

#include <boost/asio/steady_timer.hpp>

namespace conveyor::log_ingest {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

// One client. Owned by the handlers it has pending (shared_ptr); TcpInput keeps a plain pointer
// to it until it is closed.
class TcpConnection : public std::enable_shared_from_this<TcpConnection> {
 public:
  TcpConnection(TcpInput& owner, tcp::socket socket)
      : owner_(owner),
        socket_(std::move(socket)),
        idle_(socket_.get_executor()),
        retry_(socket_.get_executor()),
        decoder_({.max_frame_bytes = owner.limits_.max_frame_bytes},
                 owner.config_.type == InputType::syslog_tcp ? stages::Framing::rfc6587
                                                             : stages::Framing::lines),
        builder_(owner.input_) {}

  void start() { read(); }

  // Ends the connection: the read in progress completes with an error, and what was read is
  // still delivered.
  void close() {
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  void read() {
    idle_.expires_after(owner_.limits_.idle_timeout);
    idle_.async_wait([self = shared_from_this()](const error_code& error) {
      if (error || !self->reading_) return;
      InputCounters::add(self->owner_.counters_.idle_disconnects, 1);
      self->close();
    });
    reading_ = true;
    socket_.async_read_some(asio::buffer(buffer_),
                            [self = shared_from_this()](const error_code& error, std::size_t n) {
                              self->on_read(error, n);
                            });
  }

  void on_read(const error_code& error, std::size_t count) {
    reading_ = false;
    idle_.cancel();
    if (count > 0) {
      InputCounters::add(owner_.counters_.bytes, count);
      if (!decoder_.feed(std::string_view(buffer_.data(), count), builder_)) {
        InputCounters::add(owner_.counters_.framing_errors, 1);
        ending_ = true;
      }
    }
    if (error && !ending_) {
      decoder_.finish(builder_);
      ending_ = true;
    }
    builder_.seal();
    deliver();
  }

  // Hands the chunks to the Ingress, waiting while it is full; then reads on, or ends.
  void deliver() {
    while (builder_.ready()) {
      if (!owner_.ingress_.try_push(builder_.front(), owner_.counters_)) {
        // Full: try again shortly. Not reading meanwhile is the backpressure.
        retry_.expires_after(std::chrono::milliseconds(1));
        retry_.async_wait([self = shared_from_this()](const error_code&) { self->deliver(); });
        return;
      }
      builder_.pop();
    }
    if (ending_) {
      close();
      owner_.closed(this);
      return;
    }
    read();
  }

  TcpInput& owner_;
  tcp::socket socket_;
  asio::steady_timer idle_;
  asio::steady_timer retry_;
  stages::FrameDecoder decoder_;
  ChunkBuilder builder_;
  bool reading_ = false;
  bool ending_ = false;
  std::array<char, 64U << 10U> buffer_{};
};

TcpInput::TcpInput(asio::io_context& io, const InputConfig& config, const LimitsConfig& limits,
                   Ingress& ingress)
    : ServiceInput(config, limits, ingress), io_(io), acceptor_(io) {
  const Endpoint endpoint = parse_endpoint(config.listen);
  const tcp::endpoint at(endpoint.address, endpoint.port);
  try {
    acceptor_.open(at.protocol());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(at);
    acceptor_.listen();
  } catch (const boost::system::system_error& error) {
    throw std::system_error(error.code().value(), std::generic_category(),
                            "input '" + config.name + "': cannot listen on tcp://" + config.listen);
  }
  bound_ = acceptor_.local_endpoint();
}

TcpInput::~TcpInput() {
  for (TcpConnection* connection : connections_)
    connection->close();
}

void TcpInput::start() {
  accepting_ = true;
  accept();
}

void TcpInput::accept() {
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

void TcpInput::adopt(tcp::socket socket) {
  if (connections_.size() >= limits_.max_connections) {
    InputCounters::add(counters_.connections_rejected, 1);
    error_code ignored;
    socket.close(ignored);
    return;
  }
  auto connection = std::make_shared<TcpConnection>(*this, std::move(socket));
  connections_.insert(connection.get());
  counters_.connections.store(connections_.size(), std::memory_order_relaxed);
  InputCounters::add(counters_.connections_total, 1);
  connection->start();
}

void TcpInput::closed(TcpConnection* connection) {
  connections_.erase(connection);
  counters_.connections.store(connections_.size(), std::memory_order_relaxed);
}

void TcpInput::stop_accepting() {
  if (!acceptor_.is_open()) return;
  accepting_ = false;
  // Clients the kernel has already connected wait in the backlog, and may have sent messages:
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
}

void TcpInput::close_all() {
  stop_accepting();
  for (TcpConnection* connection : connections_)
    connection->close();
}

bool TcpInput::finished() const {
  return !accepting_ && connections_.empty();
}

std::string TcpInput::where() const {
  return url("tcp", bound_.address(), bound_.port());
}

}  // namespace conveyor::log_ingest
