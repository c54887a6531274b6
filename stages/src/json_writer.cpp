// JSON lines for records and dead letters.
#include "conveyor/stages/json_writer.hpp"

#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace conveyor::stages {

namespace {

// Length of the valid UTF-8 sequence at text[at], or 0.
std::size_t utf8_length(std::string_view text, std::size_t at) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  std::size_t length = 0;
  unsigned minimum = 0;
  unsigned code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, minimum = 0x80, code = lead & 0x1FU;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, minimum = 0x800, code = lead & 0x0FU;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, minimum = 0x10000, code = lead & 0x07U;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0U) != 0x80U) return 0;
    code = (code << 6U) | (byte(at + i) & 0x3FU);
  }
  if (code < minimum || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

void append_number(std::string& out, std::int64_t value) {
  std::array<char, 24> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  out.append(buffer.data(), result.ptr);
}

void append_double(std::string& out, double value) {
  std::array<char, 32> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  out.append(buffer.data(), result.ptr);
}

class ObjectWriter {
 public:
  explicit ObjectWriter(std::string& out) : out_(out) { out_ += '{'; }
  // A name that may need escaping: from the input (JSON lines' extra fields) or the user.
  void key(std::string_view name) {
    if (!first_) out_ += ',';
    first_ = false;
    append_json_string(out_, name);
    out_ += ':';
  }
  // One of our own keys, which need no escaping, written as `,"name":` so that it is one append.
  void plain_key(std::string_view comma_quoted) {
    out_.append(first_ ? comma_quoted.substr(1) : comma_quoted);
    first_ = false;
  }
  void text(std::string_view name, std::string_view value) {
    key(name);
    append_json_string(out_, value);
  }
  void close() { out_ += "}\n"; }

  std::string& out() { return out_; }

 private:
  std::string& out_;
  bool first_ = true;
};

// The record's own fields, in the order a record is written when no projection is given.
enum class FieldId {
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
  facility,
  severity,
  program,
  pid,
  message,
  timestamp,  // the time as written in the input; only when asked for
  input,      // the input's name; only when asked for
  line,       // the line number; only when asked for
  file,       // a tailed file's path; by default for tailed files
  offset,     // the line's offset in that file; by default for tailed files
  none,       // not one of these: an extra field of a JSON line, or nothing
};

constexpr std::string_view field_keys[] = {
    ",\"time\":",     ",\"host\":",      ",\"user\":",     ",\"method\":",   ",\"path\":",
    ",\"protocol\":", ",\"status\":",    ",\"bytes\":",    ",\"referrer\":", ",\"agent\":",
    ",\"duration\":", ",\"facility\":",  ",\"severity\":", ",\"program\":",  ",\"pid\":",
    ",\"message\":",  ",\"timestamp\":", ",\"input\":",    ",\"line\":",     ",\"file\":",
    ",\"offset\":"};
constexpr FieldId last_default_field = FieldId::message;

// "time" of `,"time":`
constexpr std::string_view field_name(std::string_view key) noexcept {
  return key.substr(2, key.size() - 4);
}

FieldId field_id(std::string_view name) noexcept {
  for (std::size_t i = 0; i < std::size(field_keys); ++i) {
    if (field_name(field_keys[i]) == name) return static_cast<FieldId>(i);
  }
  return FieldId::none;
}

// Writes the field `id` if the record has it.
void write_field(ObjectWriter& w, FieldId id, const Record& r, const Input& input,
                 std::uint64_t line, std::uint64_t offset) {
  const std::string_view key = field_keys[static_cast<std::size_t>(id)];
  std::string& out = w.out();
  const auto text = [&](std::string_view value) {
    if (value.empty()) return;
    w.plain_key(key);
    append_json_string(out, value);
  };
  const auto number = [&](std::int64_t value, bool present) {
    if (!present) return;
    w.plain_key(key);
    append_number(out, value);
  };
  switch (id) {
    case FieldId::time:
      if (r.has_time()) {
        w.plain_key(key);
        out += '"';
        append_time(out, r.time);  // digits, '-', ':', 'T' and 'Z': nothing to escape
        out += '"';
      }
      break;
    case FieldId::timestamp:
      text(r.timestamp);
      break;
    case FieldId::host:
      text(r.host);
      break;
    case FieldId::user:
      text(r.user);
      break;
    case FieldId::method:
      text(r.method);
      break;
    case FieldId::path:
      text(r.path);
      break;
    case FieldId::protocol:
      text(r.protocol);
      break;
    case FieldId::status:
      number(r.status, r.status >= 0);
      break;
    case FieldId::bytes:
      number(r.bytes, r.bytes >= 0);
      break;
    case FieldId::referrer:
      text(r.referrer);
      break;
    case FieldId::agent:
      text(r.agent);
      break;
    case FieldId::duration:
      if (r.has_duration()) {
        w.plain_key(key);
        append_double(out, r.duration);
      }
      break;
    case FieldId::facility:
      number(r.facility, r.facility >= 0);
      break;
    case FieldId::severity:
      number(r.severity, r.severity >= 0);
      break;
    case FieldId::program:
      text(r.program);
      break;
    case FieldId::pid:
      text(r.pid);
      break;
    case FieldId::message:
      text(r.message);
      break;
    case FieldId::input:
      w.plain_key(key);
      append_json_string(out, input.name);
      break;
    case FieldId::line:
      number(static_cast<std::int64_t>(line), line != 0);
      break;
    case FieldId::file:
      text(input.file);
      break;
    case FieldId::offset:
      number(static_cast<std::int64_t>(offset), !input.file.empty() && offset != unknown_offset);
      break;
    case FieldId::none:
      break;
  }
}

void write_extra(ObjectWriter& w, const Field& field) {
  if (field.number) {
    w.key(field.name);
    w.out() += field.value;
  } else {
    w.text(field.name, field.value);
  }
}

// Whether any of the 8 bytes in `word` needs a look: a control character, '"', '\\' or a byte of
// a multi-byte UTF-8 sequence (the usual zero-byte tests on a 64-bit word).
constexpr bool needs_look(std::uint64_t word) noexcept {
  constexpr std::uint64_t ones = 0x0101010101010101ULL;
  constexpr std::uint64_t highs = 0x8080808080808080ULL;
  const auto has_zero = [](std::uint64_t x) { return ((x - ones) & ~x & highs) != 0; };
  const bool control = ((word - ones * 0x20) & ~word & highs) != 0;
  return control || (word & highs) != 0 || has_zero(word ^ (ones * '"')) ||
         has_zero(word ^ (ones * '\\'));
}

#if defined(__SSE2__)
constexpr bool wide_scan = true;
// How many of the 16 bytes at `p` need no look, counted from the first: 16 when none does. The
// signed compare below 0x20 catches control characters and the bytes of multi-byte UTF-8 alike.
inline unsigned plain_prefix_16(const char* p) noexcept {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i quote = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('"'));
  const __m128i backslash = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\'));
  const __m128i low_or_high = _mm_cmplt_epi8(bytes, _mm_set1_epi8(0x20));
  const auto mask = static_cast<unsigned>(
      _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), low_or_high)));
  return mask == 0 ? 16U : static_cast<unsigned>(__builtin_ctz(mask));
}
#else
constexpr bool wide_scan = false;
inline unsigned plain_prefix_16(const char*) noexcept {
  return 0;
}
#endif

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  std::size_t run = 0;       // start of the bytes that need no escaping
  std::size_t bytewise = 0;  // below this, a word had something to look at: byte by byte
  for (std::size_t i = 0; i < text.size();) {
    // Plain ASCII sixteen bytes at a time, straight to the first byte that needs a look.
    if (wide_scan && i + 16 <= text.size()) {
      const unsigned plain = plain_prefix_16(text.data() + i);
      i += plain;
      if (plain == 16) continue;
    } else if (i >= bytewise && i + 8 <= text.size()) {
      // Eight bytes at a time, for the tail (or without SSE2).
      std::uint64_t word = 0;
      std::memcpy(&word, text.data() + i, sizeof word);
      if (!needs_look(word)) {
        i += 8;
        continue;
      }
      bytewise = i + 8;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 1;
    if (c >= 0x80) {
      length = utf8_length(text, i);
      if (length > 0) {
        i += length;
        continue;
      }
      length = 1;
    }
    out.append(text.data() + run, i - run);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c >= 0x80) {
          out += "\\ufffd";
        } else {
          out += "\\u00";
          out += hex[c >> 4U];
          out += hex[c & 0xFU];
        }
    }
    i += length;
    run = i;
  }
  out.append(text.data() + run, text.size() - run);
  out += '"';
}

