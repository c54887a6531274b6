// Summary: what a run of log-ingest found, built from partial summaries that aggregation workers
// fill independently (each owns its partial, so the hot path takes no lock) and merged at the end
// of the stream.
//
//   Summary partial;  partial.add(record);  ...  total.merge(std::move(partial));
//   std::string json = total.to_json(10);   std::string table = total.to_table(10);
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "conveyor/stages/record.hpp"

namespace conveyor::stages {

// Quantiles with a bounded relative error (1 %), mergeable: values fall in logarithmic buckets.
class QuantileSketch {
 public:
  void add(double value);
  void merge(const QuantileSketch& other);
  // The q-quantile (0 <= q <= 1), within 1 % of a value that was added; 0 when empty.
  [[nodiscard]] double quantile(double q) const;
  [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
  [[nodiscard]] double min() const noexcept { return min_; }
  [[nodiscard]] double max() const noexcept { return max_; }

 private:
  std::map<int, std::uint64_t> buckets_;  // index -> values with gamma^(i-1) < v <= gamma^i
  std::uint64_t zeros_ = 0;               // values <= 0
  std::uint64_t count_ = 0;
  double min_ = 0;
  double max_ = 0;
};

// Not noexcept on purpose: libstdc++ keeps a key's hash in its node only when the hash function
// may throw (or is not known to be fast). Without it, finding a key hashes again every key the
// search passes in the bucket, which made hashing a fifth of log-ingest's time.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const {  // NOLINT(performance-noexcept-*)
    return std::hash<std::string_view>{}(text);
  }
};
using CountMap = std::unordered_map<std::string, std::uint64_t, StringHash, std::equal_to<>>;

// What happened to the lines, counted where they were parsed.
struct LineCounts {
  std::uint64_t lines = 0;     // every line read, blank ones included
  std::uint64_t blank = 0;     // empty or only spaces: skipped, not rejected
  std::uint64_t records = 0;   // parsed and kept by the filter
  std::uint64_t filtered = 0;  // parsed, but the filter said no
  std::uint64_t rejected = 0;  // dead-lettered: not parsed, or too long
  std::vector<std::pair<std::string_view, std::uint64_t>> reasons;  // static reason strings

  void reject(std::string_view reason, std::uint64_t count = 1);
  void merge(const LineCounts& other);
};

struct InputSummary {
  std::string name;
  std::string format;
  bool gzip = false;
};

class Summary {
 public:
  void add(const Record& record);
  void add(const LineCounts& counts);
  // A hint that add(record) comes soon: starts loading the texts it looks up.
  static void prefetch(const Record& record) noexcept {
    __builtin_prefetch(record.host.data());
    __builtin_prefetch(record.path.data());
    __builtin_prefetch(record.program.data());
  }
  void merge(Summary&& other);

  // The summary as one JSON object (top-k lists of `top` entries).
  [[nodiscard]] std::string to_json(std::size_t top) const;
  // The summary as a table for a terminal.
  [[nodiscard]] std::string to_table(std::size_t top) const;

  LineCounts counts;
  std::array<std::uint64_t, 1000> by_status{};
  CountMap by_method;
  CountMap by_host;
  CountMap by_path;
  CountMap by_program;
  std::uint64_t bytes = 0;                           // sum of the records' sizes
  std::map<std::int64_t, std::uint64_t> per_minute;  // minute (seconds / 60) -> records
  QuantileSketch duration;                           // seconds, of records that have one
  std::int64_t first_time = Record::no_time;
  std::int64_t last_time = Record::no_time;
  // Filled by the app: what was read, how long it took, and whether it was interrupted.
  std::vector<InputSummary> inputs;
  double elapsed_seconds = 0;
  std::uint64_t input_bytes = 0;
  bool partial = false;
};

// The `n` largest counts, largest first (ties by key).
std::vector<std::pair<std::string, std::uint64_t>> top_k(const CountMap& counts, std::size_t n);

}  // namespace conveyor::stages
