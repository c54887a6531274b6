// The NCSA common and Apache combined log formats, by hand: one pass, no allocation, no regex.
//   host ident user [dd/Mon/yyyy:HH:MM:SS +zzzz] "request" status bytes ["referrer" "agent"]
#include <cstdint>
#include <cstring>
#include <string_view>

#include "conveyor/stages/parsers.hpp"

namespace conveyor::stages {

namespace {

class Cursor {
 public:
  explicit Cursor(std::string_view text) noexcept : text_(text) {}

  [[nodiscard]] bool done() const noexcept { return at_ >= text_.size(); }
  [[nodiscard]] char peek() const noexcept { return done() ? '\0' : text_[at_]; }
  [[nodiscard]] std::string_view rest() const noexcept { return text_.substr(at_); }

  // Up to the next space (not empty); the space is consumed.
  bool token(std::string_view& out) noexcept {
    const std::size_t end = text_.find(' ', at_);
    if (end == at_ || end == std::string_view::npos) return false;
    out = text_.substr(at_, end - at_);
    at_ = end + 1;
    return true;
  }
  // Up to the next space or the end (not empty).
  bool last_token(std::string_view& out) noexcept {
    std::size_t end = text_.find(' ', at_);
    if (end == std::string_view::npos) end = text_.size();
    if (end == at_) return false;
    out = text_.substr(at_, end - at_);
    at_ = end;
    return true;
  }
  bool expect(char c) noexcept {
    if (peek() != c) return false;
    ++at_;
    return true;
  }
  // `[` ... `]`
  bool bracketed(std::string_view& out) noexcept {
    if (!expect('[')) return false;
    const std::size_t end = text_.find(']', at_);
    if (end == std::string_view::npos) return false;
    out = text_.substr(at_, end - at_);
    at_ = end + 1;
    return true;
  }
  // `"` ... `"`, where `\"` does not end it (Apache escapes quotes in the request so).
  // A quote ends it when the backslashes right before it, if any, are an even number.
  bool quoted(std::string_view& out) noexcept {
    if (!expect('"')) return false;
    std::size_t from = at_;
    for (;;) {
      const void* found = std::memchr(text_.data() + from, '"', text_.size() - from);
      if (found == nullptr) return false;
      const auto quote = static_cast<std::size_t>(static_cast<const char*>(found) - text_.data());
      std::size_t backslashes = 0;
      while (quote - backslashes > at_ && text_[quote - backslashes - 1] == '\\')
        ++backslashes;
      if (backslashes % 2 == 0) {
        out = text_.substr(at_, quote - at_);
        at_ = quote + 1;
        return true;
      }
      from = quote + 1;
    }
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
};

bool number(std::string_view text, std::int64_t& value) noexcept {
  if (text.empty() || text.size() > 18) return false;
  value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

// "METHOD path PROTOCOL"; a request that is not three words (garbage, "-") is kept whole as the
// path, as Apache logs it.
void split_request(std::string_view request, Record& record) noexcept {
  const std::size_t first = request.find(' ');
  const std::size_t last = request.rfind(' ');
  if (first == std::string_view::npos) {
    record.path = request;
    return;
  }
  record.method = request.substr(0, first);
  if (last != first && request.substr(last + 1).starts_with("HTTP/")) {
    record.path = request.substr(first + 1, last - first - 1);
    record.protocol = request.substr(last + 1);
  } else {
    record.path = request.substr(first + 1);
  }
}

ParseError parse_clf(std::string_view line, Record& record, bool combined) noexcept {
  Cursor in(line);
  std::string_view ident;
  if (!in.token(record.host) || !in.token(ident) || !in.token(record.user)) {
    return "not an access log line: expected host, ident and user";
  }
  if (!in.bracketed(record.timestamp)) return "not an access log line: expected [time]";
  if (!parse_clf_time(record.timestamp, record.time))
    return "bad time: expected dd/Mon/yyyy:HH:MM:SS +zzzz";
  std::string_view request;
  if (!in.expect(' ') || !in.quoted(request)) return "not an access log line: expected \"request\"";
  split_request(request, record);
  std::string_view status;
  std::string_view bytes;
  std::int64_t value = 0;
  if (!in.expect(' ') || !in.token(status)) {
    return "not an access log line: expected status and size";
  }
  if (!number(status, value) || value < 100 || value > 999) return "bad status: expected 100-999";
  record.status = static_cast<int>(value);
  // Common lines end after the size; `token` needs a space after it, so take the last token.
  if (!in.last_token(bytes)) return "not an access log line: expected size";
  if (bytes == "-") {
    record.bytes = 0;
  } else if (number(bytes, value)) {
    record.bytes = value;
  } else {
    return "bad size: expected a number or -";
  }
  if (!combined) {
    while (in.peek() == ' ')
      in.expect(' ');
    return in.done() ? nullptr : "not a common log line: text after the size";
  }
  if (!in.expect(' ') || !in.quoted(record.referrer)) {
    return "not a combined log line: expected \"referrer\"";
  }
  if (!in.expect(' ') || !in.quoted(record.agent)) {
    return "not a combined log line: expected \"user agent\"";
  }
  if (record.referrer == "-") record.referrer = {};
  if (record.agent == "-") record.agent = {};
  // Some servers append fields (response time, virtual host): kept as the message.
  while (in.peek() == ' ')
    in.expect(' ');
  record.message = in.rest();
  return nullptr;
}

}  // namespace

ParseError parse_common(std::string_view line, Record& record) noexcept {
  record = Record{};
  const ParseError error = parse_clf(line, record, false);
  if (error == nullptr && record.user == "-") record.user = {};
  return error;
}

ParseError parse_combined(std::string_view line, Record& record) noexcept {
  record = Record{};
  const ParseError error = parse_clf(line, record, true);
  if (error == nullptr && record.user == "-") record.user = {};
  return error;
}

}  // namespace conveyor::stages
