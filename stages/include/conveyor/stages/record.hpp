// Record: one parsed log line, as views into the text it was parsed from.
//
// A record does not own its strings: they point into the chunk of input it came from, or into the
// arena of the batch it travels in (JSON strings with escapes are unescaped there). Whoever holds
// records also holds that storage (see Batch in batch.hpp).
//
// Fields that a format does not have stay at their "absent" values: an empty view, -1 for status,
// bytes, severity and facility, no time, and NaN for duration.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

namespace conveyor::stages {

// A field that the format has but the record has no member for (JSON's other keys, syslog's
// structured data). `number` says whether `value` is a JSON number (written without quotes).
struct Field {
  std::string_view name;
  std::string_view value;
  bool number = false;
};

struct Record {
  static constexpr std::int64_t no_time = std::numeric_limits<std::int64_t>::min();

  std::int64_t time = no_time;  // seconds since the epoch, UTC
  std::string_view timestamp;   // as written in the line
  bool time_unparsed = false;   // the line has a time field, but not in a form that was understood
  std::string_view host;        // the client (access logs) or the sending host (syslog)
  std::string_view user;
  std::string_view method;
  std::string_view path;
  std::string_view protocol;
  int status = -1;
  std::int64_t bytes = -1;
  std::string_view referrer;
  std::string_view agent;
  double duration = std::numeric_limits<double>::quiet_NaN();  // seconds, when the log has it
  // syslog
  int facility = -1;
  int severity = -1;
  std::string_view program;
  std::string_view pid;
  std::string_view message;
  std::vector<Field> extra;

  [[nodiscard]] bool has_time() const noexcept { return time != no_time; }
  [[nodiscard]] bool has_duration() const noexcept { return !std::isnan(duration); }
};

// The input formats; `auto_detect` is resolved per input from its first lines.
enum class Format { auto_detect, common, combined, json, syslog };

[[nodiscard]] std::string_view to_string(Format format) noexcept;
// "auto", "common", "combined", "json", "syslog"; nullopt otherwise.
[[nodiscard]] std::optional<Format> parse_format(std::string_view name) noexcept;

}  // namespace conveyor::stages
