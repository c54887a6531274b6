// Summary: partial aggregates, their merge, and their JSON and table forms.
#include "conveyor/stages/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "conveyor/stages/json_writer.hpp"

namespace conveyor::stages {

namespace {

constexpr double relative_error = 0.01;
const double gamma_log = std::log((1 + relative_error) / (1 - relative_error));

void add_counts(CountMap& into, std::string_view key, std::uint64_t count = 1) {
  if (key.empty()) return;
  auto found = into.find(key);
  if (found == into.end()) {
    into.emplace(std::string(key), count);
  } else {
    found->second += count;
  }
}

void merge_counts(CountMap& into, CountMap&& from) {
  if (into.empty()) {
    into = std::move(from);
    return;
  }
  for (auto& [key, count] : from)
    add_counts(into, key, count);
}

std::string fmt_double(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

void json_counts(std::string& out, const std::vector<std::pair<std::string, std::uint64_t>>& rows) {
  out += '[';
  bool first = true;
  for (const auto& [key, count] : rows) {
    if (!first) out += ',';
    first = false;
    out += "{\"key\":";
    append_json_string(out, key);
    out += ",\"count\":" + std::to_string(count) + "}";
  }
  out += ']';
}

std::string percent(std::uint64_t part, std::uint64_t whole) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f%%",
                whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buffer;
}

std::string human_bytes(double bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
  return buffer;
}

}  // namespace

void QuantileSketch::add(double value) {
  if (std::isnan(value)) return;
  min_ = count_ == 0 ? value : std::min(min_, value);
  max_ = count_ == 0 ? value : std::max(max_, value);
  ++count_;
  if (value <= 0) {
    ++zeros_;
    return;
  }
  ++buckets_[static_cast<int>(std::ceil(std::log(value) / gamma_log))];
}

void QuantileSketch::merge(const QuantileSketch& other) {
  if (other.count_ == 0) return;
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
  count_ += other.count_;
  zeros_ += other.zeros_;
  for (const auto& [index, count] : other.buckets_)
    buckets_[index] += count;
}

double QuantileSketch::quantile(double q) const {
  if (count_ == 0) return 0;
  const auto rank =
      static_cast<std::uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_)));
  std::uint64_t seen = zeros_;
  if (rank <= seen) return std::min(0.0, max_);
  for (const auto& [index, count] : buckets_) {
    seen += count;
    if (seen >= rank) {
      // The middle of the bucket, in the sense that bounds the relative error.
      const double value = 2 * std::exp(index * gamma_log) / (std::exp(gamma_log) + 1);
      return std::clamp(value, min_, max_);
    }
  }
  return max_;
}

void LineCounts::reject(std::string_view reason, std::uint64_t count) {
  rejected += count;
  for (auto& [known, n] : reasons) {
    if (known == reason) {
      n += count;
      return;
    }
  }
  reasons.emplace_back(reason, count);
}

void LineCounts::merge(const LineCounts& other) {
  lines += other.lines;
  blank += other.blank;
  records += other.records;
  filtered += other.filtered;
  const std::uint64_t before = rejected;
  for (const auto& [reason, count] : other.reasons)
    reject(reason, count);
  rejected = before + other.rejected;
}

void Summary::add(const Record& r) {
  if (r.status >= 0 && r.status < 1000) ++by_status[static_cast<std::size_t>(r.status)];
  add_counts(by_method, r.method);
  add_counts(by_host, r.host);
  add_counts(by_path, r.path);
  add_counts(by_program, r.program);
  if (r.bytes > 0) bytes += static_cast<std::uint64_t>(r.bytes);
  if (r.has_time()) {
    std::int64_t minute = r.time / 60;
    if (r.time < 0 && r.time % 60 != 0) --minute;
    ++per_minute[minute];
    first_time = first_time == Record::no_time ? r.time : std::min(first_time, r.time);
    last_time = last_time == Record::no_time ? r.time : std::max(last_time, r.time);
  }
  if (r.has_duration()) duration.add(r.duration);
}

void Summary::add(const LineCounts& more) {
  counts.merge(more);
}

void Summary::merge(Summary&& other) {
  counts.merge(other.counts);
  for (std::size_t i = 0; i < by_status.size(); ++i)
    by_status[i] += other.by_status[i];
  merge_counts(by_method, std::move(other.by_method));
  merge_counts(by_host, std::move(other.by_host));
  merge_counts(by_path, std::move(other.by_path));
  merge_counts(by_program, std::move(other.by_program));
  bytes += other.bytes;
  for (const auto& [minute, count] : other.per_minute)
    per_minute[minute] += count;
  duration.merge(other.duration);
  if (other.first_time != Record::no_time) {
    first_time =
        first_time == Record::no_time ? other.first_time : std::min(first_time, other.first_time);
    last_time =
        last_time == Record::no_time ? other.last_time : std::max(last_time, other.last_time);
  }
}

std::vector<std::pair<std::string, std::uint64_t>> top_k(const CountMap& counts, std::size_t n) {
  std::vector<std::pair<std::string, std::uint64_t>> rows(counts.begin(), counts.end());
  const auto larger = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  const std::size_t k = std::min(n, rows.size());
  std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(k), rows.end(),
                    larger);
  rows.resize(k);
  return rows;
}

