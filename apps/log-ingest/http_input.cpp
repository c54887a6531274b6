// HttpInput and its connections.
#include "http_input.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "client_stream.hpp"

namespace conveyor::log_ingest {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr std::uint32_t header_limit = 16U << 10U;
// The read buffer holds a header, then a body's bytes on their way into the body (the parser moves
// them as they come), a chunk's size line, and the trailers. Beast holds neither of the last two to
// header_limit, so the buffer's own limit does: a chunk extension or trailers of a megabyte would
// otherwise be scanned again on every read, and each trailer field kept.
constexpr std::size_t read_limit = header_limit;

}  // namespace

// One client, request after request. Owned by the handlers it has pending (shared_ptr).
class HttpConnection final : public StreamConnection,
                             public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(HttpInput& owner, tcp::socket socket)
      : owner_(owner),
        stream_(std::move(socket), owner.tls()),
        idle_(stream_.get_executor()),
        builder_(owner.input_),
        buffer_(read_limit) {}

  void start() override {
    waiting_ = true;
    arm_idle();
    stream_.handshake([self = shared_from_this()](const error_code& error) {
      if (error) {
        // Closed by the service meanwhile (the idle timeout, which counts itself, or the
        // drain): not the client's failure.
        if (!self->closing_) InputCounters::add(self->owner_.counters_.tls_failures, 1);
        self->end();
        return;
      }
      self->read_request();
    });
  }

  void drain() override {
    draining_ = true;
    // Between requests with nothing of the next one read or waiting to be: nothing is in flight.
    // The parser takes a body's bytes out of the buffer as it goes, so an empty buffer alone does
    // not say that; and a client just taken from the backlog has sent what it sent, unread.
    // The wait is cancelled rather than the connection closed: a read that already took a
    // request (its handler queued, its bytes not in the buffer yet) still answers it, and closes.
    if (waiting_ && buffer_.size() == 0 && !(parser_ && parser_->got_some()) &&
        !stream_.has_unread_input()) {
      closing_ = true;  // a handshake it cuts off is not the client's failure
      stream_.cancel();
    }
  }

  void close() override {
    closing_ = true;
    stream_.close();
  }

 private:
  // Closes the connection if it waits idle_timeout for a request, or for the client to take a
  // response. A wait that completed after it was armed again or disarmed does nothing: its
  // number is no longer the last one armed.
  void arm_idle() {
    const std::uint64_t armed = ++idle_armed_;
    idle_.expires_after(owner_.limits_.idle_timeout);
    idle_.async_wait([self = shared_from_this(), armed](const error_code& error) {
      if (error || armed != self->idle_armed_ || !(self->waiting_ || self->writing_)) return;
      InputCounters::add(self->owner_.counters_.idle_disconnects, 1);
      self->close();
    });
  }
  void disarm_idle() {
    ++idle_armed_;
    idle_.cancel();
  }

  void read_request() {
    // Drained before its first read (taken from the backlog as the drain began, its handshake
    // still to come) and silent: nothing is in flight, and no read should wait for it.
    if (draining_ && buffer_.size() == 0 && !stream_.has_unread_input()) {
      end();
      return;
    }
    parser_.emplace();
    parser_->header_limit(header_limit);
    parser_->body_limit(owner_.limits_.max_body_bytes);
    waiting_ = true;
    arm_idle();
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](const error_code& error, std::size_t read) {
                       InputCounters::add(self->owner_.counters_.bytes, read);
                       self->on_request(error);
                     });
  }

  void on_request(const error_code& error) {
    waiting_ = false;
    disarm_idle();
    if (error == http::error::body_limit) {
      respond(http::status::payload_too_large, R"({"error":"the body is over max_body_bytes"})",
              true);
      return;
    }
    if (error == http::error::header_limit || error == http::error::buffer_overflow) {
      respond(http::status::request_header_fields_too_large,
              R"({"error":"the header, a chunk's size line or the trailers are over 16 KiB"})",
              true);
      return;
    }
    if (error == http::error::end_of_stream || error == http::error::partial_message ||
        (error && error.category() != http::make_error_code(http::error::bad_target).category())) {
      end();  // the client left, or the connection was closed
      return;
    }
    if (error) {
      respond(http::status::bad_request, R"({"error":"not an HTTP request"})", true);
      return;
    }
    const http::request<http::string_body>& request = parser_->get();
    std::string_view target(request.target().data(), request.target().size());
    target = target.substr(0, target.find('?'));
    if (target != "/ingest") {
      respond(http::status::not_found, R"({"error":"POST lines to /ingest"})", false);
    } else if (request.method() != http::verb::post) {
      respond(http::status::method_not_allowed, R"({"error":"POST lines to /ingest"})", false);
    } else {
      ingest(request.body());
    }
  }

  void ingest(std::string_view body) {
    stages::FrameDecoder decoder({.max_frame_bytes = owner_.limits_.max_frame_bytes},
                                 stages::Framing::lines);
    (void)decoder.feed(body, builder_);  // lines framing never breaks
    decoder.finish(builder_);
    builder_.seal();
    accepted_ = builder_.ready_messages();
    // The body is in the chunks now. Its copy in the parser and the read buffer's room go, so
    // that a connection that waits for room holds the body once, not two or three times.
    std::string().swap(parser_->get().body());
    buffer_.shrink_to_fit();
    // All or nothing: a body is refused only while none of it is taken.
    if (builder_.hand_over(owner_.ingress_, owner_.counters_) == 0 && builder_.ready()) {
      builder_.clear();
      respond(http::status::too_many_requests, R"({"error":"the pipeline is full; retry"})", false);
      return;
    }
    push_rest();
  }

  // The body's other chunks, waiting for room: its first is in, so it is taken whole.
  void push_rest() {
    if (!handed_over()) {
      owner_.room().wait([self = shared_from_this()] {
        if (!self->handed_over()) return false;
        self->answer_accepted();
        return true;
      });
      return;
    }
    answer_accepted();
  }
  bool handed_over() { return builder_.hand_over_all(owner_.ingress_, owner_.counters_); }
  void answer_accepted() {
    std::string answer = R"({"accepted":)";
    respond(http::status::ok, answer.append(std::to_string(accepted_)).append("}"), false);
  }

  void respond(http::status status, std::string body, bool close_after) {
    const bool keep =
        !close_after && !draining_ && parser_ && parser_->is_done() && parser_->get().keep_alive();
    response_.emplace(status, parser_ && parser_->is_header_done() ? parser_->get().version() : 11);
    response_->set(http::field::content_type, "application/json");
    if (status == http::status::too_many_requests) response_->set(http::field::retry_after, "1");
    if (status == http::status::method_not_allowed) response_->set(http::field::allow, "POST");
    response_->body() = std::move(body);
    response_->body().push_back('\n');
    response_->keep_alive(keep);
    response_->prepare_payload();
    owner_.counters_.count_http(static_cast<unsigned>(status));
    // A client that sends requests and never reads the answers is idle too: without the clock,
    // it would hold its connection (and a place under max_connections) for good.
    writing_ = true;
    arm_idle();
    http::async_write(stream_, *response_,
                      [self = shared_from_this(), keep](const error_code& error, std::size_t) {
                        self->writing_ = false;
                        self->disarm_idle();
                        // The drain may have begun while the answer was written.
                        if (error || !keep || self->draining_) {
                          self->end();
                        } else {
                          self->read_request();
                        }
                      });
  }

  void end() {
    if (ended_) return;
    ended_ = true;
    waiting_ = false;
    writing_ = false;
    disarm_idle();
    close();
    owner_.closed(this);
  }

  HttpInput& owner_;
  ClientStream stream_;
  asio::steady_timer idle_;
  ChunkBuilder builder_;
  boost::beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  std::uint64_t accepted_ = 0;    // messages in the body being taken
  std::uint64_t idle_armed_ = 0;  // the idle clock's waits armed so far
  bool waiting_ = false;          // for a request (or the handshake), with the idle clock running
  bool writing_ = false;          // a response, with the idle clock running
  bool draining_ = false;         // the service drains: no keep-alive
  bool ended_ = false;
  bool closing_ = false;  // ended by the service: the idle timeout, the drain, its deadline
};

std::shared_ptr<StreamConnection> HttpInput::connect(tcp::socket socket) {
  return std::make_shared<HttpConnection>(*this, std::move(socket));
}

}  // namespace conveyor::log_ingest
