// FrameDecoder: splits the byte stream of one TCP connection into messages. Two framings:
// - Framing::rfc6587, syslog over TCP (RFC 6587). Each frame is framed its own way, decided by its
//   first byte, so one connection may mix both, as rsyslog and Vector accept:
//   - octet counting, `MSG-LEN SP MSG`, when the frame starts with a digit 1-9;
//   - otherwise non-transparent framing: the message runs to the next LF (a CR before it and
//     empty frames are dropped; the frame limit counts that CR).
// - Framing::lines, plain lines in any format (access logs start with digits): every frame runs
//   to the next LF, as non-transparent frames do.
//
//   FrameDecoder decoder({.max_frame_bytes = 64 * 1024});
//   while (read(socket, buffer)) if (!decoder.feed(buffer, sink)) close(socket);
//   decoder.finish(sink);   // at the end of the stream
//
// Contract:
// - `feed` hands each complete message to `sink.frame` (a view valid during the call) and each
//   frame it cannot deliver to `sink.rejected`, with the frame's first `dead_letter_head` bytes
//   and its full length: a frame over `max_frame_bytes` is skipped to its end without buffering
//   it, and decoding goes on with the next frame. A counted message's trailing LF (or CRLF),
//   which some senders count, is dropped as a line's is.
// - rfc6587: a malformed octet count (a digit run not ended by a space, or over 10 digits) breaks
//   the stream: framing is lost, so `feed` returns false, `error()` says why, and every later call
//   does nothing. The caller closes the connection.
// - `finish` ends the stream: an unterminated final line is a message; a frame cut short by the
//   end is rejected as truncated. `cut` ends a stream that was cut off (an idle or drain timeout,
//   a reset): an unterminated final line is rejected as truncated too, since its end is unknown.
// - Memory: at most `max_frame_bytes` plus `dead_letter_head` bytes are held between calls,
//   whatever the stream holds (`held()`). Frames that lie whole in one fed buffer are not copied.
// - One decoder per connection, used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace conveyor::stages {

struct FrameLimits {
  std::size_t max_frame_bytes = std::size_t{64} * 1024;
  std::size_t dead_letter_head = 256;  // bytes of a rejected frame kept for its dead letter
};

enum class Framing {
  rfc6587,  // syslog over TCP: octet-counted or LF-terminated, per frame
  lines,    // LF-terminated only
};

enum class FrameRejection {
  oversized,  // longer than max_frame_bytes
  truncated,  // the stream ended inside it
};

// Where a decoder delivers.
class FrameSink {
 public:
  virtual void frame(std::string_view message) = 0;
  virtual void rejected(FrameRejection why, std::string_view head, std::uint64_t length) = 0;

 protected:
  ~FrameSink() = default;
};

class FrameDecoder {
 public:
  explicit FrameDecoder(FrameLimits limits = {}, Framing framing = Framing::rfc6587);

  // False once the stream is broken (see error()).
  bool feed(std::string_view bytes, FrameSink& sink);
  void finish(FrameSink& sink);
  void cut(FrameSink& sink);

  [[nodiscard]] bool broken() const noexcept { return state_ == State::broken; }
  // Why the stream broke, with the offending byte's offset in the stream; empty if it did not.
  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  // Bytes of storage held between calls (for the memory bound's tests).
  [[nodiscard]] std::size_t held() const noexcept { return buffer_.capacity() + head_.capacity(); }

 private:
  enum class State {
    frame_start,  // before a frame's first byte
    count,        // reading an octet count's digits
    octets,       // reading a counted frame's message
    line,         // reading a message up to LF
    skip,         // skipping an oversized frame to its end, keeping its head
    broken,
  };

  // Each consumes from the front of `bytes` and returns what it did not consume.
  std::string_view read_count(std::string_view bytes);
  std::string_view read_octets(std::string_view bytes, FrameSink& sink);
  std::string_view read_line(std::string_view bytes, FrameSink& sink);
  std::string_view skip(std::string_view bytes, FrameSink& sink);
  // Hand a message to the sink, a line without a trailing CR, a counted message without a
  // trailing LF or CRLF; an empty one is dropped.
  static void deliver_line(std::string_view line, FrameSink& sink);
  static void deliver_counted(std::string_view message, FrameSink& sink);
  // Appends to buffer_, growing it at most to max_frame_bytes.
  void buffer(std::string_view bytes);
  // Starts skipping a frame of which `seen` bytes went by: `remaining` more, or up to its LF.
  void start_skip(std::uint64_t seen, std::uint64_t remaining, bool to_lf);
  void keep_head(std::string_view bytes);
  void fail(std::string what);

  FrameLimits limits_;
  Framing framing_;
  State state_ = State::frame_start;
  std::uint64_t offset_ = 0;  // of the next byte in the stream
  std::uint64_t count_ = 0;   // the octet count being read, or the counted frame's length
  std::size_t count_digits_ = 0;
  std::uint64_t remaining_ = 0;  // octets or skip: bytes left in the frame
  std::uint64_t skipped_ = 0;    // skip: the frame's length so far
  bool skip_to_lf_ = false;      // skip: the frame ends at LF, not after remaining_ bytes
  std::vector<char> buffer_;     // a frame that spans fed buffers
  std::vector<char> head_;       // skip: the rejected frame's head
  std::string error_;
};

}  // namespace conveyor::stages
