// JSON text for records and dead letters, written by hand into a std::string for speed.
//
// Strings are escaped as JSON requires, and bytes that are not valid UTF-8 become U+FFFD, so that
// every line written is valid JSON whatever the input held (NUL bytes, binary garbage).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/stages/chunk.hpp"
#include "conveyor/stages/record.hpp"

namespace conveyor::stages {

// Appends `text` as a JSON string, quotes included.
void append_json_string(std::string& out, std::string_view text);

// The fields a record is written with, in order (`--fields`); empty means every field it has.
// Known names: time, timestamp, host, user, method, path, protocol, status, bytes, referrer,
// agent, duration, facility, severity, program, pid, message, input, line, file, offset; any
// other name is a field that the format kept.
struct Projection {
  std::vector<std::string> fields;
};

// Writes the records of one input: one JSON object and a newline each. `time` is written as RFC
// 3339 UTC text. A `line` of 0 (unknown) is left out. A tailed file's records (Input::file) also
// carry "input", "file" and "offset" by default, the offset where it is known.
//
//   const RecordWriter writer(*chunk.input, config.projection);   // once per chunk
//   writer.append(out, record, line, offset);                     // once per record
//
// What is the same for every record of the input is prepared once: the projection's names are
// looked up, and a tailed file's "input" and "file" are rendered. Contract: `input` and
// `projection` outlive the writer.
class RecordWriter {
 public:
  RecordWriter(const Input& input, const Projection& projection);
  void append(std::string& out, const Record& record, std::uint64_t line,
              std::uint64_t offset = unknown_offset) const;

 private:
  struct Column {
    int field;              // which of the record's own fields; past them, an extra one
    std::string_view name;  // its name, in the projection
  };
  const Input& input_;
  std::vector<Column> columns_;  // the projection's; none: every field the record has
  std::string source_;           // `,"input":…,"file":…` of a tailed file's records, by default
};

// One record, with a RecordWriter of its own: for a few records; a chunk's records share one.
void append_record(std::string& out, const Record& record, const Input& input, std::uint64_t line,
                   const Projection& projection, std::uint64_t offset = unknown_offset);

// Appends one dead-letter line: {"input","line","offset","reason","length","raw"}; without "line"
// when it is 0, without "offset" when it is unknown_offset.
void append_dead_letter(std::string& out, const Input& input, std::uint64_t line,
                        std::uint64_t offset, std::string_view reason, std::uint64_t length,
                        std::string_view raw);

// "2015-05-17T10:05:03Z"
std::string format_time(std::int64_t seconds);
// The same, appended to `out`.
void append_time(std::string& out, std::int64_t seconds);

}  // namespace conveyor::stages
