// Chunk: a run of whole lines read from one input, the unit that travels from the source to the
// parsers. Lines are split out of it without copying (line_splitter.hpp), and the records parsed
// from it point into its text, so it lives as long as they do (see batch.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/framework/ack.hpp"
#include "conveyor/stages/record.hpp"

namespace conveyor::stages {

// One input (a file, or stdin as "-"), shared by the chunks read from it.
struct Input {
  std::string name;
  std::size_t index = 0;                // position on the command line
  Format format = Format::auto_detect;  // resolved from the first chunk when auto
  bool gzip = false;
  std::string file{};  // a tailed file: records carry it ("file") with their offset
  // Lines longer are rejected as too long, whatever the pipeline's own limit (0: only that one).
  std::size_t max_line_length = 0;
};

// An offset that is not known (Chunk::offset, OverlongLine::offset).
inline constexpr std::uint64_t unknown_offset = UINT64_MAX;

// A line the source dropped because it was longer than the limit: only its beginning is kept, so
// memory stays bounded however long the line is.
// A line that is not parsed: longer than the limit, or cut short because reading was cancelled
// (Ctrl-C) before its end was read. It is dead-lettered with its head.
struct OverlongLine {
  std::uint64_t line = 0;    // 1-based line number in its input
  std::uint64_t offset = 0;  // byte offset of its first byte in the (decompressed) input
  std::uint64_t length = 0;  // its length without the newline (as far as it was read)
  std::string head;          // its first bytes
  bool interrupted = false;  // cut short by a cancel, not too long
};

inline constexpr std::size_t read_ahead_padding = 64;

struct Chunk {
  std::shared_ptr<const Input> input;
  // Whole lines, each ending in '\n', except maybe the last line of an input. Sources reserve
  // `read_ahead_padding` bytes of capacity after them, for parsers that read ahead (simdjson).
  std::string text;
  // 1-based number of text's first line in its input, and the byte offset of text in the
  // (decompressed) input. A first_line of 0 means line numbers are unknown (a tailed file resumed
  // from a checkpoint), an offset of unknown_offset that offsets are (a chunk that joins the lines
  // of several streams of one input); records and dead letters then leave them out.
  std::uint64_t first_line = 1;
  std::uint64_t offset = 0;
  std::vector<OverlongLine> overlong;  // dropped just before this chunk's text
  // Settled once every record of the chunk is done with (a tailed file's checkpoint waits for it):
  // the batch parsed from it holds the chunk until it is destroyed.
  AckToken ack{};
};

}  // namespace conveyor::stages
