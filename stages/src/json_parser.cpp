// JSON lines with simdjson's On-Demand API: the usual keys of access logs mapped onto the record,
// every other top-level key kept as it was written.
#include <simdjson.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

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
  duration_ns
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
      // Caddy and Traefik
      {"request.client_ip", Slot::host},
      {"request_User-Agent", Slot::agent},
      {"request_Referer", Slot::referrer},
      // Elastic Common Schema
      {"source.ip", Slot::host},
      {"source.address", Slot::host},
      {"client.ip", Slot::host},
      {"client.address", Slot::host},
      {"user.name", Slot::user},
      {"http.request.method", Slot::method},
      {"url.path", Slot::path},
      {"url.original", Slot::path},
      {"http.version", Slot::protocol},
      {"http.response.status_code", Slot::status},
      {"http.response.body.bytes", Slot::bytes},
      {"http.response.bytes", Slot::bytes},
      {"http.request.referrer", Slot::referrer},
      {"user_agent.original", Slot::agent},
      {"event.duration", Slot::duration_ns},
  };
  return table;
}

// The objects that hold a mapped key ("request" and "request.headers" for
// "request.headers.Referer"): their members are read as dotted names.
const std::unordered_set<std::string_view>& nested() {
  static const std::unordered_set<std::string_view> prefixes = [] {
    std::unordered_set<std::string_view> found;
    for (const auto& [name, slot] : slots()) {
      for (std::size_t dot = name.find('.'); dot != std::string_view::npos;
           dot = name.find('.', dot + 1)) {
        found.insert(name.substr(0, dot));
      }
    }
    return found;
  }();
  return prefixes;
}

// The names a record is written with (json_writer.cpp): a kept key with one of them is renamed.
const std::unordered_set<std::string_view>& record_field_names() {
  static const std::unordered_set<std::string_view> names = {
      "time",  "host",     "user",      "method",   "path",     "protocol", "status",
      "bytes", "referrer", "agent",     "duration", "facility", "severity", "program",
      "pid",   "message",  "timestamp", "input",    "line",     "file",     "offset"};
  return names;
}

constexpr std::size_t max_name = 64;
constexpr int max_nesting = 4;
// Deeper lines are rejected: On-Demand must not descend past its parser's depth (1024).
constexpr int max_depth = 256;

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
// A whole number is divided as an integer (a double holds a nanosecond count to 256 ns only, and
// rounding it could reach the next second); either way the seconds are rounded down, so that
// -1.5 is a second and a half before the epoch.
bool to_epoch(std::string_view text, std::int64_t& out) noexcept {
  double number = 0;
  if (!to_number(text, number)) return false;
  constexpr double first = -62167219200.0;  // 0000-01-01T00:00:00Z
  constexpr double last = 253402300799.0;   // 9999-12-31T23:59:59Z
  const std::int64_t unit = number > 1e17   ? 1'000'000'000
                            : number > 1e14 ? 1'000'000
                            : number > 1e11 ? 1'000
                                            : 1;
  const double seconds = number / static_cast<double>(unit);
  if (seconds < first || seconds > last) return false;
  std::int64_t whole = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), whole);
  if (error == std::errc() && end == text.data() + text.size()) {
    out = whole / unit - (whole % unit < 0 ? 1 : 0);
    return true;
  }
  out = static_cast<std::int64_t>(std::floor(seconds));
  return true;
}

// Reads a line's object once, front to back: every value is either mapped, kept, or checked and
// passed over, so that a line is a record only if all of it is valid JSON.
class Mapper {
 public:
  Mapper(od::document& document, Record& record, Arena& arena) noexcept
      : document_(document), record_(record), arena_(arena) {}

  simdjson::error_code object(od::object object, std::string_view prefix, int depth) {
    for (auto field : object) {
      std::string_view key;
      if (auto error = field.unescaped_key().get(key)) return error;
      od::value value;
      if (auto error = field.value().get(value)) return error;
      od::json_type type{};
      if (auto error = value.type().get(type)) return error;
      const std::string_view token = trim_right(value.raw_json_token());
      if (auto error = member(key, value, type, prefix, depth)) return error;
      if (depth > 0) continue;
      if (type == od::json_type::object || type == od::json_type::array) {
        if (auto error = document_.current_location().get(end_)) return error;
      } else {
        end_ = token.data() + token.size();
      }
    }
    return simdjson::SUCCESS;
  }

