// ParseStage: lines to records, dead letters and partitions.
#include "conveyor/stages/parse_stage.hpp"

#include <ctime>
#include <functional>
#include <string_view>
#include <utility>

#include "conveyor/stages/line_splitter.hpp"

namespace conveyor::stages {

namespace {

constexpr std::string_view too_long = "line too long";
constexpr std::string_view interrupted = "interrupted before the end of the line";

}  // namespace

ParseStage::ParseStage(std::shared_ptr<const ParseConfig> config, std::shared_ptr<Tallies> tallies)
    : config_(std::move(config)),
      tallies_(std::move(tallies)),
      json_(std::make_unique<JsonParser>()) {}

ParseStage::ParseStage(const ParseStage& other)
    : config_(other.config_), tallies_(other.tallies_), json_(std::make_unique<JsonParser>()) {}

ParseStage::~ParseStage() = default;

Batch ParseStage::parse(Chunk chunk, std::size_t worker) {
  const ParseConfig& config = *config_;
  Summary* const summary = tallies_ ? &tallies_->summary(worker) : nullptr;
  LiveTotals::Counts live;
  auto storage = std::make_shared<BatchStorage>();
  storage->chunk = std::move(chunk);
  const Chunk& in = storage->chunk;
  Batch batch;
  batch.worker = worker;
  // The token goes with the batch, which outlives the chunk when a summary counts it here.
  batch.ack = std::move(storage->chunk.ack);
  const Input& input = *in.input;
  const RecordWriter writer(input, config.projection);
  batch.partitions.resize(summary != nullptr || config.partitions == 0 ? 1 : config.partitions);
  LineCounts& counts = batch.counts;
  // Room for the records at once, instead of copying a growing half megabyte over: as much for
  // each byte of text as the last chunk's records took (1.3 for access logs, 1.55 for a tailed
  // file's, which say where they were read), and a sixteenth more.
  if (config.write_records) {
    batch.output.reserve(
        static_cast<std::size_t>(static_cast<double>(in.text.size()) * output_per_byte_ * 1.0625) +
        256);
  }

  for (const OverlongLine& line : in.overlong) {
    ++counts.lines;
    const std::string_view reason = line.interrupted ? interrupted : too_long;
    counts.reject(reason);
    if (config.write_dead_letters) {
      append_dead_letter(batch.dead_letters, input, line.line, line.offset, reason, line.length,
                         line.head);
    }
  }

  const std::string_view text = in.text;
  // Room for the records kept here too, by the last chunk's records per byte: growing the
  // vector would copy them over several times.
  if (summary == nullptr && batch.partitions.size() == 1) {
    batch.partitions.front().reserve(
        static_cast<std::size_t>(static_cast<double>(text.size()) * records_per_byte_ * 1.0625) +
        16);
  }
  const std::size_t max_line_length = input.max_line_length != 0
                                          ? std::min(config.max_line_length, input.max_line_length)
                                          : config.max_line_length;
  const char* const readable_end = in.text.data() + in.text.capacity();
  Record record;
  for_each_line(text, [&](std::string_view line, std::uint64_t index) {
    ++counts.lines;
    if (blank_line(line)) {
      ++counts.blank;
      return;
    }
    ParseError error = nullptr;
    if (line.size() > max_line_length) {
      error = too_long.data();
    } else {
      switch (input.format) {
        case Format::common:
          error = parse_common(line, record);
          break;
        case Format::json:
          error = json_->parse(line, static_cast<std::size_t>(readable_end - line.data()), record,
                               storage->arena);
          break;
        case Format::syslog:
          error = parse_syslog(line, record, config.syslog_year);
          break;
        case Format::combined:
        case Format::auto_detect:
          error = parse_combined(line, record);
          break;
      }
    }
    const std::uint64_t number = in.first_line == 0 ? 0 : in.first_line + index;
    const std::uint64_t offset =
        in.offset == unknown_offset
            ? unknown_offset
            : in.offset + static_cast<std::uint64_t>(line.data() - text.data());
    if (error != nullptr) {
      counts.reject(error);
      if (config.write_dead_letters) {
        append_dead_letter(batch.dead_letters, input, number, offset, error, line.size(),
                           line.substr(0, std::min(line.size(), max_line_length)));
      }
      return;
    }
    if (!config.filter.matches(record)) {
      ++counts.filtered;
      return;
    }
    ++counts.records;
    if (config.write_records) {
      writer.append(batch.output, record, number, offset);
    }
    if (summary != nullptr) {
      summary->add(record);
      live.add(record);
      record = Record{};
      return;
    }
    const std::size_t partition =
        batch.partitions.size() == 1
            ? 0
            : std::hash<std::string_view>{}(record.host) % batch.partitions.size();
    batch.partitions[partition].push_back(std::move(record));
    record = Record{};
  });
  if (config.write_records && !text.empty()) {
    output_per_byte_ = static_cast<double>(batch.output.size()) / static_cast<double>(text.size());
  }
  if (!text.empty()) {
    records_per_byte_ = static_cast<double>(counts.records) / static_cast<double>(text.size());
  }
  if (summary != nullptr) {
    // Counted here: the batch keeps its text and line counts, and the chunk can go.
    tallies_->add_batch(worker, batch.counts, live);
  } else {
    batch.storage = std::move(storage);
  }
  return batch;
}

int current_utc_year() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  return utc.tm_year + 1900;
}

}  // namespace conveyor::stages
