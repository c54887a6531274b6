// Fuzzes the --where expression parser: it either gives a Filter or throws FilterError with a
// position inside the text (or just past it), never anything else; a Filter it gives evaluates
// on records with and without each field.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "conveyor/stages/filter.hpp"
#include "conveyor/stages/record.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace conveyor;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  stages::Filter filter;
  try {
    filter = stages::Filter::parse(text);
  } catch (const stages::FilterError& error) {
    fuzz::check(error.position() <= size, "error position past the end of the text");
    return 0;
  }
  stages::Record empty;
  stages::Record full;
  full.time = 1700000000;
  full.timestamp = "2023-11-14T22:13:20Z";
  full.host = "10.0.0.1";
  full.method = "GET";
  full.path = "/api/v1/items?id=7";
  full.protocol = "HTTP/1.1";
  full.status = 503;
  full.bytes = 1234;
  full.agent = "curl/8.0";
  full.duration = 0.25;
  full.program = "sshd";
  full.message = "Failed password for root";
  full.extra.push_back({"level", "error", false});
  full.extra.push_back({"upstream_time", "0.125", true});
  (void)filter.matches(empty);
  (void)filter.matches(full);
  return 0;
}
