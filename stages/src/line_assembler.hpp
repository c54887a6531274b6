// LineAssembler: the bytes of one input, as they are read, into chunks of whole lines with exact
// positions. Shared by FileSource (files read once) and FileTailer (files followed).
//
//   std::size_t kept = 0;
//   std::string buffer = assembler.buffer(size, kept);  // what is carried, then room for `size`
//   buffer.resize(kept + read(buffer.data() + kept, size));
//   if (auto cut = assembler.cut(std::move(buffer))) emit(std::move(cut->chunk));
//
// - A chunk's text is the whole lines read so far; the start of a line whose end has not been read
//   is carried to the next read. A line longer than `max_line_length` that is still unfinished
//   when a read ends is dropped while it is read, and the chunk after its end reports it in
//   `overlong` (position, length, first `overlong_head` bytes). Shorter lines are never split.
// - `end` is the input offset just after what the cut accounts for: its text, and the overlong
//   lines before it. Everything before `end` is handed out; a checkpoint may commit it.
// - `finish(cut_short)` hands out what is carried as a last line (without its newline), at the end
//   of an input; `cut_short` reports it as an interrupted line instead. `flush()` does the same for
//   an input that goes on (a tailed file whose last line was left unfinished too long), and the
//   line's end, when it comes, starts a new line; an overlong line it is skipping is reported in
//   `overlong` then.
//
// Contract: one thread uses an assembler. Chunks come with `read_ahead_padding` bytes of capacity
// reserved after their text; `input` is left for the caller to set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/stages/chunk.hpp"

namespace conveyor::stages::detail {

struct Cut {
  Chunk chunk;
  std::uint64_t end = 0;
};

class LineAssembler {
 public:
  static constexpr std::size_t overlong_head = 1024;

  // `line` and `offset`: the position of the first byte this assembler will be given. A line of
  // 0 means line numbers are unknown (a tailed file resumed from a checkpoint).
  explicit LineAssembler(std::size_t max_line_length, std::uint64_t line = 1,
                         std::uint64_t offset = 0)
      : max_line_length_(max_line_length), line_(line), offset_(offset) {}

  // The carried bytes (`kept` of them), with room for `size` more after them; the caller reads
  // into the room and shrinks the buffer to what it read.
  std::string buffer(std::size_t size, std::size_t& kept);
  // The whole lines of `buffer` (from buffer()), or nullopt when it holds none and no overlong
  // line ended in it.
  std::optional<Cut> cut(std::string buffer);
  std::optional<Cut> finish(bool cut_short);
  std::optional<Cut> flush();

  // Bytes carried: the start of an unfinished line (0 while an overlong line is skipped).
  [[nodiscard]] std::size_t carried() const noexcept { return carry_.size(); }
  [[nodiscard]] bool skipping() const noexcept { return skipping_; }
  // The offset of the first byte not handed out (the carry's, or the skipped line's).
  [[nodiscard]] std::uint64_t offset() const noexcept { return offset_; }

 private:
  std::optional<Cut> make(std::string text, std::uint64_t first_line, std::uint64_t offset,
                          std::uint64_t end);
  void next_line(std::uint64_t count = 1) noexcept {
    if (line_ != 0) line_ += count;
  }
  // Whether the carry is longer than a line may be. As for a whole line, a '\r' that ends it
  // does not count: it is half of a "\r\n" whose '\n' the next read brings.
  [[nodiscard]] bool carry_too_long() const noexcept {
    const std::size_t length = carry_.size() - (!carry_.empty() && carry_.back() == '\r' ? 1 : 0);
    return length > max_line_length_;
  }

  std::size_t max_line_length_;
  std::uint64_t line_;                  // number of the line that starts at `offset_` (0: unknown)
  std::uint64_t offset_;                // offset of the first byte not yet handed out
  std::string carry_;                   // the start of a line whose end has not been read yet
  bool skipping_ = false;               // inside an overlong line, dropping its bytes
  OverlongLine pending_;                // that line
  std::vector<OverlongLine> overlong_;  // finished overlong lines, for the next chunk
};

}  // namespace conveyor::stages::detail
