// Fuzzes the JSON-lines parser on both of its paths: a line with room to read ahead (parsed in
// place) and one without (copied first). Either way: no crash, no read outside what it was given,
// the same verdict, and views only into the line or the arena.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

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
  return 0;
}
