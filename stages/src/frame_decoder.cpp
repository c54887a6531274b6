#include "conveyor/stages/frame_decoder.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace conveyor::stages {
namespace {

std::string_view view(const std::vector<char>& bytes) {
  return {bytes.data(), bytes.size()};
}

}  // namespace

FrameDecoder::FrameDecoder(FrameLimits limits, Framing framing)
    : limits_(limits), framing_(framing) {}

bool FrameDecoder::feed(std::string_view bytes, FrameSink& sink) {
  while (!bytes.empty() && state_ != State::broken) {
    const std::size_t before = bytes.size();
    switch (state_) {
      case State::frame_start: {
        const char first = bytes.front();
        if (framing_ == Framing::rfc6587 && first >= '1' && first <= '9') {
          state_ = State::count;
          count_ = 0;
          count_digits_ = 0;
        } else {
          state_ = State::line;
        }
        break;
      }
      case State::count:
        bytes = read_count(bytes);
        break;
      case State::octets:
        bytes = read_octets(bytes, sink);
        break;
      case State::line:
        bytes = read_line(bytes, sink);
        break;
      case State::skip:
        bytes = skip(bytes, sink);
        break;
      case State::broken:
        break;
    }
    offset_ += before - bytes.size();
  }
  return state_ != State::broken;
}

void FrameDecoder::finish(FrameSink& sink) {
  switch (state_) {
    case State::line:
      deliver_line(view(buffer_), sink);
      break;
    case State::count:
      sink.rejected(FrameRejection::truncated,
                    std::string_view(std::to_string(count_)).substr(0, limits_.dead_letter_head),
                    count_digits_);
      break;
    case State::octets:
      sink.rejected(FrameRejection::truncated,
                    view(buffer_).substr(0, std::min(buffer_.size(), limits_.dead_letter_head)),
                    count_);
      break;
    case State::skip:
      sink.rejected(skip_to_lf_ ? FrameRejection::oversized : FrameRejection::truncated,
                    view(head_), skip_to_lf_ ? skipped_ : count_);
      break;
    case State::frame_start:
    case State::broken:
      return;
  }
  buffer_.clear();
  head_.clear();
  state_ = State::frame_start;
}

std::string_view FrameDecoder::read_count(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (c == ' ') {
      if (count_ > limits_.max_frame_bytes) {
        start_skip(0, count_, false);
      } else {
        buffer_.clear();
        remaining_ = count_;
        state_ = State::octets;
      }
      return bytes.substr(i + 1);
    }
    if (c < '0' || c > '9') {
      static constexpr char hex[] = "0123456789abcdef";
      const auto byte = static_cast<unsigned char>(c);
      fail(std::string("octet count: byte 0x") + hex[byte >> 4] + hex[byte & 15] +
           " at stream offset " + std::to_string(offset_ + i) +
           " is neither a digit nor the space that ends the count");
      return {};
    }
    if (++count_digits_ > 10) {
      fail("octet count: more than 10 digits at stream offset " + std::to_string(offset_ + i));
      return {};
    }
    count_ = count_ * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return {};
}

std::string_view FrameDecoder::read_octets(std::string_view bytes, FrameSink& sink) {
  if (buffer_.empty() && bytes.size() >= remaining_) {
    // The whole message is here: no copy.
    deliver_counted(bytes.substr(0, remaining_), sink);
    state_ = State::frame_start;
    return bytes.substr(remaining_);
  }
  const std::size_t take = std::min<std::uint64_t>(remaining_, bytes.size());
  buffer(bytes.substr(0, take));
  remaining_ -= take;
  if (remaining_ == 0) {
    deliver_counted(view(buffer_), sink);
    buffer_.clear();
    state_ = State::frame_start;
  }
  return bytes.substr(take);
}

