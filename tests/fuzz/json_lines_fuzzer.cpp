// Fuzzes the JSON-lines parser on both of its paths: a line with room to read ahead (parsed in
// place) and one without (copied first). Either way: no crash, no read outside what it was given,
// the same verdict, and views only into the line or the arena. The verdict is simdjson's DOM
// parser's: a line is a record exactly when it is one valid JSON object (not nested too deep).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <simdjson.h>

#include <algorithm>

#include "conveyor/stages/chunk.hpp"
#include "conveyor/stages/parsers.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  static stages::JsonParser parser;

  // Exactly the line's bytes: the parser must copy before simdjson reads ahead.
  const auto tight = std::make_unique<char[]>(size == 0 ? 1 : size);
  if (size != 0) std::memcpy(tight.get(), data, size);
  const std::string_view line(tight.get(), size);
  stages::Arena arena;
  stages::Record record;
  const stages::ParseError copied = parser.parse(line, size, record, arena);
  if (copied == nullptr) fuzz::check_record(record, line, &arena);

  // With padding after it, as a chunk has: parsed in place.
  std::string padded(reinterpret_cast<const char*>(data), size);
  padded.reserve(size + stages::read_ahead_padding);
  const std::string_view in_place(padded);
  stages::Arena arena2;
  stages::Record record2;
  const stages::ParseError direct = parser.parse(in_place, padded.capacity(), record2, arena2);
  if (direct == nullptr) fuzz::check_record(record2, in_place, &arena2);
  fuzz::check((copied == nullptr) == (direct == nullptr), "the two paths disagree");

  static simdjson::dom::parser validator;
  simdjson::dom::element document;
  const bool valid = !validator.parse(padded.data(), size, false).get(document) &&
                     document.type() == simdjson::dom::element_type::OBJECT;
  if (copied == nullptr) fuzz::check(valid, "a line that is not one JSON object became a record");
  const auto opening =
      std::count(line.begin(), line.end(), '{') + std::count(line.begin(), line.end(), '[');
  // Leading blanks are skipped; other leading bytes the DOM parser also skips are not.
  const bool starts_with_object = line.find_first_not_of(" \t") != std::string_view::npos &&
                                  line[line.find_first_not_of(" \t")] == '{';
  if (valid && starts_with_object && opening < 200) {
    fuzz::check(copied == nullptr, "a valid JSON object was rejected");
  }
  return 0;
}
