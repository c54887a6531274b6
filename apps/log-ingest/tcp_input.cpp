// TcpInput and its connections.
#include "tcp_input.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>

#include "client_stream.hpp"

namespace conveyor::log_ingest {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

// One client. Owned by the handlers it has pending (shared_ptr); TcpInput keeps a plain pointer
// to it until it is closed. On a TLS input, the handshake must end within idle_timeout.
class TcpConnection final : public StreamConnection,
                            public std::enable_shared_from_this<TcpConnection> {
 public:
  TcpConnection(TcpInput& owner, tcp::socket socket)
      : owner_(owner),
        stream_(std::move(socket), owner.tls()),
        idle_(stream_.get_executor()),
        decoder_({.max_frame_bytes = owner.limits_.max_frame_bytes},
                 owner.config_.type == InputType::syslog_tcp ? stages::Framing::rfc6587
                                                             : stages::Framing::lines),
        builder_(owner.input_) {}

  void start() override {
    if (stream_.secure()) arm_idle();
    stream_.handshake([self = shared_from_this()](const error_code& error) {
      self->disarm_idle();
      if (!error) {
        self->read();
        return;
      }
      // Closed by the service meanwhile (the idle timeout, which counts itself, or the drain):
      // not the client's failure.
      if (!self->closing_) InputCounters::add(self->owner_.counters_.tls_failures, 1);
      self->close();
      self->owner_.closed(self.get());
    });
  }

  // Ends the connection: the read in progress completes with an error, and what was read is
  // still delivered.
  void close() override {
    closing_ = true;
    stream_.close();
  }

 private:
  // Closes the connection if it stays silent for idle_timeout while it waits to read. A wait that
  // completed after it was armed again or disarmed (its handler already queued when the read
  // came) does nothing: its number is no longer the last one armed.
  void arm_idle() {
    reading_ = true;
    const std::uint64_t armed = ++idle_armed_;
    idle_.expires_after(owner_.limits_.idle_timeout);
    idle_.async_wait([self = shared_from_this(), armed](const error_code& error) {
      if (error || armed != self->idle_armed_ || !self->reading_) return;
      InputCounters::add(self->owner_.counters_.idle_disconnects, 1);
      self->close();
    });
  }
  void disarm_idle() {
    reading_ = false;
    ++idle_armed_;
    idle_.cancel();
  }

  void read() {
    arm_idle();
    auto done = [self = shared_from_this()](const error_code& error, std::size_t n) {
      self->on_read(error, n);
    };
    stream_.async_read_some(asio::buffer(buffer_), std::move(done));
  }

  void on_read(const error_code& error, std::size_t count) {
    disarm_idle();
    if (count > 0) {
      InputCounters::add(owner_.counters_.bytes, count);
      if (!decoder_.feed(std::string_view(buffer_.data(), count), builder_)) {
        InputCounters::add(owner_.counters_.framing_errors, 1);
        ending_ = true;
      }
    }
    if (error && !ending_) {
      // The client closed the stream: an unterminated last line is a message. Cut off (the idle
      // timeout, the drain's deadline, a reset), it is dead-lettered as truncated instead.
      if (error == asio::error::eof || error == asio::ssl::error::stream_truncated) {
        decoder_.finish(builder_);
      } else {
        decoder_.cut(builder_);
      }
      ending_ = true;
    }
    builder_.seal();
    deliver();
  }

  // Hands the chunks to the Ingress, waiting in the listener's line while it is full (not
  // reading meanwhile is the backpressure); then reads on, or ends.
  void deliver() {
    if (!handed_over()) {
      owner_.room().wait([self = shared_from_this()] {
        if (!self->handed_over()) return false;
        self->go_on();
        return true;
      });
      return;
    }
    go_on();
  }
  bool handed_over() { return builder_.hand_over_all(owner_.ingress_, owner_.counters_); }
  void go_on() {
    if (ending_) {
      close();
      owner_.closed(this);
      return;
    }
    read();
  }

  TcpInput& owner_;
  ClientStream stream_;
  asio::steady_timer idle_;
  stages::FrameDecoder decoder_;
  ChunkBuilder builder_;
  std::uint64_t idle_armed_ = 0;  // the idle clock's waits armed so far
  bool reading_ = false;
  bool ending_ = false;
  bool closing_ = false;  // closed by the service: the idle timeout, the drain's deadline
  std::array<char, 64U << 10U> buffer_{};
};

std::shared_ptr<StreamConnection> TcpInput::connect(tcp::socket socket) {
  return std::make_shared<TcpConnection>(*this, std::move(socket));
}

}  // namespace conveyor::log_ingest
