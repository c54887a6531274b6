// UdpInput: a syslog listener over UDP for `log-ingest serve`, one message per datagram (a
// trailing LF or CRLF dropped). It reads whatever datagrams are queued, up to a chunk, and hands
// the chunk to the Ingress at once; after a few chunks it lets the I/O thread's other work run.
// UDP cannot make a sender wait: when the Ingress is full the chunk is dropped and counted
// (`log_ingest_dropped_total{reason="udp_overflow"}`). A datagram over `max_frame_bytes` is
// dead-lettered with its head.
//
// Contract: ServiceInput's. The constructor binds, and throws std::system_error naming the
// address when it cannot. `stop_accepting` reads the datagrams already queued (a bounded number of
// chunks, whatever is sent meanwhile), then closes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "serve_config.hpp"
#include "service_input.hpp"

namespace conveyor::log_ingest {

class UdpInput final : public ServiceInput {
 public:
  UdpInput(boost::asio::io_context& io, const InputConfig& config, const LimitsConfig& limits,
           Ingress& ingress, InputCounters& counters);

  void start() override;
  void stop_accepting() override;
  void close_all() override { stop_accepting(); }
  [[nodiscard]] bool finished() const override { return !socket_.is_open(); }
  [[nodiscard]] std::string where() const override;

 private:
  void wait();
  // Reads a few chunks, then waits for more datagrams, or goes on at the I/O thread's next turn.
  void drain_some();
  // Reads the queued datagrams into one chunk and hands it over; true when it stopped because the
  // chunk was full (more may be queued).
  bool drain_once();

  boost::asio::ip::udp::socket socket_;
  boost::asio::ip::udp::endpoint bound_;
  std::vector<char> buffer_;
  ChunkBuilder builder_;
  // Expires with the input: a read posted for the next turn finds it gone.
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
};

}  // namespace conveyor::log_ingest