void append_time(std::string& out, std::int64_t seconds) {
  // Civil date of a day count (H. Hinnant's civil_from_days).
  std::int64_t days = seconds / 86400;
  std::int64_t rest = seconds % 86400;
  if (rest < 0) {
    rest += 86400;
    --days;
  }
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const std::int64_t day_of_era = days - era * 146097;
  const std::int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const std::int64_t day_of_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const std::int64_t mp = (5 * day_of_year + 2) / 153;
  const std::int64_t day = day_of_year - (153 * mp + 2) / 5 + 1;
  const std::int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t year = year_of_era + era * 400 + (month <= 2 ? 1 : 0);
  // The parsers keep years within 0..9999 (time.cpp); anything else is written in full.
  if (year < 0 || year > 9999) {
    std::array<char, 128> buffer{};
    std::snprintf(buffer.data(), buffer.size(), "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ",
                  static_cast<long long>(year), static_cast<long long>(month),
                  static_cast<long long>(day), static_cast<long long>(rest / 3600),
                  static_cast<long long>(rest / 60 % 60), static_cast<long long>(rest % 60));
    out += buffer.data();
    return;
  }
  // One per record: fixed-width digits, without printf's format parsing or a string of its own.
  std::array<char, 20> text{'0', '0', '0', '0', '-', '0', '0', '-', '0', '0',
                            'T', '0', '0', ':', '0', '0', ':', '0', '0', 'Z'};
  const auto put = [&text](std::size_t at, std::size_t width, std::int64_t value) {
    for (std::size_t i = at + width; i > at; --i) {
      text[i - 1] = static_cast<char>('0' + value % 10);
      value /= 10;
    }
  };
  put(0, 4, year);
  put(5, 2, month);
  put(8, 2, day);
  put(11, 2, rest / 3600);
  put(14, 2, rest / 60 % 60);
  put(17, 2, rest % 60);
  out.append(text.data(), text.size());
}

