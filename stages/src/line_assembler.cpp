// LineAssembler: whole lines out of reads, overlong lines dropped while they are read.
#include "line_assembler.hpp"

#include <algorithm>
#include <utility>

#include "conveyor/stages/count_lines.hpp"

namespace conveyor::stages::detail {

std::string LineAssembler::buffer(std::size_t size, std::size_t& kept) {
  std::string buffer = std::move(carry_);
  carry_.clear();
  kept = buffer.size();
  // With the padding reserved now, handing the chunk out never moves its text.
  buffer.reserve(kept + size + read_ahead_padding);
  buffer.resize(kept + size);
  return buffer;
}

std::optional<Cut> LineAssembler::make(std::string text, std::uint64_t first_line,
                                       std::uint64_t offset, std::uint64_t end) {
  if (text.empty() && overlong_.empty()) return std::nullopt;
  Cut cut;
  cut.chunk.text = std::move(text);
  cut.chunk.text.reserve(cut.chunk.text.size() + read_ahead_padding);
  cut.chunk.first_line = first_line;
  cut.chunk.offset = offset;
  cut.chunk.overlong = std::move(overlong_);
  overlong_.clear();
  cut.end = end;
  return cut;
}

std::optional<Cut> LineAssembler::cut(std::string buffer) {
  std::size_t start = 0;
  if (skipping_) {
    const std::size_t newline = buffer.find('\n');
    const std::size_t upto = newline == std::string::npos ? buffer.size() : newline;
    // The head may still be short of overlong_head when the limit is lower than that.
    if (pending_.head.size() < overlong_head) {
      pending_.head.append(buffer, 0, std::min(upto, overlong_head - pending_.head.size()));
    }
    pending_.length += upto;
    if (newline == std::string::npos) {
      offset_ += buffer.size();
      return std::nullopt;
    }
    overlong_.push_back(std::move(pending_));
    skipping_ = false;
    next_line();
    offset_ += upto + 1;
    start = upto + 1;
  }

  const std::size_t last = buffer.rfind('\n');
  const std::size_t whole_end = last == std::string::npos || last < start ? start : last + 1;
  carry_.assign(buffer, whole_end, std::string::npos);
  buffer.resize(whole_end);
  if (start > 0) buffer.erase(0, start);

  const std::uint64_t first_line = line_;
  const std::uint64_t offset = offset_;
  next_line(count_newlines(buffer));
  offset_ += buffer.size();
  const std::uint64_t end = offset_;
  if (carry_too_long()) {
    pending_ = OverlongLine{line_, offset_, carry_.size(), carry_.substr(0, overlong_head)};
    skipping_ = true;
    offset_ += carry_.size();
    carry_.clear();
  }
  return make(std::move(buffer), first_line, offset, end);
}

std::optional<Cut> LineAssembler::finish(bool cut_short) {
  std::string text;
  if (skipping_) {
    overlong_.push_back(std::move(pending_));
    skipping_ = false;
    next_line();
  } else if (carry_too_long()) {
    overlong_.push_back(
        OverlongLine{line_, offset_, carry_.size(), carry_.substr(0, overlong_head)});
    offset_ += carry_.size();
    carry_.clear();
    next_line();
  } else if (cut_short && !carry_.empty()) {
    // Reading stopped before this line's end: it is not parsed as if it were whole.
    overlong_.push_back(
        OverlongLine{line_, offset_, carry_.size(), carry_.substr(0, overlong_head), true});
    offset_ += carry_.size();
    carry_.clear();
    next_line();
  } else {
    text = std::move(carry_);
    carry_.clear();
  }
  const std::uint64_t first_line = line_;
  const std::uint64_t offset = offset_;
  offset_ += text.size();
  if (!text.empty()) next_line();
  return make(std::move(text), first_line, offset, offset_);
}

std::optional<Cut> LineAssembler::flush() {
  if (!skipping_ && carry_.empty()) return std::nullopt;
  std::optional<Cut> cut = finish(false);
  if (cut && !cut->chunk.text.empty() && cut->chunk.text.back() != '\n') {
    cut->chunk.text.push_back('\n');  // a whole line now; `end` still counts the input's bytes
  }
  return cut;
}

}  // namespace conveyor::stages::detail
