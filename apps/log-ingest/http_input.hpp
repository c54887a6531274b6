// HttpInput: `POST /ingest` for `log-ingest serve` (Boost.Beast over Asio, TLS when configured).
// The body holds lines, or JSON lines (the input's `format`, json by default), each a message.
//
//   curl --data-binary @events.jsonl http://127.0.0.1:8080/ingest   ->  200 {"accepted":1000}
//
// Answers:
// - 200 `{"accepted":N}` only once every message of the body is in the Ingress, so the pipeline
//   has it: a client that got 200 may forget the lines;
// - 429 with `Retry-After: 1` when the Ingress is full as the body arrives: nothing of it was
//   taken, and the client sends it again later (backpressure);
// - 413 for a body over `max_body_bytes`, 431 for a header, a chunk's size line or trailers over
//   16 KiB, 400 for a request HTTP cannot parse (all three close the connection), 404 for another
//   path, 405 for another method.
//
// Limits: `max_connections`, `max_connections_per_client` (StreamListener); headers up to 16 KiB (a
// chunk's size line and the trailers too) and a body up to `max_body_bytes`, so a connection holds
// at most about that much; `idle_timeout` between requests; lines over `max_frame_bytes` are
// dead-lettered. Keep-alive is honoured; when the service drains, a connection ends after the
// request in progress, and one between requests ends at once. Each answer is counted by code
// (`log_ingest_http_responses_total{input,code}`).
//
// Contract: StreamListener's.
#pragma once

#include <memory>

#include "stream_listener.hpp"

namespace conveyor::log_ingest {

class HttpInput final : public StreamListener {
 public:
  using StreamListener::StreamListener;

 protected:
  std::shared_ptr<StreamConnection> connect(boost::asio::ip::tcp::socket socket) override;
  [[nodiscard]] const char* scheme() const override { return "http"; }

 private:
  friend class HttpConnection;
};

}  // namespace conveyor::log_ingest
