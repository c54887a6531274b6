// OutputFile: one output of `log-ingest serve` (records or dead letters): a file appended to,
// stdout ("-"), or nothing ("none"), with the flush, fsync and rotation policies of the
// configuration's `outputs` section.
//
//   OutputFile records("out/records.jsonl", {.rotate_bytes = 100 << 20, .keep = 10});
//   records.write(batch_text, batch_records);   // false: the write failed
//
// - Flush: after each write unless `flush_records` or `flush_interval` is set; then once that
//   many records were written since the last flush, or that long has passed (checked at each
//   write and at each `tick`). `fsync` fsyncs at each flush (where the file can be synced).
// - Rotation: once the file holds `rotate_bytes`, or has been open for `rotate_interval`, it is
//   renamed `STEM-%Y%m%dT%H%M%S.EXT` after the time (UTC) it was started, a new one is started,
//   and rotated files beyond the `keep` newest are deleted. An empty file is not rotated.
// - `reopen` closes the file and opens its path again (logrotate's create mode).
// - Each call says what became of the records (OutputResult): written once a flush (and fsync)
//   covering them succeeded; lost when a write, flush or fsync failed, in which case everything
//   since the last good flush is taken out again (the stream's buffer dropped, a regular file
//   truncated back to its size then), so that no half record stays and the next record starts a
//   line. A pipe or stdout cannot be truncated: a record cut short there stays cut.
//
// Contract: not thread-safe; the caller serialises (ServeOutputs holds a mutex). An open that
// fails leaves no file, and each write tries again; the constructor throws std::runtime_error
// naming the path when the first open fails.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "serve_config.hpp"

namespace conveyor::log_ingest {

// What one call did: records flushed into the file, records lost to a failure, and whether
// anything failed (a loss, or a rotation or reopen that did not work; the file is tried again).
struct OutputResult {
  std::uint64_t written = 0;
  std::uint64_t lost = 0;
  bool failed = false;

  OutputResult& operator+=(const OutputResult& other) {
    written += other.written;
    lost += other.lost;
    failed = failed || other.failed;
    return *this;
  }
  explicit operator bool() const noexcept { return !failed; }
};

class OutputFile {
 public:
  OutputFile(std::string path, const OutputPolicy& policy);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Whether there is somewhere to write (not "none").
  [[nodiscard]] bool enabled() const noexcept { return !path_.empty(); }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  // Appends `text`, which holds `records` records (to "none": written at once).
  OutputResult write(std::string_view text, std::uint64_t records);
  // The flush and rotation that time makes due.
  OutputResult tick();
  OutputResult reopen();
  // Flushes, fsyncs and closes (stdout is flushed, not closed).
  OutputResult close();

  [[nodiscard]] std::uint64_t rotations() const noexcept { return rotations_; }
  // Whether everything written so far was flushed (and fsynced, with that policy).
  [[nodiscard]] bool flushed() const noexcept { return unflushed_ == 0; }

 private:
  using Clock = std::chrono::steady_clock;

  bool open();
  OutputResult flush();
  // After a failed write or flush: what was written since the last good flush is taken out.
  OutputResult discard();
  OutputResult rotate();
  void prune() const;

  std::string path_;
  OutputPolicy policy_;
  std::FILE* file_ = nullptr;
  std::uint64_t size_ = 0;          // bytes in the file now
  std::uint64_t flushed_size_ = 0;  // bytes in it at the last good flush (or at its opening)
  std::uint64_t unflushed_ = 0;     // records written since the last flush
  Clock::time_point flushed_at_{};  // the last flush
  Clock::time_point opened_at_{};   // when this file was started (for rotation by time)
  std::chrono::system_clock::time_point started_{};  // the same, for the rotated file's name
  std::uint64_t rotations_ = 0;
};

}  // namespace conveyor::log_ingest