  // Whether the top-level object's members that were read reach its closing brace at the end of
  // the line. On-Demand (simdjson 3.0) can end an object's loop early, without an error, on some
  // lines that are not JSON; this catches them.
  [[nodiscard]] bool read_to_the_end(const char* object_start, const char* line_end) const {
    const char* at = end_ == nullptr ? object_start + 1 : end_;
    const auto blanks = [&] {
      while (at < line_end && (*at == ' ' || *at == '\t' || *at == '\n' || *at == '\r'))
        ++at;
    };
    blanks();
    if (at == line_end || *at != '}') return false;
    ++at;
    blanks();
    return at == line_end;
  }

 private:
  // One member: mapped onto the record, kept in `extra` (top level only), or only checked. A
  // top-level value is always kept when nothing was taken from it, and an object whose members
  // were read is kept whole as well, so that nothing the line holds is lost.
  simdjson::error_code member(std::string_view key, od::value& value, od::json_type type,
                              std::string_view prefix, int depth) {
    const bool top = prefix.empty();
    const char* const start = value.raw_json_token().data();
    const bool container = type == od::json_type::object || type == od::json_type::array;
    std::array<char, max_name> buffer{};
    std::size_t length = 0;
    const bool named = prefix.size() + key.size() + 1 <= max_name;
    if (named) {
      for (const char c : prefix)
        buffer[length++] = c;
      if (!prefix.empty()) buffer[length++] = '.';
      for (const char c : key)
        buffer[length++] = c;
    }
    const std::string_view name(buffer.data(), length);
    bool taken = false;
    if (named && type == od::json_type::object && depth < max_nesting && nested().contains(name)) {
      od::object inner;
      if (auto error = value.get_object().get(inner)) return error;
      if (auto error = object_of(inner, name, depth + 1)) return error;
    } else if (const Slot slot = named ? slot_of(name) : Slot::none;
               type == od::json_type::array && slot != Slot::none) {
      // Caddy writes headers as arrays of strings: the first one is the value.
      if (auto error = first_of(value, slot, taken)) return error;
    } else if (container) {
      if (!top) return check(value);
      std::string_view raw;
      if (auto error = checked_raw(value, start, raw)) return error;
      keep(key, raw, true);
      return simdjson::SUCCESS;
    } else {
      std::string_view text;
      bool is_string = false;
      if (auto error = scalar(value, type, text, is_string)) return error;
      if ((slot == Slot::none || !assign(slot, text, is_string)) && top) {
        keep(key, text, !is_string);
      }
      return simdjson::SUCCESS;
    }
    if (top && !taken) {
      // An object that was read member by member, or an array that gave nothing: kept whole.
      const char* end = nullptr;
      if (auto error = document_.current_location().get(end)) return error;
      keep(key, trim_right(std::string_view(start, static_cast<std::size_t>(end - start))), true);
    }
    return simdjson::SUCCESS;
  }

  static Slot slot_of(std::string_view name) {
    const auto found = slots().find(name);
    return found == slots().end() ? Slot::none : found->second;
  }

  // Named so because a recursive call from a range-for over `object` reads oddly otherwise.
  simdjson::error_code object_of(od::object inner, std::string_view name, int depth) {
    const std::string_view stable = arena_.emplace_back(name);
    return object(inner, stable, depth);
  }

  // A scalar's text: a string's contents (unescaped into the arena when it had escapes), or the
  // token of a number, true, false or null, checked.
  simdjson::error_code scalar(od::value& value, od::json_type type, std::string_view& text,
                              bool& is_string) {
    const std::string_view token = trim_right(value.raw_json_token());
    is_string = type == od::json_type::string;
    if (!is_string) {
      text = token;
      return check(value);
    }
    if (token.size() < 2) return simdjson::STRING_ERROR;
    const std::string_view inner = token.substr(1, token.size() - 2);
    if (inner.find('\\') == std::string_view::npos) {
      // A view into the line itself; its bytes were checked when it was indexed. The value is
      // still consumed: On-Demand skips an unread value by counting brackets, not by grammar.
      text = inner;
      od::raw_json_string consumed;
      return value.get_raw_json_string().get(consumed);
    }
    std::string_view unescaped;
    if (auto error = value.get_string().get(unescaped)) return error;
    text = arena_.emplace_back(unescaped);
    return simdjson::SUCCESS;
  }

  // The first element of an array, when it is a string, into `slot`; every element is checked.
  simdjson::error_code first_of(od::value& value, Slot slot, bool& taken) {
    od::array array;
    if (auto error = value.get_array().get(array)) return error;
    bool first = true;
    for (auto element : array) {
      od::value item;
      if (auto error = element.get(item)) return error;
      od::json_type type{};
      if (auto error = item.type().get(type)) return error;
      if (!first || type != od::json_type::string) {
        if (auto error = check(item)) return error;
        continue;
      }
      first = false;
      std::string_view text;
      bool is_string = false;
      if (auto error = scalar(item, type, text, is_string)) return error;
      taken = assign(slot, text, is_string);
    }
    return simdjson::SUCCESS;
  }

