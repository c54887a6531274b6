// Fuzzes the whole parse step as log-ingest runs it: format detection, the parser it picks, the
// filter, the JSON writers and the summary. Whatever the bytes, every line is counted once, every
// record and dead letter written is one line of valid JSON, and so is the summary; and a stage
// that counts into Tallies itself writes the same text and reports the same summary.
// The first input byte picks the format (auto-detected, or each parser in turn).
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "conveyor/stages/line_splitter.hpp"
#include "conveyor/stages/memory_source.hpp"
#include "conveyor/stages/parse_stage.hpp"
#include "conveyor/stages/summary.hpp"
#include "conveyor/stages/tallies.hpp"
#include "fuzz_support.hpp"

namespace {

using conveyor::fuzz::check;
using namespace conveyor::stages;

void check_json_lines(simdjson::dom::parser& parser, std::string_view text) {
  check(text.empty() || text.back() == '\n', "JSON output does not end in a newline");
  for_each_line(text, [&](std::string_view line, std::uint64_t) {
    const simdjson::padded_string padded(line);
    simdjson::dom::element element;
    if (parser.parse(padded).get(element) != simdjson::SUCCESS) {
      std::fprintf(stderr, "invalid JSON line: %.*s\n", static_cast<int>(line.size()), line.data());
      check(false, "a line of invalid JSON");
    }
    check(element.is_object(), "a JSON line that is not an object");
  });
}

std::shared_ptr<const ParseConfig> make_config() {
  auto config = std::make_shared<ParseConfig>();
  config->filter = Filter::parse("not (status == 404) or path ~ \"^/a\"");
  config->max_line_length = 512;
  config->partitions = 3;
  config->syslog_year = 2024;
  return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const std::shared_ptr<const ParseConfig> config = make_config();
  static ParseStage stage(config);
  static simdjson::dom::parser json;

  constexpr Format formats[] = {Format::auto_detect, Format::common, Format::combined, Format::json,
                                Format::syslog};
  const Format format = formats[data[0] % 5];
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::uint64_t lines = 0;
  for_each_line(text, [&](std::string_view, std::uint64_t) { ++lines; });

  MemorySource source("fuzz", text, {.chunk_size = 1024, .format = format});
  Summary summary;
  LineCounts counts;
  std::string written;
  while (std::optional<Chunk> chunk = source.next()) {
    const Batch batch = stage.parse(std::move(*chunk), 0);
    written += batch.output;
    check_json_lines(json, batch.output);
    check_json_lines(json, batch.dead_letters);
    std::uint64_t kept = 0;
    for (const auto& partition : batch.partitions) {
      for (const Record& record : partition)
        summary.add(record);
      kept += partition.size();
    }
    check(kept == batch.counts.records, "records and partitions disagree");
    counts.merge(batch.counts);
  }
  check(counts.lines == lines, "a line was lost or counted twice");
  check(counts.blank + counts.records + counts.filtered + counts.rejected == lines,
        "a line is neither blank, kept, filtered nor rejected");
  summary.add(counts);
  const std::string report = summary.to_json(5);
  const simdjson::padded_string padded(report);
  simdjson::dom::element element;
  check(json.parse(padded).get(element) == simdjson::SUCCESS, "the summary is not valid JSON");
  (void)summary.to_table(5);

  auto tallies = std::make_shared<Tallies>(1, SummaryOptions{});
  ParseStage counting(config, tallies);
  MemorySource again("fuzz", std::move(text), {.chunk_size = 1024, .format = format});
  std::string written_again;
  while (std::optional<Chunk> chunk = again.next()) {
    const Batch batch = counting.parse(std::move(*chunk), 0);
    check(batch.partitions.size() == 1 && batch.partitions[0].empty(), "tallied records kept");
    written_again += batch.output;
  }
  check(written_again == written, "counting in the stage changed what is written");
  check(tallies->merged().to_json(5) == report, "counting in the stage changed the summary");
  return 0;
}
