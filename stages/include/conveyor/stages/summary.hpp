// Summary: what a run of log-ingest found, built from partial summaries that aggregation workers
// fill independently (each owns its partial, so the hot path takes no lock) and merged at the end
// of the stream.
//
//   Summary partial(options);  partial.add(record);  ...  total.merge(std::move(partial));
//   std::string json = total.to_json(10);   std::string table = total.to_table(10);
//
// Line counts, statuses, bytes and per-minute counts are exact. Top lists and distinct counts are
// exact until a kind of key has more than `top_capacity` distinct keys, then estimated with stated
// bounds (SummaryOptions); both forms say which figures are estimates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conveyor/stages/heavy_hitters.hpp"
#include "conveyor/stages/hyperloglog.hpp"
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

// How a summary counts keys. Bounded by default: each top list keeps `top_capacity` keys
// (Space-Saving) and distinct keys are estimated (HyperLogLog), so memory does not grow with the
// input. `exact` keeps every key instead.
struct SummaryOptions {
  std::size_t top_capacity = 4096;
  bool exact = false;
};

// One kind of key (paths, clients, ...): its most frequent keys and how many distinct ones.
class KeyTally {
 public:
  struct Distinct {
    double count = 0;
    bool exact = true;  // else within HyperLogLog::relative_error() (one standard error)
  };

  explicit KeyTally(std::size_t capacity);
  void add(std::string_view key) {
    if (key.empty()) return;
    const std::uint64_t hash = hash_key(key);
    top_.add(key, hash);
    if (distinct_) distinct_->add(hash);
  }
  void merge(const KeyTally& other);
  [[nodiscard]] const HeavyHitters& top() const noexcept { return top_; }
  [[nodiscard]] Distinct distinct() const noexcept;

 private:
  HeavyHitters top_;
  std::optional<HyperLogLog> distinct_;  // when bounded
};

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
  explicit Summary(SummaryOptions chosen = {});
  void add(const Record& record);
  void add(const LineCounts& counts);
  // add(record) for each of `records`, and `also(record)` beside it. A record's texts point into
  // its chunk, which was parsed on another worker long enough ago to have left this core's
  // caches: loading them a few records ahead hides the misses.
  template <class Also>
  void add_all(const std::vector<Record>& records, Also&& also) {
    constexpr std::size_t ahead = 8;
    for (std::size_t i = 0; i < records.size(); ++i) {
      if (i + ahead < records.size()) prefetch(records[i + ahead]);
      add(records[i]);
      also(records[i]);
    }
  }
  void add_all(const std::vector<Record>& records) {
    add_all(records, [](const Record&) {});
  }
  void merge(Summary&& other);

  // The summary as one JSON object (top-k lists of `top` entries).
  [[nodiscard]] std::string to_json(std::size_t top) const;
  // The summary as a table for a terminal.
  [[nodiscard]] std::string to_table(std::size_t top) const;

  // Minutes kept in per_minute; records of further minutes count in minutes_dropped.
  static constexpr std::size_t max_minutes = std::size_t{1} << 17U;  // 91 days

  SummaryOptions options;
  LineCounts counts;
  std::array<std::uint64_t, 1000> by_status{};
  std::array<std::uint64_t, 8> by_severity{};  // syslog's 0 (emerg) .. 7 (debug)
  KeyTally by_method;                          // exact up to 1000 methods
  KeyTally by_host;
  KeyTally by_path;
  KeyTally by_program;
  std::uint64_t bytes = 0;                           // sum of the records' sizes
  std::uint64_t time_unparsed = 0;                   // records with a time field not understood
  std::map<std::int64_t, std::uint64_t> per_minute;  // minute (seconds / 60) -> records
  std::uint64_t minutes_dropped = 0;
  QuantileSketch duration;  // seconds, of records that have one
  std::int64_t first_time = Record::no_time;
  std::int64_t last_time = Record::no_time;
  // Filled by the app: what was read, how long it took, and whether it was interrupted.
  std::vector<InputSummary> inputs;
  double elapsed_seconds = 0;
  std::uint64_t input_bytes = 0;
  bool partial = false;

 private:
  // A hint that add(record) comes soon: starts loading the texts it looks up.
  static void prefetch(const Record& record) noexcept {
    __builtin_prefetch(record.host.data());
    __builtin_prefetch(record.path.data());
    __builtin_prefetch(record.program.data());
  }
  void add_minute(std::int64_t minute, std::uint64_t count);
};

}  // namespace conveyor::stages