  // An object or array, checked, as it was written.
  simdjson::error_code checked_raw(od::value& value, const char* start, std::string_view& raw) {
    if (auto error = check(value)) return error;
    const char* end = nullptr;
    if (auto error = document_.current_location().get(end)) return error;
    raw = trim_right(std::string_view(start, static_cast<std::size_t>(end - start)));
    return simdjson::SUCCESS;
  }

  // Reads a value to its end, so that anything that is not valid JSON is an error.
  static simdjson::error_code check(od::value& value, int depth = 1) {
    if (depth > max_depth) return simdjson::DEPTH_ERROR;
    od::json_type type{};
    if (auto error = value.type().get(type)) return error;
    switch (type) {
      case od::json_type::object: {
        od::object object;
        if (auto error = value.get_object().get(object)) return error;
        for (auto member : object) {
          std::string_view key;
          if (auto error = member.unescaped_key().get(key)) return error;
          od::value inner;
          if (auto error = member.value().get(inner)) return error;
          if (auto error = check(inner, depth + 1)) return error;
        }
        return simdjson::SUCCESS;
      }
      case od::json_type::array: {
        od::array array;
        if (auto error = value.get_array().get(array)) return error;
        for (auto element : array) {
          od::value inner;
          if (auto error = element.get(inner)) return error;
          if (auto error = check(inner, depth + 1)) return error;
        }
        return simdjson::SUCCESS;
      }
      case od::json_type::string:
        return value.get_string().error();
      case od::json_type::number:
        return value.get_number().error();
      case od::json_type::boolean:
        return value.get_bool().error();
      case od::json_type::null: {
        bool null = false;
        if (auto error = value.is_null().get(null)) return error;
        return null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
      }
    }
    return simdjson::INCORRECT_TYPE;
  }

  // A key that is also the name of a field the record is written with gets a '_' in front, so
  // that no written object has a name twice.
  void keep(std::string_view key, std::string_view value, bool raw) {
    // The key may live in simdjson's buffer, which the next line reuses.
    const std::string_view stable = record_field_names().contains(key)
                                        ? arena_.emplace_back("_").append(key)
                                        : arena_.emplace_back(key);
    record_.extra.push_back(Field{stable, value, raw});
  }

  // False when the value does not fit the slot (then it is kept as an extra field).
  bool assign(Slot slot, std::string_view text, bool is_string) {
    double number = 0;
    switch (slot) {
      case Slot::time: {
        // RFC 3339 or CLF text, or epoch seconds to nanoseconds as a number or in a string.
        if (record_.has_time()) return false;  // the first key that maps wins
        std::int64_t time = 0;
        if (!(is_string && (parse_rfc3339(text, time) || parse_clf_time(text, time))) &&
            !to_epoch(text, time)) {
          record_.time_unparsed = true;  // counted, and kept as an extra field
          return false;
        }
        record_.time = time;
        record_.timestamp = text;
        record_.time_unparsed = false;
        return true;
      }
      case Slot::status:
        if (record_.status >= 0 || !to_number(text, number) || number < 100 || number > 999) {
          return false;
        }
        record_.status = static_cast<int>(number);
        return true;
      case Slot::bytes:
        // Below 2^63, so that it converts.
        if (record_.bytes >= 0 || !to_number(text, number) || number < 0 || number >= 9.2e18) {
          return false;
        }
        record_.bytes = static_cast<std::int64_t>(number);
        return true;
      case Slot::duration:
      case Slot::duration_ns:
        if (record_.has_duration() || !to_number(text, number) || number < 0) return false;
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

  od::document& document_;
  Record& record_;
  Arena& arena_;
  const char* end_ = nullptr;  // just past the last top-level value read
};

}  // namespace

struct JsonParser::State {
  // One On-Demand pass per line; Mapper reads every value, so the pass also validates the line.
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
    od::document document;
    if (state_->parser.iterate(data, line.size(), capacity).get(document)) return "bad JSON";
    od::object object;
    if (document.get_object().get(object)) return "not a JSON object";
    Mapper mapper(document, record, arena);
    if (mapper.object(object, {}, 0) != simdjson::SUCCESS) return "bad JSON";
    if (!mapper.read_to_the_end(data, data + line.size())) return "bad JSON";
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
