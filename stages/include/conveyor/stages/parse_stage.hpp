// ParseStage: Chunk -> Batch. Splits the chunk into lines without copying, parses each with the
// input's format, applies the filter, renders kept records as JSON lines (when asked to) and
// rejected lines as dead letters, and partitions the records for aggregation. Given Tallies, it
// counts the records itself, each worker into its own partial summary, and the batch carries
// only its text and line counts.
//
//   conveyor::stage(ParseStage(config), {.mode = conveyor::Mode::parallel, .workers = n})
//   conveyor::stage(ParseStage(config, tallies), {.mode = conveyor::Mode::parallel, .workers = n})
//
// Blank lines are counted and skipped. A line longer than `max_line_length`, or than its chunk's
// Input::max_line_length, is rejected (the source already drops those that do not fit in a
// chunk). Bad lines never stop the stage.
//
// Contract: each parallel worker gets its own copy (a copy has its own JSON parser); the config is
// shared and immutable.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include "conveyor/framework/emit.hpp"
#include "conveyor/stages/batch.hpp"
#include "conveyor/stages/chunk.hpp"
#include "conveyor/stages/filter.hpp"
#include "conveyor/stages/json_writer.hpp"
#include "conveyor/stages/parsers.hpp"
#include "conveyor/stages/tallies.hpp"

namespace conveyor::stages {

struct ParseConfig {
  Filter filter;
  Projection projection;
  bool write_records = true;
  bool write_dead_letters = true;
  std::size_t max_line_length = std::size_t{64} << 10;
  std::size_t partitions = 1;
  int syslog_year = 1970;  // the year RFC 3164 timestamps are taken to be in
};

// The current year in UTC: what syslog_year should be for logs written now.
int current_utc_year();

class ParseStage {
 public:
  explicit ParseStage(std::shared_ptr<const ParseConfig> config,
                      std::shared_ptr<Tallies> tallies = nullptr);
  ParseStage(const ParseStage& other);
  ParseStage& operator=(const ParseStage&) = delete;
  ~ParseStage();

  void operator()(Chunk chunk, Emit<Batch>& emit) { emit(parse(std::move(chunk), emit.worker())); }
  // The batch of `chunk`, parsed on worker `worker` (whose partial summary it counts into).
  Batch parse(Chunk chunk, std::size_t worker);

 private:
  std::shared_ptr<const ParseConfig> config_;
  std::shared_ptr<Tallies> tallies_;
  std::unique_ptr<JsonParser> json_;
  double output_per_byte_ = 1.5;   // of the last chunk: records' bytes for each byte of text
  double records_per_byte_ = 0.0;  // of the last chunk: records for each byte of text
};

}  // namespace conveyor::stages
