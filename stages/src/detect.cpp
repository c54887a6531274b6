// Format detection from the first lines of an input.
#include "conveyor/stages/detect.hpp"

#include <array>

#include "conveyor/stages/line_splitter.hpp"
#include "conveyor/stages/parsers.hpp"

namespace conveyor::stages {

Format detect_format(std::string_view text, std::size_t sample_lines) {
  // In order of preference when counts tie.
  constexpr std::array<Format, 4> candidates{Format::combined, Format::common, Format::json,
                                             Format::syslog};
  std::array<std::size_t, candidates.size()> parsed{};
  JsonParser json;
  Arena arena;
  Record record;
  std::size_t seen = 0;
  for_each_line(text, [&](std::string_view line, std::uint64_t) {
    if (seen == sample_lines || line.find_first_not_of(" \t") == std::string_view::npos) return;
    ++seen;
    parsed[0] += parse_combined(line, record) == nullptr ? 1 : 0;
    parsed[1] += parse_common(line, record) == nullptr ? 1 : 0;
    parsed[2] += json.parse(line, line.size(), record, arena) == nullptr ? 1 : 0;
    parsed[3] += parse_syslog(line, record, 1970) == nullptr ? 1 : 0;
    arena.clear();
  });
  std::size_t best = 0;
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    if (parsed[i] > parsed[best]) best = i;
  }
  return candidates[best];
}

std::string_view to_string(Format format) noexcept {
  switch (format) {
    case Format::auto_detect:
      return "auto";
    case Format::common:
      return "common";
    case Format::combined:
      return "combined";
    case Format::json:
      return "json";
    case Format::syslog:
      return "syslog";
  }
  return "unknown";
}

std::optional<Format> parse_format(std::string_view name) noexcept {
  for (const Format format :
       {Format::auto_detect, Format::common, Format::combined, Format::json, Format::syslog}) {
    if (name == to_string(format)) return format;
  }
  return std::nullopt;
}

}  // namespace conveyor::stages