std::string Summary::to_json(std::size_t top) const {
  std::string out = "{";
  out += "\"partial\":" + std::string(partial ? "true" : "false");
  out += ",\"elapsed_seconds\":" + fmt_double(elapsed_seconds);
  out += ",\"input_bytes\":" + std::to_string(input_bytes);
  out += ",\"inputs\":[";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"name\":";
    append_json_string(out, inputs[i].name);
    out += ",\"format\":";
    append_json_string(out, inputs[i].format);
    out += ",\"gzip\":" + std::string(inputs[i].gzip ? "true" : "false") + "}";
  }
  out += "],\"lines\":" + std::to_string(counts.lines);
  out += ",\"blank\":" + std::to_string(counts.blank);
  out += ",\"records\":" + std::to_string(counts.records);
  out += ",\"filtered_out\":" + std::to_string(counts.filtered);
  out += ",\"rejected\":" + std::to_string(counts.rejected);
  out += ",\"rejected_by_reason\":{";
  bool first = true;
  for (const auto& [reason, count] : counts.reasons) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, reason);
    out += ':' + std::to_string(count);
  }
  out += "},\"bytes\":" + std::to_string(bytes);
  out += ",\"by_status\":{";
  first = true;
  for (std::size_t s = 0; s < by_status.size(); ++s) {
    if (by_status[s] == 0) continue;
    if (!first) out += ',';
    first = false;
    out += '"' + std::to_string(s) + "\":" + std::to_string(by_status[s]);
  }
  out += "},\"by_method\":";
  json_counts(out, top_k(by_method, by_method.size()));
  out += ",\"top_paths\":";
  json_counts(out, top_k(by_path, top));
  out += ",\"top_clients\":";
  json_counts(out, top_k(by_host, top));
  out += ",\"top_programs\":";
  json_counts(out, top_k(by_program, top));
  out += ",\"distinct\":{\"paths\":" + std::to_string(by_path.size()) +
         ",\"clients\":" + std::to_string(by_host.size()) + "}";
  out += ",\"per_minute\":[";
  first = true;
  for (const auto& [minute, count] : per_minute) {
    if (!first) out += ',';
    first = false;
    out += "{\"minute\":";
    append_json_string(out, format_time(minute * 60));
    out += ",\"count\":" + std::to_string(count) + "}";
  }
  out += "],\"duration_seconds\":{\"count\":" + std::to_string(duration.count());
  if (duration.count() > 0) {
    out += ",\"min\":" + fmt_double(duration.min()) +
           ",\"p50\":" + fmt_double(duration.quantile(0.5)) +
           ",\"p90\":" + fmt_double(duration.quantile(0.9)) +
           ",\"p99\":" + fmt_double(duration.quantile(0.99)) +
           ",\"max\":" + fmt_double(duration.max());
  }
  out += "}}\n";
  return out;
}

std::string Summary::to_table(std::size_t top) const {
  std::string out;
  char line[512];
  const auto row = [&](const char* format, auto... args) {
    std::snprintf(line, sizeof line, format, args...);
    out += line;
  };
  row("%s\n", partial ? "log-ingest summary (PARTIAL: interrupted before the end of the input)"
                      : "log-ingest summary");
  for (const InputSummary& input : inputs) {
    row("  input       %s (%s%s)\n", input.name.c_str(), input.format.c_str(),
        input.gzip ? ", gzip" : "");
  }
  row("  lines       %llu in %.2f s (%s read)\n", static_cast<unsigned long long>(counts.lines),
      elapsed_seconds, human_bytes(static_cast<double>(input_bytes)).c_str());
  row("  records     %llu (%s)\n", static_cast<unsigned long long>(counts.records),
      percent(counts.records, counts.lines - counts.blank).c_str());
  if (counts.filtered > 0) {
    row("  filtered    %llu (not matched by --where)\n",
        static_cast<unsigned long long>(counts.filtered));
  }
  row("  rejected    %llu (%s)\n", static_cast<unsigned long long>(counts.rejected),
      percent(counts.rejected, counts.lines - counts.blank).c_str());
  for (const auto& [reason, count] : counts.reasons) {
    row("    %8llu  %.*s\n", static_cast<unsigned long long>(count),
        static_cast<int>(reason.size()), reason.data());
  }
  if (first_time != Record::no_time) {
    row("  time span   %s .. %s\n", format_time(first_time).c_str(),
        format_time(last_time).c_str());
  }
  if (bytes > 0) row("  bytes sent  %s\n", human_bytes(static_cast<double>(bytes)).c_str());
  bool any_status = false;
  for (std::size_t s = 0; s < by_status.size(); ++s) {
    if (by_status[s] == 0) continue;
    if (!any_status) out += "\n  status\n";
    any_status = true;
    row("    %3zu  %10llu  %s\n", s, static_cast<unsigned long long>(by_status[s]),
        percent(by_status[s], counts.records).c_str());
  }
  const auto list = [&](const char* title, const CountMap& counts_by_key) {
    const auto rows = top_k(counts_by_key, top);
    if (rows.empty()) return;
    row("\n  %s\n", title);
    for (const auto& [key, count] : rows) {
      const std::string shown = key.size() > 60 ? key.substr(0, 57) + "..." : key;
      row("    %10llu  %s\n", static_cast<unsigned long long>(count), shown.c_str());
    }
  };
  list("methods", by_method);
  list("top paths", by_path);
  list("top clients", by_host);
  list("top programs", by_program);
  if (!per_minute.empty()) {
    const auto busiest =
        std::max_element(per_minute.begin(), per_minute.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    row("\n  minutes     %zu with traffic; busiest %s with %llu records\n", per_minute.size(),
        format_time(busiest->first * 60).c_str(), static_cast<unsigned long long>(busiest->second));
  }
  if (duration.count() > 0) {
    row("  duration    p50 %.4g s, p90 %.4g s, p99 %.4g s, max %.4g s\n", duration.quantile(0.5),
        duration.quantile(0.9), duration.quantile(0.99), duration.max());
  }
  return out;
}

}  // namespace conveyor::stages
