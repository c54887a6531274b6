// `log-ingest run`: read, parse, filter, aggregate, and write records, dead letters and a summary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/stages/record.hpp"
#include "conveyor/stages/summary.hpp"

namespace conveyor::log_ingest {

struct RunOptions {
  std::vector<std::string> inputs;  // files, "-" for stdin; none: the embedded sample
  stages::Format format = stages::Format::auto_detect;
  std::vector<std::string> where;   // filter expressions, all of which must hold
  std::vector<std::string> fields;  // projection of the records written; empty: all
  std::string out_dir = "log-ingest-out";
  std::string output;   // records: a file, "-" (stdout) or "none"; default out_dir/records.jsonl
  std::string summary;  // summary JSON: a file, "-" or "none"; default out_dir/summary.json
  std::string
      dead_letter;  // dead letters: a file, "-" or "none"; default out_dir/dead-letters.jsonl
  std::size_t workers = 0;     // 0: one per hardware thread
  bool progress = false;       // a progress bar on stderr, when stderr is a terminal
  std::string metrics_listen;  // serve /metrics there while running (HOST:PORT)
  std::size_t top = 10;
  stages::SummaryOptions summary_options;  // bounded top lists and distinct counts, or exact
  std::uint64_t sample_lines = 200'000;
  std::size_t chunk_size = std::size_t{512} << 10;
  std::size_t max_line_length = std::size_t{64} << 10;
  bool quiet = false;  // no table on the terminal
};

// Runs it; returns the exit status (0: done, even with rejected lines; 1: an I/O error; 2: a bad
// filter expression) after printing what went wrong.
int run_ingest(const RunOptions& options);

}  // namespace conveyor::log_ingest
