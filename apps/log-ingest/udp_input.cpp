// UdpInput: datagrams into chunks.
#include "udp_input.hpp"

#include <sys/socket.h>

#include <boost/asio/post.hpp>

#include <memory>
#include <string_view>
#include <system_error>

namespace conveyor::log_ingest {

namespace asio = boost::asio;
using asio::ip::udp;
using boost::system::error_code;

namespace {
// The most a datagram can carry, plus one byte to tell one that is cut off.
constexpr std::size_t datagram_buffer = 65536;
constexpr std::size_t chunk_bytes = 256U << 10U;
// Datagrams a chunk takes at most: empty or tiny ones would never fill its bytes.
constexpr std::size_t chunk_datagrams = 1024;
// Chunks read at one turn of the I/O thread before its other handlers (the other inputs, the
// drain's timer, the signals) get it back: a flood of datagrams must not keep it.
constexpr std::size_t chunks_per_turn = 4;
}  // namespace

UdpInput::UdpInput(asio::io_context& io, const InputConfig& config, const LimitsConfig& limits,
                   Ingress& ingress, InputCounters& counters)
    : ServiceInput(config, limits, ingress, counters),
      socket_(io),
      buffer_(datagram_buffer),
      builder_(input_, chunk_bytes) {
  const Endpoint endpoint = parse_endpoint(config.listen);
  const udp::endpoint at(endpoint.address, endpoint.port);
  try {
    socket_.open(at.protocol());
    socket_.set_option(udp::socket::reuse_address(true));
    // A larger kernel queue rides out short bursts while the pipeline catches up.
    error_code ignored;
    socket_.set_option(asio::socket_base::receive_buffer_size(8 << 20), ignored);
    // Past net.core.rmem_max too, where the service may (CAP_NET_ADMIN, as rsyslog does).
    const int wanted = 8 << 20;
    (void)::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVBUFFORCE, &wanted, sizeof wanted);
    socket_.bind(at);
    socket_.non_blocking(true);
  } catch (const boost::system::system_error& error) {
    throw std::system_error(error.code().value(), std::generic_category(),
                            "input '" + config.name + "': cannot listen on udp://" + config.listen);
  }
  bound_ = socket_.local_endpoint();
}

void UdpInput::start() {
  wait();
}

void UdpInput::wait() {
  socket_.async_wait(udp::socket::wait_read, [this](const error_code& error) {
    if (error) return;  // closed
    drain_some();
  });
}

void UdpInput::drain_some() {
  for (std::size_t i = 0; i < chunks_per_turn; ++i) {
    if (!drain_once()) {
      if (socket_.is_open()) wait();
      return;
    }
  }
  // More is queued. A wait would not see it (the reactor reports new datagrams, not those
  // already there): the rest is read at the I/O thread's next turn.
  asio::post(socket_.get_executor(), [this, alive = std::weak_ptr<const bool>(alive_)] {
    if (!alive.expired() && socket_.is_open()) drain_some();
  });
}

bool UdpInput::drain_once() {
  std::size_t bytes = 0;
  std::size_t datagrams = 0;
  while (bytes < chunk_bytes && datagrams < chunk_datagrams && socket_.is_open()) {
    error_code error;
    udp::endpoint from;
    const std::size_t size = socket_.receive_from(asio::buffer(buffer_), from, 0, error);
    if (error) break;  // would_block: none left (others: nothing to read now either)
    bytes += size;
    ++datagrams;
    InputCounters::add(counters_.bytes, size);
    std::string_view message(buffer_.data(), size);
    if (!message.empty() && message.back() == '\n') message.remove_suffix(1);
    if (!message.empty() && message.back() == '\r') message.remove_suffix(1);
    if (message.size() > limits_.max_frame_bytes) {
      builder_.rejected(stages::FrameRejection::oversized, message.substr(0, 256), message.size());
    } else {
      builder_.frame(message);
    }
  }
  builder_.seal();
  while (builder_.ready()) {
    if (!ingress_.try_push(builder_.front(), counters_)) Ingress::drop(builder_.front(), counters_);
    builder_.pop();
  }
  return bytes >= chunk_bytes || datagrams >= chunk_datagrams;
}

void UdpInput::stop_accepting() {
  if (!socket_.is_open()) return;
  // About what the kernel held when the drain began, and not what a flood sends meanwhile: as
  // many chunks as its receive buffer holds bytes, and one more.
  asio::socket_base::receive_buffer_size held;
  error_code unknown;
  socket_.get_option(held, unknown);
  const std::size_t queued = unknown ? (8U << 20U) : static_cast<std::size_t>(held.value());
  for (std::size_t i = 0; i <= queued / chunk_bytes && drain_once(); ++i) {
  }
  error_code ignored;
  socket_.close(ignored);
}

std::string UdpInput::where() const {
  return url("udp", bound_.address(), bound_.port());
}

}  // namespace conveyor::log_ingest