std::string format_time(std::int64_t seconds) {
  std::string text;
  append_time(text, seconds);
  return text;
}

RecordWriter::RecordWriter(const Input& input, const Projection& projection) : input_(input) {
  for (const std::string& name : projection.fields)
    columns_.push_back({static_cast<int>(field_id(name)), name});
  if (columns_.empty() && !input.file.empty()) {
    source_ = field_keys[static_cast<std::size_t>(FieldId::input)];
    append_json_string(source_, input.name);
    source_ += field_keys[static_cast<std::size_t>(FieldId::file)];
    append_json_string(source_, input.file);
  }
}

void RecordWriter::append(std::string& out, const Record& record, std::uint64_t line,
                          std::uint64_t offset) const {
  ObjectWriter w(out);
  if (columns_.empty()) {
    for (std::size_t i = 0; i <= static_cast<std::size_t>(last_default_field); ++i)
      write_field(w, static_cast<FieldId>(i), record, input_, line, offset);
    if (!source_.empty()) {  // a tailed file's: where each record was read
      w.plain_key(source_);
      write_field(w, FieldId::offset, record, input_, line, offset);
    }
    for (const Field& field : record.extra)
      write_extra(w, field);
  } else {
    for (const Column& column : columns_) {
      if (const auto id = static_cast<FieldId>(column.field); id != FieldId::none) {
        write_field(w, id, record, input_, line, offset);
        continue;
      }
      for (const Field& field : record.extra) {
        if (field.name != column.name) continue;
        write_extra(w, field);
        break;
      }
    }
  }
  w.close();
}

void append_record(std::string& out, const Record& record, const Input& input, std::uint64_t line,
                   const Projection& projection, std::uint64_t offset) {
  RecordWriter(input, projection).append(out, record, line, offset);
}

void append_dead_letter(std::string& out, const Input& input, std::uint64_t line,
                        std::uint64_t offset, std::string_view reason, std::uint64_t length,
                        std::string_view raw) {
  ObjectWriter w(out);
  w.plain_key(",\"input\":");
  append_json_string(out, input.name);
  if (line != 0) {
    w.plain_key(",\"line\":");
    append_number(out, static_cast<std::int64_t>(line));
  }
  if (offset != unknown_offset) {
    w.plain_key(",\"offset\":");
    append_number(out, static_cast<std::int64_t>(offset));
  }
  w.plain_key(",\"reason\":");
  append_json_string(out, reason);
  w.plain_key(",\"length\":");
  append_number(out, static_cast<std::int64_t>(length));
  w.plain_key(",\"raw\":");
  append_json_string(out, raw);
  w.close();
}

}  // namespace conveyor::stages
