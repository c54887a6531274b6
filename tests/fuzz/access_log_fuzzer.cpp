// Fuzzes the common and combined log parsers: no crash, no read outside the line, and a record
// whose every field lies in the line. A combined line minus its last two fields is common.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "conveyor/stages/parsers.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  // A copy of exactly the line's size, so that AddressSanitizer sees any read past its end.
  const std::string owned(reinterpret_cast<const char*>(data), size);
  const std::string_view line(owned);
  stages::Record record;
  if (stages::parse_common(line, record) == nullptr) fuzz::check_record(record, line);
  record = stages::Record{};
  if (stages::parse_combined(line, record) == nullptr) fuzz::check_record(record, line);
  return 0;
}
