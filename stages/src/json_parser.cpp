// JSON lines with simdjson's On-Demand API: the usual keys of access logs mapped onto the record,
// every other top-level key kept as it was written.
#include <simdjson.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "conveyor/stages/parsers.hpp"

namespace conveyor::stages {

namespace {

namespace od = simdjson::ondemand;

enum class Slot {
  none,
  time,
  host,
  user,
  method,
  path,
  protocol,
  status,
  bytes,
  referrer,
  agent,
  duration,
  duration_ns,
  nested
};

const std::unordered_map<std::string_view, Slot>& slots() {
  static const std::unordered_map<std::string_view, Slot> table = {
      {"time", Slot::time},
      {"timestamp", Slot::time},
      {"@timestamp", Slot::time},
      {"ts", Slot::time},
      {"StartUTC", Slot::time},
      {"start_time", Slot::time},
      {"remote_addr", Slot::host},
      {"client_ip", Slot::host},
      {"ClientHost", Slot::host},
      {"client", Slot::host},
      {"host", Slot::host},
      {"request.remote_ip", Slot::host},
      {"remote_user", Slot::user},
      {"user", Slot::user},
      {"ClientUsername", Slot::user},
      {"method", Slot::method},
      {"request_method", Slot::method},
      {"RequestMethod", Slot::method},
      {"request.method", Slot::method},
      {"path", Slot::path},
      {"uri", Slot::path},
      {"request_uri", Slot::path},
      {"RequestPath", Slot::path},
      {"url", Slot::path},
      {"request.uri", Slot::path},
      {"protocol", Slot::protocol},
      {"server_protocol", Slot::protocol},
      {"RequestProtocol", Slot::protocol},
      {"request.proto", Slot::protocol},
      {"status", Slot::status},
      {"status_code", Slot::status},
      {"code", Slot::status},
      {"DownstreamStatus", Slot::status},
      {"response.status", Slot::status},
      {"bytes", Slot::bytes},
      {"body_bytes_sent", Slot::bytes},
      {"bytes_sent", Slot::bytes},
      {"size", Slot::bytes},
      {"DownstreamContentSize", Slot::bytes},
      {"referrer", Slot::referrer},
      {"referer", Slot::referrer},
      {"http_referer", Slot::referrer},
      {"request.headers.Referer", Slot::referrer},
      {"agent", Slot::agent},
      {"user_agent", Slot::agent},
      {"http_user_agent", Slot::agent},
      {"request.headers.User-Agent", Slot::agent},
      {"duration", Slot::duration},
      {"Duration", Slot::duration_ns},
      {"request_time", Slot::duration},
      {"response_time", Slot::duration},
      // Objects whose members are mapped above.
      {"request", Slot::nested},
      {"response", Slot::nested},
      {"request.headers", Slot::nested},
  };
  return table;
}

constexpr std::size_t max_name = 64;
constexpr int max_nesting = 4;

std::string_view trim_right(std::string_view text) noexcept {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' ||
                           text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

// A finite number: from_chars also reads "inf" and "nan", which no field may hold.
bool to_number(std::string_view text, double& out) noexcept {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size() && std::isfinite(out);
}

// Epoch seconds, milliseconds, microseconds or nanoseconds, told apart by magnitude (after 1973
// each unit's count has more digits than the coarser one's), within what an int64_t holds and a
// calendar date can show: years 0 to 9999.
bool to_epoch(double number, std::int64_t& out) noexcept {
  constexpr double first = -62167219200.0;  // 0000-01-01T00:00:00Z
  constexpr double last = 253402300799.0;   // 9999-12-31T23:59:59Z
  const double seconds = number > 1e17   ? number / 1e9
                         : number > 1e14 ? number / 1e6
                         : number > 1e11 ? number / 1e3
                                         : number;
  if (seconds < first || seconds > last) return false;
  out = static_cast<std::int64_t>(seconds);
  return true;
}

class Mapper {
 public:
  Mapper(Record& record, Arena& arena) noexcept : record_(record), arena_(arena) {}

  // A value's text: a string's contents (unescaped into the arena when it had escapes), or the
  // token of a number, true, false or null.
  simdjson::error_code scalar(od::value& value, std::string_view& text, bool& is_string) {
    std::string_view token;
    token = trim_right(value.raw_json_token());
    is_string = !token.empty() && token.front() == '"';
    if (!is_string) {
      text = token;
      return simdjson::SUCCESS;
    }
    if (token.size() < 2) return simdjson::STRING_ERROR;
    const std::string_view inner = token.substr(1, token.size() - 2);
    if (inner.find('\\') == std::string_view::npos) {
      text = inner;  // a view into the line itself
      return simdjson::SUCCESS;
    }
    std::string_view unescaped;
    if (auto error = value.get_string().get(unescaped)) return error;
    text = arena_.emplace_back(unescaped);
    return simdjson::SUCCESS;
  }

  simdjson::error_code object(od::object object, std::string_view prefix, int depth) {
    for (auto member : object) {
      std::string_view key;
      if (auto error = member.unescaped_key().get(key)) return error;
      od::value value;
      if (auto error = member.value().get(value)) return error;
      if (prefix.size() + key.size() + 1 > max_name) {
        if (auto error = skip(value)) return error;
        continue;
      }
      std::array<char, max_name> buffer{};
      std::size_t length = 0;
      for (const char c : prefix)
        buffer[length++] = c;
      if (!prefix.empty()) buffer[length++] = '.';
      for (const char c : key)
        buffer[length++] = c;
      const std::string_view name(buffer.data(), length);
      const auto found = slots().find(name);
      const Slot slot = found == slots().end() ? Slot::none : found->second;
      od::json_type type{};
      if (auto error = value.type().get(type)) return error;
      if (slot == Slot::nested && type == od::json_type::object && depth < max_nesting) {
        od::object inner;
        if (auto error = value.get_object().get(inner)) return error;
        if (auto error = object_of(inner, name, depth + 1)) return error;
        continue;
      }
      if (type == od::json_type::object || type == od::json_type::array) {
        if (!prefix.empty()) {
          if (auto error = skip(value)) return error;
          continue;
        }
        std::string_view raw;
        if (type == od::json_type::object) {
          od::object inner;
          if (auto error = value.get_object().get(inner)) return error;
          if (auto error = inner.raw_json().get(raw)) return error;
        } else {
          od::array inner;
          if (auto error = value.get_array().get(inner)) return error;
          if (auto error = inner.raw_json().get(raw)) return error;
        }
        if (slot == Slot::none) keep(key, trim_right(raw), true);
        continue;
      }
      std::string_view text;
      bool is_string = false;
      if (auto error = scalar(value, text, is_string)) return error;
      if (slot == Slot::none || !assign(slot, text, is_string)) {
        if (prefix.empty()) keep(key, text, !is_string);
      }
    }
    return simdjson::SUCCESS;
  }

 private:
  // Named so because a recursive call from a range-for over `object` reads oddly otherwise.
  simdjson::error_code object_of(od::object inner, std::string_view name, int depth) {
    const std::string_view stable = arena_.emplace_back(name);
    return object(inner, stable, depth);
  }

  static simdjson::error_code skip(od::value& value) {
    std::string_view ignored;
    od::json_type type{};
    if (auto error = value.type().get(type)) return error;
    if (type == od::json_type::object) {
      od::object inner;
      if (auto error = value.get_object().get(inner)) return error;
      return inner.raw_json().get(ignored);
    }
    if (type == od::json_type::array) {
      od::array inner;
      if (auto error = value.get_array().get(inner)) return error;
      return inner.raw_json().get(ignored);
    }
    ignored = value.raw_json_token();
    return simdjson::SUCCESS;
  }

  void keep(std::string_view key, std::string_view value, bool raw) {
    // The key may live in simdjson's buffer, which the next line reuses.
    const std::string_view stable = arena_.emplace_back(key);
    record_.extra.push_back(Field{stable, value, raw});
  }

  // False when the value does not fit the slot (then it is kept as an extra field).
  bool assign(Slot slot, std::string_view text, bool is_string) {
    double number = 0;
    switch (slot) {
      case Slot::time:
        // RFC 3339 or CLF text, or epoch seconds to nanoseconds as a number or in a string.
        if (!(is_string &&
              (parse_rfc3339(text, record_.time) || parse_clf_time(text, record_.time))) &&
            !(to_number(text, number) && to_epoch(number, record_.time))) {
          return false;
        }
        record_.timestamp = text;
        return true;
      case Slot::status:
        if (!to_number(text, number) || number < 100 || number > 999) return false;
        record_.status = static_cast<int>(number);
        return true;
      case Slot::bytes:
        // Below 2^63, so that it converts.
        if (!to_number(text, number) || number < 0 || number >= 9.2e18) return false;
        record_.bytes = static_cast<std::int64_t>(number);
        return true;
      case Slot::duration:
      case Slot::duration_ns:
        if (!to_number(text, number) || number < 0) return false;
        record_.duration = slot == Slot::duration_ns ? number / 1e9 : number;
        return true;
      default:
        break;
    }
    if (!is_string) return false;
    std::string_view* field = nullptr;
    switch (slot) {
      case Slot::host:
        field = &record_.host;
        break;
      case Slot::user:
        field = &record_.user;
        break;
      case Slot::method:
        field = &record_.method;
        break;
      case Slot::path:
        field = &record_.path;
        break;
      case Slot::protocol:
        field = &record_.protocol;
        break;
      case Slot::referrer:
        field = &record_.referrer;
        break;
      case Slot::agent:
        field = &record_.agent;
        break;
      default:
        return false;
    }
    if (!field->empty()) return false;  // the first key that maps wins
    *field = text == "-" ? std::string_view{} : text;
    return true;
  }

  Record& record_;
  Arena& arena_;
};

}  // namespace

struct JsonParser::State {
  // On-Demand reads only what it is asked for: a kept field's raw token (a number, an object) is
  // not checked, yet it is written back as it was. The DOM parser checks the whole line first, so
  // that only valid JSON becomes a record. It runs the best kernel for the CPU (runtime dispatch).
  simdjson::dom::parser validator;
  od::parser parser;
  std::string padded;  // the line, with the padding simdjson reads past the end
};

JsonParser::JsonParser() : state_(std::make_unique<State>()) {}
JsonParser::~JsonParser() = default;

ParseError JsonParser::parse(std::string_view line, std::size_t capacity, Record& record,
                             Arena& arena) noexcept {
  record = Record{};
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
    line.remove_prefix(1);
    --capacity;  // counted from the line's first byte, which just moved
  }
  if (line.empty() || line.front() != '{') return "not a JSON object";
  try {
    const char* data = line.data();
    if (capacity < line.size() + simdjson::SIMDJSON_PADDING) {
      state_->padded.assign(line);
      state_->padded.resize(line.size() + simdjson::SIMDJSON_PADDING, '\0');
      data = state_->padded.data();
      capacity = state_->padded.size();
    }
    if (state_->validator.parse(data, line.size(), false).error()) return "bad JSON";
    od::document document;
    if (state_->parser.iterate(data, line.size(), capacity).get(document)) return "bad JSON";
    od::object object;
    if (document.get_object().get(object)) return "not a JSON object";
    Mapper mapper(record, arena);
    if (mapper.object(object, {}, 0) != simdjson::SUCCESS) return "bad JSON";
    if (data != line.data()) {
      // Views into the padded copy would dangle: point them at the same bytes of the line.
      const auto rebase = [&](std::string_view& view) {
        if (view.data() >= data && view.data() < data + capacity) {
          view = line.substr(static_cast<std::size_t>(view.data() - data), view.size());
        }
      };
      for (std::string_view* view :
           {&record.timestamp, &record.host, &record.user, &record.method, &record.path,
            &record.protocol, &record.referrer, &record.agent}) {
        rebase(*view);
      }
      for (Field& field : record.extra)
        rebase(field.value);
    }
  } catch (...) {
    return "bad JSON";  // allocation failure in the arena; the line is dead-lettered
  }
  return nullptr;
}

}  // namespace conveyor::stages
