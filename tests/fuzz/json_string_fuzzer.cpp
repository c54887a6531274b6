// The JSON string escaper (sixteen bytes at a time where it can) against a byte-at-a-time
// reference: the same output for any bytes, at any alignment.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "conveyor/stages/json_writer.hpp"
#include "fuzz_support.hpp"
#include "json_reference.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  // Every suffix of the first bytes too, so that each special byte is met at each position of a
  // sixteen-byte block and of the tail.
  for (std::size_t skip = 0; skip < 16 && skip <= all.size(); ++skip) {
    const std::string_view text = all.substr(skip);
    std::string fast;
    conveyor::stages::append_json_string(fast, text);
    conveyor::fuzz::check(fast == conveyor::testing::reference_json_string(text),
                          "the escaper differs from the reference");
  }
  return 0;
}
