// MemorySource: chunks of whole lines from text held in memory (an embedded sample, a test).
//
//   MemorySource source("sample", std::move(text), {});
//   while (std::optional<Chunk> chunk = source.next()) ...
//
// Same chunks as FileSource would make of a file with that text (the format is detected from the
// first chunk when auto), except that lines are never too long to fit: a line longer than the
// chunk size makes a chunk of its own, and the parse stage rejects it when it is over the limit.
// Contract: not thread-safe; one thread calls next().
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "conveyor/stages/chunk.hpp"
#include "conveyor/stages/count_lines.hpp"
#include "conveyor/stages/detect.hpp"
#include "conveyor/stages/file_source.hpp"

namespace conveyor::stages {

class MemorySource {
 public:
  MemorySource(std::string name, std::string text, FileSourceOptions options)
      : text_(std::move(text)), options_(options) {
    input_ = std::make_shared<Input>(Input{std::move(name), 0, options.format, false});
  }

  std::optional<Chunk> next() {
    if (at_ >= text_.size()) return std::nullopt;
    const std::string_view rest = std::string_view(text_).substr(at_);
    std::size_t size = rest.size();
    if (size > options_.chunk_size) {
      std::size_t newline = rest.rfind('\n', options_.chunk_size - 1);
      if (newline == std::string_view::npos) newline = rest.find('\n', options_.chunk_size);
      if (newline != std::string_view::npos) size = newline + 1;
    }
    Chunk chunk;
    chunk.text.reserve(size + read_ahead_padding);
    chunk.text.assign(rest.substr(0, size));
    chunk.first_line = line_;
    chunk.offset = at_;
    line_ += count_newlines(chunk.text);
    at_ += size;
    read_.store(at_, std::memory_order_relaxed);
    if (input_->format == Format::auto_detect) input_->format = detect_format(chunk.text);
    chunk.input = input_;
    return chunk;
  }

  // May be read from any thread (a progress display).
  [[nodiscard]] std::uint64_t bytes_read() const noexcept {
    return read_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t bytes_total() const noexcept { return text_.size(); }

 private:
  std::string text_;
  FileSourceOptions options_;
  std::shared_ptr<Input> input_;
  std::size_t at_ = 0;
  std::atomic<std::uint64_t> read_{0};  // relaxed: a progress figure only
  std::uint64_t line_ = 1;
};

}  // namespace conveyor::stages