std::string_view FrameDecoder::read_line(std::string_view bytes, FrameSink& sink) {
  const auto* lf = static_cast<const char*>(std::memchr(bytes.data(), '\n', bytes.size()));
  if (lf == nullptr) {
    const std::uint64_t seen = buffer_.size() + bytes.size();
    if (seen > limits_.max_frame_bytes) {
      // Too long already: skip to its LF, keeping the head.
      start_skip(seen, 0, true);
      keep_head(view(buffer_));
      keep_head(bytes);
      buffer_.clear();
      return {};
    }
    buffer(bytes);
    return {};
  }
  const std::size_t length = static_cast<std::size_t>(lf - bytes.data());
  const std::string_view line = bytes.substr(0, length);
  state_ = State::frame_start;
  const std::uint64_t total = buffer_.size() + length;
  if (total > limits_.max_frame_bytes) {
    head_.clear();
    keep_head(view(buffer_));
    keep_head(line);
    sink.rejected(FrameRejection::oversized, view(head_), total);
    head_.clear();
  } else if (buffer_.empty()) {
    deliver_line(line, sink);
  } else {
    buffer(line);
    deliver_line(view(buffer_), sink);
  }
  buffer_.clear();
  return bytes.substr(length + 1);
}

void FrameDecoder::cut(FrameSink& sink) {
  std::string_view line = view(buffer_);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (state_ != State::line || line.empty()) {
    finish(sink);
    return;
  }
  sink.rejected(FrameRejection::truncated, line.substr(0, limits_.dead_letter_head), line.size());
  buffer_.clear();
  head_.clear();
  state_ = State::frame_start;
}

std::string_view FrameDecoder::skip(std::string_view bytes, FrameSink& sink) {
  std::size_t take = 0;
  bool ended = false;
  if (skip_to_lf_) {
    const auto* lf = static_cast<const char*>(std::memchr(bytes.data(), '\n', bytes.size()));
    ended = lf != nullptr;
    take = ended ? static_cast<std::size_t>(lf - bytes.data()) : bytes.size();
  } else {
    take = std::min<std::uint64_t>(remaining_, bytes.size());
    remaining_ -= take;
    ended = remaining_ == 0;
  }
  keep_head(bytes.substr(0, take));
  skipped_ += take;
  if (!ended) return {};
  sink.rejected(FrameRejection::oversized, view(head_), skipped_);
  head_.clear();
  state_ = State::frame_start;
  // A line's LF ends it and goes with it.
  return bytes.substr(skip_to_lf_ ? take + 1 : take);
}

void FrameDecoder::deliver_line(std::string_view line, FrameSink& sink) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!line.empty()) sink.frame(line);
}

void FrameDecoder::deliver_counted(std::string_view message, FrameSink& sink) {
  if (!message.empty() && message.back() == '\n') {
    message.remove_suffix(1);
    deliver_line(message, sink);
  } else if (!message.empty()) {
    sink.frame(message);
  }
}

void FrameDecoder::buffer(std::string_view bytes) {
  const std::size_t needed = buffer_.size() + bytes.size();
  if (needed > buffer_.capacity()) {
    // Doubling, but never past the largest frame (vector::reserve takes exactly what it is asked).
    buffer_.reserve(std::min(std::max(needed, 2 * buffer_.capacity()), limits_.max_frame_bytes));
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

void FrameDecoder::start_skip(std::uint64_t seen, std::uint64_t remaining, bool to_lf) {
  head_.clear();
  skipped_ = seen;
  remaining_ = remaining;
  skip_to_lf_ = to_lf;
  state_ = State::skip;
}

void FrameDecoder::keep_head(std::string_view bytes) {
  if (head_.capacity() < limits_.dead_letter_head) head_.reserve(limits_.dead_letter_head);
  const std::size_t room =
      limits_.dead_letter_head - std::min(head_.size(), limits_.dead_letter_head);
  const std::size_t take = std::min(room, bytes.size());
  head_.insert(head_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(take));
}

void FrameDecoder::fail(std::string what) {
  error_ = std::move(what);
  state_ = State::broken;
  buffer_ = {};
  head_ = {};
}

}  // namespace conveyor::stages
