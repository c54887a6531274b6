// The sample generator: deterministic web-server logs, for `log-ingest run` without a file and for
// the benchmarks' inputs of any size. The same options and seed give the same bytes on any machine.
//
// Profiles (`log-ingest generate --profile`):
//   small      the embedded sample: a few thousand clients, a few hundred paths, so every count
//              stays in cache; its bytes never change
//   realistic  a shop's two hours of traffic: most paths carry ids or query strings (over half the
//              lines' paths are distinct under a popular head), about 100 000 IPv4 and IPv6 clients
//              with a Zipf-like tail, real user agents and referrers, heavy-tailed sizes
//   distinct   realistic, with every line's path unique (a memory test)
// Both formats write the same records: Apache combined, or JSON lines with the keys of Fluentd's
// and Fluent Bit's apache2 parser (host, user, method, path, code, size, referer, agent, time in
// CLF). Realistic times are local at +0200 and spread over two hours of `expected_lines`. A few
// lines in ten thousand (one in a thousand in `small`, combined only) are damaged on purpose.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace conveyor::log_ingest {

enum class SampleFormat { combined, json };
enum class SampleProfile { small, realistic, distinct };

struct SampleOptions {
  std::uint64_t lines = 200'000;
  std::uint64_t seed = 42;
  SampleFormat format = SampleFormat::combined;
  bool malformed = true;  // mix in malformed lines
  SampleProfile profile = SampleProfile::small;
  std::uint64_t expected_lines = 0;  // realistic, distinct: lines over two hours (0: `lines`)
};

class SampleGenerator {
 public:
  explicit SampleGenerator(SampleOptions options);
  ~SampleGenerator();
  SampleGenerator(const SampleGenerator&) = delete;
  SampleGenerator& operator=(const SampleGenerator&) = delete;

  // Appends the next line (with its newline) to `out`; false once `lines` were made.
  bool next(std::string& out);
  // Lines damaged on purpose so far.
  [[nodiscard]] std::uint64_t malformed_lines() const noexcept { return malformed_; }

 private:
  class Traffic;  // the realistic and distinct profiles

  void next_small(std::string& out);
  std::uint64_t random();
  std::uint64_t below(std::uint64_t n) { return random() % n; }
  // 0..n-1, with small values far more likely (a Zipf-like head).
  std::uint64_t skewed(std::uint64_t n);

  SampleOptions options_;
  std::uint64_t state_;
  std::uint64_t made_ = 0;
  std::uint64_t malformed_ = 0;
  std::int64_t time_ = 0;  // seconds since the epoch
  std::unique_ptr<Traffic> traffic_;
};

// The whole sample as one string.
std::string make_sample(const SampleOptions& options);

// About how many lines make `bytes` bytes with these options (from a short run's average).
std::uint64_t estimate_lines(SampleOptions options, std::uint64_t bytes);

// "small", "realistic", "distinct"; nullopt otherwise.
std::optional<SampleProfile> parse_profile(std::string_view name) noexcept;

}  // namespace conveyor::log_ingest
