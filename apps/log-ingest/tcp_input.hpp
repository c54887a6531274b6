// TcpInput: a TCP listener of `log-ingest serve`, syslog (RFC 6587 framing) or plain lines. Each
// connection reads into a fixed buffer, splits frames (stages::FrameDecoder) and hands chunks to
// the Ingress.
//
// Limits (docs/serve.md): a connection over `max_connections` is closed as soon as it is accepted
// and counted; a frame over `max_frame_bytes` is dead-lettered and the next one parsed; a bad
// octet count closes the connection (counted); a client silent for `idle_timeout` is disconnected
// (counted). A connection holds at most its read buffer, the decoder's bound and the chunks of one
// read, whatever the client sends. Backpressure: while the Ingress is full a connection does not
// read, so TCP flow control slows its sender and nothing is lost; the idle clock stops meanwhile.
//
// Contract: ServiceInput's. The constructor binds, and throws std::system_error naming the
// address when it cannot.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "serve_config.hpp"
#include "service_input.hpp"

namespace conveyor::log_ingest {

class TcpConnection;

class TcpInput final : public ServiceInput {
 public:
  TcpInput(boost::asio::io_context& io, const InputConfig& config, const LimitsConfig& limits,
           Ingress& ingress);
  ~TcpInput() override;

  void start() override;
  void stop_accepting() override;
  void close_all() override;
  [[nodiscard]] bool finished() const override;
  [[nodiscard]] std::string where() const override;

 private:
  friend class TcpConnection;

  void accept();
  // Takes an accepted client in, or closes it when max_connections are open.
  void adopt(boost::asio::ip::tcp::socket socket);
  void closed(TcpConnection* connection);

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::ip::tcp::endpoint bound_;
  bool accepting_ = false;
  std::unordered_set<TcpConnection*> connections_;  // open ones, each owned by its handlers
};

}  // namespace conveyor::log_ingest
