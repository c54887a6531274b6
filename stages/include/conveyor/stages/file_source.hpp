// FileSource: reads files (or stdin, named "-") in chunks of whole lines, gzip or not.
//
//   FileSource source({"access.log", "old.log.gz", "-"}, {});
//   while (std::optional<Chunk> chunk = source.next()) ...
//
// - Memory is O(chunk_size + max_line_length) however big the input is.
// - Gzip input is recognised by its magic number and inflated with zlib; other input is read
//   as is. Concatenated gzip members are read through.
// - A line longer than `max_line_length` that does not fit in a chunk is dropped while it is
//   read: the chunk after it reports it in `overlong` (its position, length and first bytes).
//   Shorter lines are never split between chunks.
// - With `Format::auto_detect`, each input's format is detected from its first chunk.
// - A read returns what the input has: from a pipe, lines are handed out as they arrive rather
//   than once a chunk is full.
// - `cancel()` ends the input early, even while a read waits on a quiet pipe or terminal: the
//   lines read so far are handed out (a last line cut short included) and next() then returns
//   nullopt without opening the remaining inputs.
//
// Contract: not thread-safe; one thread calls next(). `bytes_read()` and `bytes_total()` may be
// read from any thread (for a progress display), and `cancel()` from any thread or a signal
// handler. The constructor throws InputError naming the
// file when an input cannot be opened; next() throws InputError on a read error (a corrupt gzip
// stream, say), after the whole lines before it were returned.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "conveyor/stages/chunk.hpp"

namespace conveyor::stages {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct FileSourceOptions {
  std::size_t chunk_size = std::size_t{1} << 20;
  std::size_t max_line_length = std::size_t{64} << 10;
  Format format = Format::auto_detect;
};

class FileSource {
 public:
  FileSource(std::vector<std::string> paths, FileSourceOptions options);
  ~FileSource();
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  // The next chunk, or nullopt after the last input's last line.
  std::optional<Chunk> next();

  // Ends the stream early; async-signal-safe.
  void cancel() noexcept;

  // Bytes of the inputs read so far (compressed bytes for gzip), and their total size (0 when
  // unknown: stdin or a pipe).
  [[nodiscard]] std::uint64_t bytes_read() const noexcept {
    return bytes_read_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t bytes_total() const noexcept { return bytes_total_; }

  // Whether every input is a regular file (stdin too, when it is redirected from one): reading
  // never waits for a writer.
  [[nodiscard]] bool regular_files() const noexcept { return regular_files_; }

  // Bytes of an overlong line's head that a chunk keeps.
  static constexpr std::size_t overlong_head = 1024;

 private:
  struct Open;
  bool open_next();
  void close_current() noexcept;
  Chunk hand_out(Chunk chunk);

  std::vector<std::string> paths_;
  FileSourceOptions options_;
  std::size_t next_path_ = 0;
  std::unique_ptr<Open> current_;
  std::atomic<std::uint64_t> bytes_read_{0};  // relaxed: a progress figure only
  std::uint64_t bytes_done_ = 0;              // of the inputs already closed
  std::uint64_t bytes_total_ = 0;
  bool regular_files_ = true;
  int cancel_fd_ = -1;                  // an eventfd, readable once cancelled
  std::atomic<bool> cancelled_{false};  // relaxed: the eventfd is what a waiting read sees
};

}  // namespace conveyor::stages
