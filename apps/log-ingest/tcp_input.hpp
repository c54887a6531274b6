// TcpInput: a TCP listener of `log-ingest serve`, syslog (RFC 6587 framing) or plain lines. Each
// connection reads into a fixed buffer, splits frames (stages::FrameDecoder) and hands chunks to
// the Ingress.
//
// Limits (docs/serve.md): `max_connections`, `max_connections_per_client` (StreamListener); a frame
// over `max_frame_bytes` is dead-lettered and the next one parsed; a bad octet count closes the
// connection (counted); a client silent for `idle_timeout` is disconnected (counted). A connection
// holds at most its read buffer, the decoder's bound and the chunks of one read, whatever the
// client sends. Backpressure: while the Ingress is full a connection does not read, so TCP flow
// control slows its sender and nothing is lost; the idle clock stops meanwhile. With `tls`
// configured, clients speak TLS; a failed handshake closes the connection and is counted, and so
// does one not done within idle_timeout.
//
// Contract: StreamListener's.
#pragma once

#include <memory>

#include "stream_listener.hpp"

namespace conveyor::log_ingest {

class TcpInput final : public StreamListener {
 public:
  using StreamListener::StreamListener;

 protected:
  std::shared_ptr<StreamConnection> connect(boost::asio::ip::tcp::socket socket) override;
  [[nodiscard]] const char* scheme() const override { return "tcp"; }

 private:
  friend class TcpConnection;
};

}  // namespace conveyor::log_ingest
