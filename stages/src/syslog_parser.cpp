// syslog lines: RFC 5424, and RFC 3164 as daemons write it to files (the <pri> is optional).
#include <cstdint>
#include <string_view>

#include "conveyor/stages/parsers.hpp"

namespace conveyor::stages {

namespace {

constexpr std::string_view nil = "-";

bool is_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

// "<pri>" at the start: sets facility and severity, returns the rest; false if malformed.
bool priority(std::string_view& line, Record& record, bool& present) noexcept {
  present = false;
  if (line.empty() || line.front() != '<') return true;
  std::size_t at = 1;
  int value = 0;
  while (at < line.size() && at <= 4 && is_digit(line[at])) {
    value = value * 10 + (line[at] - '0');
    ++at;
  }
  if (at == 1 || at >= line.size() || line[at] != '>' || value > 191) return false;
  record.facility = value / 8;
  record.severity = value % 8;
  line.remove_prefix(at + 1);
  present = true;
  return true;
}

// The next space-separated word; false at the end of the line.
bool word(std::string_view& line, std::string_view& out) noexcept {
  const std::size_t end = line.find(' ');
  if (end == 0 || line.empty()) return false;
  out = line.substr(0, end);
  line = end == std::string_view::npos ? std::string_view{} : line.substr(end + 1);
  return true;
}

ParseError rfc5424(std::string_view line, Record& record) noexcept {
  std::string_view timestamp;
  std::string_view host;
  std::string_view app;
  std::string_view procid;
  std::string_view msgid;
  if (!word(line, timestamp) || !word(line, host) || !word(line, app) || !word(line, procid) ||
      !word(line, msgid)) {
    return "bad RFC 5424 syslog header";
  }
  if (timestamp != nil) {
    record.timestamp = timestamp;
    if (!parse_rfc3339(timestamp, record.time)) return "bad RFC 5424 timestamp";
  }
  if (host != nil) record.host = host;
  if (app != nil) record.program = app;
  if (procid != nil) record.pid = procid;
  if (msgid != nil) record.extra.push_back(Field{"msgid", msgid, false});
  // Structured data: "-" or one or more [id param="value" ...] elements.
  if (line.starts_with(nil)) {
    line.remove_prefix(1);
  } else if (line.starts_with("[")) {
    std::size_t at = 0;
    while (at < line.size() && line[at] == '[') {
      bool in_quotes = false;
      std::size_t i = at + 1;
      for (; i < line.size(); ++i) {
        const char c = line[i];
        if (in_quotes && c == '\\') {
          ++i;
        } else if (c == '"') {
          in_quotes = !in_quotes;
        } else if (c == ']' && !in_quotes) {
          break;
        }
      }
      if (i >= line.size()) return "bad RFC 5424 structured data: no closing ]";
      at = i + 1;
    }
    record.extra.push_back(Field{"structured_data", line.substr(0, at), false});
    line.remove_prefix(at);
  } else {
    return "bad RFC 5424 structured data";
  }
  if (line.starts_with(" ")) line.remove_prefix(1);
  if (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);  // the BOM before a UTF-8 MSG
  record.message = line;
  return nullptr;
}

ParseError rfc3164(std::string_view line, Record& record, int year) noexcept {
  // "Mmm dd hh:mm:ss" (day space-padded), or an RFC 3339 timestamp as rsyslog writes it.
  std::string_view timestamp;
  if (line.size() >= 16 && line[3] == ' ' && line[6] == ' ' && line[9] == ':' && line[12] == ':' &&
      line[15] == ' ') {
    const int month = month_number(line.substr(0, 3));
    const int day = (line[4] == ' ' ? 0 : (line[4] - '0') * 10) + (line[5] - '0');
    const bool numbers = (line[4] == ' ' || is_digit(line[4])) && is_digit(line[5]) &&
                         is_digit(line[7]) && is_digit(line[8]) && is_digit(line[10]) &&
                         is_digit(line[11]) && is_digit(line[13]) && is_digit(line[14]);
    if (month == 0 || !numbers || day < 1 || day > 31) return "bad syslog timestamp";
    const int hour = (line[7] - '0') * 10 + (line[8] - '0');
    const int minute = (line[10] - '0') * 10 + (line[11] - '0');
    const int second = (line[13] - '0') * 10 + (line[14] - '0');
    if (hour > 23 || minute > 59 || second > 60) return "bad syslog timestamp";
    timestamp = line.substr(0, 15);
    record.time = epoch_seconds(year, month, day, hour, minute, second);
    line.remove_prefix(16);
  } else {
    if (!word(line, timestamp) || !parse_rfc3339(timestamp, record.time)) {
      return "not a syslog line: expected a timestamp";
    }
  }
  record.timestamp = timestamp;
  if (!word(line, record.host)) return "not a syslog line: expected a host";
  // TAG[PID]: or TAG: then the message; a line without a tag is all message.
  std::size_t tag_end = 0;
  while (tag_end < line.size() && line[tag_end] != ':' && line[tag_end] != '[' &&
         line[tag_end] != ' ') {
    ++tag_end;
  }
  if (tag_end > 0 && tag_end < line.size() && line[tag_end] == '[') {
    const std::size_t close = line.find(']', tag_end);
    if (close != std::string_view::npos && close + 1 < line.size() && line[close + 1] == ':') {
      record.program = line.substr(0, tag_end);
      record.pid = line.substr(tag_end + 1, close - tag_end - 1);
      line.remove_prefix(close + 2);
    }
  } else if (tag_end > 0 && tag_end < line.size() && line[tag_end] == ':') {
    record.program = line.substr(0, tag_end);
    line.remove_prefix(tag_end + 1);
  }
  if (line.starts_with(" ")) line.remove_prefix(1);
  record.message = line;
  return nullptr;
}

}  // namespace

ParseError parse_syslog(std::string_view line, Record& record, int year) noexcept {
  record = Record{};
  bool has_priority = false;
  if (!priority(line, record, has_priority)) return "bad syslog priority: expected <0-191>";
  if (has_priority && line.size() >= 2 && line[0] == '1' && line[1] == ' ') {
    line.remove_prefix(2);
    return rfc5424(line, record);
  }
  return rfc3164(line, record, year);
}

}  // namespace conveyor::stages
