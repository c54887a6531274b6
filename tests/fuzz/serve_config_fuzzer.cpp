// Fuzzes the reader of `log-ingest serve`'s configuration, parse_serve_config: whatever the file
// holds (YAML or not, any keys, values of any type and size), it gives a configuration or throws
// ConfigError with a message that names the file, and nothing else: no other exception, no crash,
// no hang. The seed is the configuration shipped in deploy/.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "serve_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  using conveyor::fuzz::check;
  using conveyor::log_ingest::ConfigError;
  const std::string text(reinterpret_cast<const char*>(bytes), size);
  try {
    const auto config = conveyor::log_ingest::parse_serve_config(text, "fuzz.yaml");
    check(config.stop_timeout >= config.drain_timeout, "a stop_timeout shorter than the drain");
  } catch (const ConfigError& error) {
    check(std::string(error.what()).starts_with("fuzz.yaml"),
          "an error that does not name the file");
  } catch (...) {
    check(false, "an exception other than ConfigError");
  }
  return 0;
}
