// ClientStream: one accepted client of a stream input, plain TCP or TLS, behind one interface
// (Asio's AsyncReadStream and AsyncWriteStream, so Beast's HTTP reads and writes take it too).
// `handshake` is a no-op on a plain stream.
//
// Contract: used on the I/O thread only, like the socket it owns. `close` shuts the socket down;
// operations in progress complete with an error. `cancel` ends them with operation_aborted,
// leaving the socket open. A TLS stream reads and writes only after its
// handshake succeeded.
#pragma once

#include <memory>
#include <utility>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

namespace conveyor::log_ingest {

class ClientStream {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;

  // `tls`: the input's context, or nullptr for plain TCP.
  ClientStream(boost::asio::ip::tcp::socket socket, boost::asio::ssl::context* tls)
      : socket_(std::move(socket)),
        tls_(tls != nullptr ? std::make_unique<Tls>(socket_, *tls) : nullptr) {}

  [[nodiscard]] bool secure() const noexcept { return tls_ != nullptr; }
  executor_type get_executor() noexcept { return socket_.get_executor(); }
  // Whether the client's bytes wait in the socket, unread (encrypted ones, on TLS).
  [[nodiscard]] bool has_unread_input() const {
    boost::system::error_code ignored;
    return socket_.available(ignored) > 0;
  }

  // Calls `done(error)`, at once (posted) on a plain stream.
  template <class Handler>
  void handshake(Handler&& done) {
    if (tls_) {
      tls_->async_handshake(boost::asio::ssl::stream_base::server, std::forward<Handler>(done));
    } else {
      boost::asio::post(socket_.get_executor(),
                        [done = std::forward<Handler>(done)]() mutable { done({}); });
    }
  }

  template <class Buffers, class Handler>
  void async_read_some(const Buffers& buffers, Handler&& done) {
    if (tls_) {
      tls_->async_read_some(buffers, std::forward<Handler>(done));
    } else {
      socket_.async_read_some(buffers, std::forward<Handler>(done));
    }
  }

  template <class Buffers, class Handler>
  void async_write_some(const Buffers& buffers, Handler&& done) {
    if (tls_) {
      tls_->async_write_some(buffers, std::forward<Handler>(done));
    } else {
      socket_.async_write_some(buffers, std::forward<Handler>(done));
    }
  }

  // Ends the read or write in progress with operation_aborted; one that already completed (its
  // handler queued) is not touched.
  void cancel() {
    boost::system::error_code ignored;
    socket_.cancel(ignored);
  }

  void close() {
    boost::system::error_code ignored;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  using Tls = boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>;

  boost::asio::ip::tcp::socket socket_;
  std::unique_ptr<Tls> tls_;  // reads and writes through socket_
};

}  // namespace conveyor::log_ingest
