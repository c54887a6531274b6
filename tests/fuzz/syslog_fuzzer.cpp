// Fuzzes the syslog parser (RFC 5424 and RFC 3164): no crash, no read outside the line, and a
// record whose every field lies in the line, with a valid priority when it has one.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "conveyor/stages/parsers.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  const std::string owned(reinterpret_cast<const char*>(data), size);
  const std::string_view line(owned);
  stages::Record record;
  if (stages::parse_syslog(line, record, 2024) == nullptr) {
    fuzz::check_record(record, line);
    fuzz::check(record.facility >= -1 && record.facility <= 23, "facility out of range");
    fuzz::check(record.severity >= -1 && record.severity <= 7, "severity out of range");
  }
  return 0;
}
