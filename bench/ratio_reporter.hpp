// RatioReporter: the console table of Google Benchmark, followed by a table of ours-versus-peer
// ratios checked against their targets.
//
// Each comparison names two registered benchmarks (by the name given to RegisterBenchmark) and
// the figure to compare: the time per iteration (lower is better) or items_per_second (higher is
// better). The time is the one Google Benchmark measured the run by: wall time for a benchmark
// that asked for UseRealTime(), CPU time otherwise. When repetitions are requested the "mean"
// aggregate is used, otherwise the single run. A comparison whose benchmarks did not run (filtered
// out) is left out; one whose benchmark reported an error is listed as ERROR, so that a broken
// primitive cannot hide.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace conveyor::bench {

enum class Figure {
  time,             // nanoseconds per iteration; ours/peer should be at most the target
  items_per_second  // throughput; ours/peer should be at least the target
};

struct Comparison {
  std::string what;  // the scenario, as a reader would say it
  std::string ours;  // benchmark names, as registered
  // A name ending in '*' stands for the best of the benchmarks whose names start with what comes
  // before it (a peer measured with several settings is compared at its best).
  std::string peer;
  Figure figure;
  std::optional<double> target;  // bound on ours/peer; none for a comparison kept for information
};

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter(OutputOptions options, std::vector<Comparison> comparisons, std::string json_path)
      : benchmark::ConsoleReporter(options),
        comparisons_(std::move(comparisons)),
        json_path_(std::move(json_path)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    benchmark::ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs)
      record(run);
  }

  void Finalize() override {
    benchmark::ConsoleReporter::Finalize();
    const std::vector<Row> rows = evaluate();
    print(rows);
    if (!json_path_.empty()) write_json(rows);
  }

 private:
  struct Measure {
    double time_ns = 0;
    std::optional<double> items_per_second;
    bool from_mean = false;
  };

  struct Row {
    const Comparison* comparison = nullptr;
    bool error = false;
    double ours = 0;
    double peer = 0;
    double ratio = 0;
    std::string status;  // MET, MISSED, info, ERROR
  };

  void record(const Run& run) {
    const std::string& name = run.run_name.function_name;
    if (run.error_occurred) {
      errors_.insert(name);
      return;
    }
    const bool is_mean = run.run_type == Run::RT_Aggregate && run.aggregate_name == "mean";
    const bool is_single = run.run_type == Run::RT_Iteration && run.repetitions <= 1;
    if (!is_mean && !is_single) return;
    Measure measure;
    const bool wall_time = run.run_name.time_type == "real_time";
    const double time = wall_time ? run.GetAdjustedRealTime() : run.GetAdjustedCPUTime();
    measure.time_ns = time / benchmark::GetTimeUnitMultiplier(run.time_unit) * 1e9;
    if (const auto found = run.counters.find("items_per_second"); found != run.counters.end()) {
      measure.items_per_second = found->second.value;
    }
    measure.from_mean = is_mean;
    // A mean, once seen, wins over any single run of the same name.
    auto [slot, inserted] = measures_.try_emplace(name, measure);
    if (!inserted && (is_mean || !slot->second.from_mean)) slot->second = measure;
  }

  bool ran(const std::string& name) const {
    return measures_.count(name) != 0 || errors_.count(name) != 0;
  }

  std::optional<double> figure_of(const std::string& name, Figure figure) const {
    const auto found = measures_.find(name);
    if (found == measures_.end()) return std::nullopt;
    if (figure == Figure::time) return found->second.time_ns;
    return found->second.items_per_second;
  }

  // The benchmark a comparison's peer names: itself, or the best of a '*' family (an erroneous
  // one wins, so that it cannot hide).
  std::string resolve(const std::string& peer, Figure figure) const {
    if (peer.empty() || peer.back() != '*') return peer;
    const std::string prefix = peer.substr(0, peer.size() - 1);
    std::string best;
    std::optional<double> best_value;
    for (const std::string& name : errors_) {
      if (name.starts_with(prefix)) return name;
    }
    for (const auto& [name, measure] : measures_) {
      if (!name.starts_with(prefix)) continue;
      const auto value = figure_of(name, figure);
      if (!value) continue;
      const bool better =
          !best_value || (figure == Figure::time ? *value < *best_value : *value > *best_value);
      if (better) {
        best = name;
        best_value = value;
      }
    }
    return best;
  }

  std::vector<Row> evaluate() {
    std::vector<Row> rows;
    for (Comparison& comparison : comparisons_) {
      comparison.peer = resolve(comparison.peer, comparison.figure);
      Row row;
      row.comparison = &comparison;
      if (!ran(comparison.ours) || !ran(comparison.peer)) continue;  // filtered out
      if (errors_.count(comparison.ours) != 0 || errors_.count(comparison.peer) != 0) {
        row.error = true;
        row.status = "ERROR";
        rows.push_back(row);
        continue;
      }
      const auto ours = figure_of(comparison.ours, comparison.figure);
      const auto peer = figure_of(comparison.peer, comparison.figure);
      if (!ours || !peer || *peer <= 0) continue;  // no such figure
      row.ours = *ours;
      row.peer = *peer;
      row.ratio = *ours / *peer;
      if (!comparison.target) {
        row.status = "info";
      } else if (comparison.figure == Figure::time) {
        row.status = row.ratio <= *comparison.target ? "MET" : "MISSED";
      } else {
        row.status = row.ratio >= *comparison.target ? "MET" : "MISSED";
      }
      rows.push_back(row);
    }
    return rows;
  }

  static std::string format(const char* pattern, double value) {
    char text[64];
    std::snprintf(text, sizeof text, pattern, value);
    return text;
  }

  static std::string figure_text(Figure figure, double value) {
    if (figure == Figure::time) {
      return value < 1e4 ? format("%.1f ns", value) : format("%.1f us", value / 1e3);
    }
    return value < 1e6 ? format("%.1f k/s", value / 1e3) : format("%.2f M/s", value / 1e6);
  }

  static std::string target_text(const Comparison& comparison) {
    if (!comparison.target) return "-";
    const char* bound = comparison.figure == Figure::time ? "<= " : ">= ";
    return bound + format("%.2fx", *comparison.target);
  }

  // The last part of a benchmark name, which names the library; the row names the scenario.
  static std::string library(const std::string& benchmark_name) {
    return benchmark_name.substr(benchmark_name.rfind('/') + 1);
  }

  static std::string padded(std::string text, std::size_t width) {
    if (text.size() < width) text.append(width - text.size(), ' ');
    return text;
  }

  void print(const std::vector<Row>& rows) const {
    std::ostream& out = GetOutputStream();
    if (rows.empty()) return;
    std::size_t what_width = 10;
    std::size_t ours_width = 4;
    std::size_t peer_width = 4;
    for (const Row& row : rows) {
      what_width = std::max(what_width, row.comparison->what.size());
      ours_width = std::max(ours_width, library(row.comparison->ours).size());
      peer_width = std::max(peer_width, library(row.comparison->peer).size());
    }
    const std::string rule(what_width + ours_width + peer_width + 65, '-');
    out << "\nratios: ours / peer (time: lower is better; items/s: higher is better)\n"
        << rule << '\n'
        << padded("comparison", what_width) << "  " << padded("ours", ours_width) << "  "
        << padded("peer", peer_width) << "  " << padded("ours", 12) << "  " << padded("peer", 12)
        << "  " << padded("ratio", 8) << "  " << padded("target", 9) << "  status\n"
        << rule << '\n';
    for (const Row& row : rows) {
      const Comparison& comparison = *row.comparison;
      out << padded(comparison.what, what_width) << "  "
          << padded(library(comparison.ours), ours_width) << "  "
          << padded(library(comparison.peer), peer_width) << "  ";
      if (row.error) {
        out << padded("-", 12) << "  " << padded("-", 12) << "  " << padded("-", 8);
      } else {
        out << padded(figure_text(comparison.figure, row.ours), 12) << "  "
            << padded(figure_text(comparison.figure, row.peer), 12) << "  "
            << padded(format("%.2fx", row.ratio), 8);
      }
      out << "  " << padded(target_text(comparison), 9) << "  " << row.status << '\n';
    }
    out << rule << '\n';
  }

  static std::string json_string(const std::string& text) {
    std::string quoted = "\"";
    for (const char c : text) {
      if (c == '"' || c == '\\') {
        quoted += '\\';
        quoted += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char escaped[8];
        std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
        quoted += escaped;
      } else {
        quoted += c;
      }
    }
    return quoted + '"';
  }

  static std::string json_number(double value) {
    if (!std::isfinite(value)) return "null";
    return format("%.6g", value);
  }

  void write_json(const std::vector<Row>& rows) const {
    std::ofstream file(json_path_);
    if (!file) {
      GetErrorStream() << "cannot write the ratios to " << json_path_ << '\n';
      return;
    }
    file << "{\n  \"ratios\": [";
    const char* separator = "\n";
    for (const Row& row : rows) {
      const Comparison& comparison = *row.comparison;
      const bool is_time = comparison.figure == Figure::time;
      file << separator << "    {\"comparison\": " << json_string(comparison.what)
           << ", \"ours\": " << json_string(comparison.ours)
           << ", \"peer\": " << json_string(comparison.peer)
           << ", \"figure\": " << json_string(is_time ? "time_ns" : "items_per_second");
      if (row.error) {
        file << ", \"ours_value\": null, \"peer_value\": null, \"ratio\": null";
      } else {
        file << ", \"ours_value\": " << json_number(row.ours)
             << ", \"peer_value\": " << json_number(row.peer)
             << ", \"ratio\": " << json_number(row.ratio);
      }
      file << ", \"target\": ";
      if (comparison.target) {
        file << "{\"bound\": " << json_string(is_time ? "at_most" : "at_least")
             << ", \"ratio\": " << json_number(*comparison.target) << '}';
      } else {
        file << "null";
      }
      file << ", \"status\": " << json_string(row.status) << '}';
      separator = ",\n";
    }
    file << "\n  ]\n}\n";
  }

  std::vector<Comparison> comparisons_;
  std::string json_path_;
  std::map<std::string, Measure> measures_;
  std::set<std::string> errors_;
};

}  // namespace conveyor::bench
