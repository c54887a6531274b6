// What the fuzz targets share: a check that aborts (so that libFuzzer keeps the input), and the
// checks that a parsed record only points into memory it may point into.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "conveyor/stages/parsers.hpp"
#include "conveyor/stages/record.hpp"

namespace conveyor::fuzz {

inline void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "fuzz check failed: %s\n", what);
    std::abort();
  }
}

inline bool inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

// Every view of the record lies in `line` or in one of the arena's strings.
inline bool points_into(std::string_view part, std::string_view line,
                        const stages::Arena* arena = nullptr) {
  if (inside(part, line)) return true;
  if (arena == nullptr) return false;
  for (const std::string& owned : *arena) {
    if (inside(part, owned)) return true;
  }
  return false;
}

inline void check_record(const stages::Record& record, std::string_view line,
                         const stages::Arena* arena = nullptr) {
  for (const std::string_view field :
       {record.timestamp, record.host, record.user, record.method, record.path, record.protocol,
        record.referrer, record.agent, record.program, record.pid, record.message}) {
    check(points_into(field, line, arena), "a field points outside the line");
  }
  // (An extra field's name may also be a string literal of the parser, "msgid" say.)
  for (const stages::Field& field : record.extra) {
    check(points_into(field.value, line, arena), "an extra field points outside the line");
  }
  check(record.status >= -1 && record.status <= 999, "status out of range");
  check(record.bytes >= -1, "negative bytes");
}

}  // namespace conveyor::fuzz
