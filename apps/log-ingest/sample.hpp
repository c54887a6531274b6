// The embedded sample: a deterministic generator of realistic web-server logs, so that
// `log-ingest run` has something to chew on without any file, and the benchmarks can make inputs
// of any size. The same seed gives the same bytes on every machine.
//
// Traffic: a few thousand clients and a few hundred paths, both with heavy heads (a few are very
// popular), mostly GET, mostly 200, some 304/404/301, a little 5xx, timestamps that advance about
// a hundred requests a second. About one line in a thousand is malformed on purpose (truncated,
// a missing quote, binary noise), as real logs have.
#pragma once

#include <cstdint>
#include <string>

namespace conveyor::log_ingest {

enum class SampleFormat { combined, json };

struct SampleOptions {
  std::uint64_t lines = 200'000;
  std::uint64_t seed = 42;
  SampleFormat format = SampleFormat::combined;
  bool malformed = true;  // mix in malformed lines
};

class SampleGenerator {
 public:
  explicit SampleGenerator(SampleOptions options);
  // Appends the next line (with its newline) to `out`; false once `lines` were made.
  bool next(std::string& out);

 private:
  std::uint64_t random();
  std::uint64_t below(std::uint64_t n) { return random() % n; }
  // 0..n-1, with small values far more likely (a Zipf-like head).
  std::uint64_t skewed(std::uint64_t n);

  SampleOptions options_;
  std::uint64_t state_;
  std::uint64_t made_ = 0;
  std::int64_t time_ = 0;  // seconds since the epoch
};

// The whole sample as one string.
std::string make_sample(const SampleOptions& options);

}  // namespace conveyor::log_ingest
