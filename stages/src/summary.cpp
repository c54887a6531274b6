// Summary: partial aggregates, their merge, and their JSON and table forms.
#include "conveyor/stages/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "conveyor/stages/json_writer.hpp"
#include "saturating_add.hpp"

namespace conveyor::stages {

namespace {

constexpr double relative_error = 0.01;
const double gamma_log = std::log((1 + relative_error) / (1 - relative_error));

std::string fmt_double(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

void json_counts(std::string& out, const std::vector<HeavyHitters::Entry>& rows, bool errors) {
  out += '[';
  bool first = true;
  for (const HeavyHitters::Entry& row : rows) {
    if (!first) out += ',';
    first = false;
    out += "{\"key\":";
    append_json_string(out, row.key);
    out += ",\"count\":" + std::to_string(row.count);
    if (errors) out += ",\"error\":" + std::to_string(row.error);
    out += '}';
  }
  out += ']';
}

// How a top list's counts and its distinct count were made, with their bounds.
void json_accuracy(std::string& out, const char* name, const KeyTally& tally) {
  const HeavyHitters& top = tally.top();
  const KeyTally::Distinct distinct = tally.distinct();
  out += '"';
  out += name;
  out += "\":{\"exact\":" + std::string(top.lossless() ? "true" : "false");
  if (!top.lossless()) {
    out += ",\"method\":\"space-saving\",\"capacity\":" + std::to_string(top.capacity()) +
           ",\"max_error\":" + std::to_string(top.max_error()) +
           ",\"unlisted_at_most\":" + std::to_string(top.floor());
  }
  out += ",\"distinct_exact\":" + std::string(distinct.exact ? "true" : "false");
  if (!distinct.exact) {
    out += ",\"distinct_method\":\"hyperloglog\",\"distinct_precision\":" +
           std::to_string(HyperLogLog::precision) +
           ",\"distinct_relative_error\":" + fmt_double(HyperLogLog::relative_error());
  }
  out += '}';
}

// Text for a terminal: control bytes (escape sequences, newlines, NUL) shown as '?', and cut to
// `width` bytes on a UTF-8 character's boundary, with "..." when cut.
std::string printable(std::string_view text, std::size_t width) {
  std::size_t length = text.size();
  if (length > width) {
    length = width - 3;
    while (length > 0 && (static_cast<unsigned char>(text[length]) & 0xC0U) == 0x80U)
      --length;
  }
  std::string out(text.substr(0, length));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  if (length < text.size()) out += "...";
  return out;
}

std::uint64_t rounded(double value) {
  return static_cast<std::uint64_t>(std::llround(value));
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

KeyTally::KeyTally(std::size_t capacity) : top_(capacity) {
  if (capacity != HeavyHitters::unbounded) distinct_.emplace();
}

void KeyTally::merge(const KeyTally& other) {
  top_.merge(other.top_);
  if (distinct_ && other.distinct_) distinct_->merge(*other.distinct_);
}

KeyTally::Distinct KeyTally::distinct() const noexcept {
  // While no key was dropped, the keys held are all there were.
  if (top_.lossless() || !distinct_) return {static_cast<double>(top_.size()), true};
  // At least the keys held, and one that was dropped.
  return {std::max(distinct_->estimate(), static_cast<double>(top_.size() + 1)), false};
}

namespace {

std::size_t capacity_of(const SummaryOptions& options, std::size_t bounded) {
  return options.exact ? HeavyHitters::unbounded : bounded;
}

}  // namespace

Summary::Summary(SummaryOptions chosen)
    : options(chosen),
      by_method(capacity_of(chosen, 1000)),
      by_host(capacity_of(chosen, chosen.top_capacity)),
      by_path(capacity_of(chosen, chosen.top_capacity)),
      by_program(capacity_of(chosen, chosen.top_capacity)) {}

void Summary::add_minute(std::int64_t minute, std::uint64_t count) {
  if (per_minute.size() >= max_minutes) {
    const auto found = per_minute.find(minute);
    if (found == per_minute.end()) {
      minutes_dropped += count;
    } else {
      found->second += count;
    }
    return;
  }
  per_minute[minute] += count;
}

void Summary::add(const Record& r) {
  if (r.status >= 0 && r.status < 1000) ++by_status[static_cast<std::size_t>(r.status)];
  if (r.severity >= 0 && r.severity < 8) ++by_severity[static_cast<std::size_t>(r.severity)];
  by_method.add(r.method);
  by_host.add(r.host);
  by_path.add(r.path);
  by_program.add(r.program);
  if (r.bytes > 0) detail::saturating_add(bytes, static_cast<std::uint64_t>(r.bytes));
  if (r.has_time()) {
    std::int64_t minute = r.time / 60;
    if (r.time < 0 && r.time % 60 != 0) --minute;
    add_minute(minute, 1);
    first_time = first_time == Record::no_time ? r.time : std::min(first_time, r.time);
    last_time = last_time == Record::no_time ? r.time : std::max(last_time, r.time);
  } else if (r.time_unparsed) {
    ++time_unparsed;
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
  for (std::size_t i = 0; i < by_severity.size(); ++i)
    by_severity[i] += other.by_severity[i];
  by_method.merge(other.by_method);
  by_host.merge(other.by_host);
  by_path.merge(other.by_path);
  by_program.merge(other.by_program);
  detail::saturating_add(bytes, other.bytes);
  time_unparsed += other.time_unparsed;
  minutes_dropped += other.minutes_dropped;
  for (const auto& [minute, count] : other.per_minute)
    add_minute(minute, count);
  duration.merge(other.duration);
  if (other.first_time != Record::no_time) {
    first_time =
        first_time == Record::no_time ? other.first_time : std::min(first_time, other.first_time);
    last_time =
        last_time == Record::no_time ? other.last_time : std::max(last_time, other.last_time);
  }
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
  out += "},\"by_severity\":{";
  static constexpr std::array<const char*, 8> severities = {"emerg",   "alert",  "crit", "err",
                                                            "warning", "notice", "info", "debug"};
  first = true;
  for (std::size_t s = 0; s < by_severity.size(); ++s) {
    if (by_severity[s] == 0) continue;
    if (!first) out += ',';
    first = false;
    out.append("\"").append(severities[s]).append("\":").append(std::to_string(by_severity[s]));
  }
  out += "},\"time_unparsed\":" + std::to_string(time_unparsed);
  out += ",\"by_method\":";
  json_counts(out, by_method.top().top(by_method.top().size()), false);
  out += ",\"top_paths\":";
  json_counts(out, by_path.top().top(top), true);
  out += ",\"top_clients\":";
  json_counts(out, by_host.top().top(top), true);
  out += ",\"top_programs\":";
  json_counts(out, by_program.top().top(top), true);
  out += ",\"distinct\":{\"paths\":" + std::to_string(rounded(by_path.distinct().count)) +
         ",\"clients\":" + std::to_string(rounded(by_host.distinct().count)) +
         ",\"programs\":" + std::to_string(rounded(by_program.distinct().count)) + "}";
  out += ",\"accuracy\":{\"top_capacity\":" +
         (options.exact ? std::string("null") : std::to_string(options.top_capacity)) + ',';
  json_accuracy(out, "methods", by_method);
  out += ',';
  json_accuracy(out, "paths", by_path);
  out += ',';
  json_accuracy(out, "clients", by_host);
  out += ',';
  json_accuracy(out, "programs", by_program);
  out +=
      ",\"duration\":{\"method\":\"log-buckets\",\"relative_error\":" + fmt_double(relative_error) +
      "}}";
  out += ",\"minutes_dropped\":" + std::to_string(minutes_dropped);
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
    row("  input       %s (%s%s)\n", printable(input.name, 200).c_str(), input.format.c_str(),
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
  if (time_unparsed > 0) {
    row("  time unread %llu records (their time field was not understood)\n",
        static_cast<unsigned long long>(time_unparsed));
  }
  bool any_status = false;
  for (std::size_t s = 0; s < by_status.size(); ++s) {
    if (by_status[s] == 0) continue;
    if (!any_status) out += "\n  status\n";
    any_status = true;
    row("    %3zu  %10llu  %s\n", s, static_cast<unsigned long long>(by_status[s]),
        percent(by_status[s], counts.records).c_str());
  }
  const auto list = [&](const char* title, const KeyTally& tally, std::size_t n) {
    const HeavyHitters& hitters = tally.top();
    const auto rows = hitters.top(n);
    if (rows.empty()) return;
    std::uint64_t error = 0;
    for (const HeavyHitters::Entry& entry : rows)
      error = std::max(error, entry.error);
    if (hitters.lossless()) {
      row("\n  %s\n", title);
    } else {
      row("\n  %s (estimated: each count at most %llu too high)\n", title,
          static_cast<unsigned long long>(error));
    }
    for (const HeavyHitters::Entry& entry : rows) {
      const std::string shown = printable(entry.key, 60);
      row("    %10llu  %s\n", static_cast<unsigned long long>(entry.count), shown.c_str());
    }
  };
  list("methods", by_method, by_method.top().size());
  list("top paths", by_path, top);
  list("top clients", by_host, top);
  list("top programs", by_program, top);
  const auto distinct = [&](const char* name, const KeyTally& tally) {
    const KeyTally::Distinct d = tally.distinct();
    if (d.count == 0) return;
    if (d.exact) {
      row("  distinct    %llu %s\n", static_cast<unsigned long long>(rounded(d.count)), name);
    } else {
      row("  distinct    ~%llu %s (estimated, +-%.2f%%)\n",
          static_cast<unsigned long long>(rounded(d.count)), name,
          100 * HyperLogLog::relative_error());
    }
  };
  out += '\n';
  distinct("paths", by_path);
  distinct("clients", by_host);
  distinct("programs", by_program);
  if (!per_minute.empty()) {
    const auto busiest =
        std::max_element(per_minute.begin(), per_minute.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    row("  minutes     %zu with traffic; busiest %s with %llu records\n", per_minute.size(),
        format_time(busiest->first * 60).c_str(), static_cast<unsigned long long>(busiest->second));
  }
  if (duration.count() > 0) {
    row("  duration    p50 %.4g s, p90 %.4g s, p99 %.4g s, max %.4g s\n", duration.quantile(0.5),
        duration.quantile(0.9), duration.quantile(0.99), duration.max());
  }
  return out;
}

}  // namespace conveyor::stages
