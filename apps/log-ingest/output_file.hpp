// OutputFile: one output of `log-ingest serve` (records or dead letters): a file appended to,
// stdout ("-"), or nothing ("none"), with the flush, fsync and rotation policies of the
// configuration's `outputs` section.
//
//   OutputFile records("out/records.jsonl", {.rotate_bytes = 100 << 20, .keep = 10});
//   records.write(batch_text, batch_records);   // failed: held, to be written by retry()
//
// - Flush: after each write unless `flush_records` or `flush_interval` is set; then once that
//   many records were written since the last flush, or that long has passed (checked at each
//   write and at each `tick`), or 16 MiB wait. `fsync` fsyncs at each flush (where it can).
// - Rotation: once the file holds `rotate_bytes`, or has been open for `rotate_interval`, it is
//   renamed `STEM-%Y%m%dT%H%M%S.EXT` after the time (UTC) it was started, a new one is started,
//   and rotated files beyond the `keep` newest are deleted. An empty file is not rotated.
// - `reopen` closes the file and opens its path again (logrotate's create mode).
// - Records count as written once a flush (and fsync) covering them succeeded. A write, flush or
//   fsync that fails loses nothing: the output holds every byte since its last good flush
//   (`holding`), takes what reached a regular file since then out again (so that no half record
//   stays, unless the truncation itself fails), and writes it all again at `retry`, to a file
//   opened again if it had none. Only `give_up` (or `close` after a failure), or a pipe whose
//   reader is gone (EPIPE), loses records, and says how many.
//
// Contract: not thread-safe; the caller serialises (ServeOutputs holds a mutex). An open that
// fails leaves no file, and the next write or retry tries again; the constructor throws
// std::runtime_error naming the path when the first open fails. The process must ignore SIGXFSZ
// and SIGPIPE, so that a write over a file size limit or to a closed pipe fails instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

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
  // How long a call may wait on a pipe, a socket or a terminal whose reader stalls: the writer
  // may; the service's timer never does, and leaves the rest for later (a regular file is
  // written either way).
  enum class Wait { may, never };

  // Appends `text`, which holds `records` records (to "none": written at once). While holding,
  // it is added to what is held, and retried with it.
  OutputResult write(std::string_view text, std::uint64_t records);
  // The flush and rotation that time makes due (the timer's: Wait::never).
  OutputResult tick();
  // Flushes now what is kept for a later flush (nothing while holding).
  OutputResult flush_now(Wait wait) { return flush(wait, false); }
  // How many flushes have succeeded so far (a file's, not "none"'s).
  [[nodiscard]] std::uint64_t flushes() const noexcept { return flushes_; }
  // Closes the file and opens its path again; what is held goes to the new file. Not a pipe.
  OutputResult reopen(Wait wait = Wait::may);
  // Flushes, fsyncs and closes (stdout is flushed, not closed); what cannot be written is lost.
  OutputResult close();

  // Whether a failure left records that are not written yet, waiting for `retry`.
  [[nodiscard]] bool holding() const noexcept { return failed_; }
  [[nodiscard]] std::uint64_t held_records() const noexcept { return failed_ ? unflushed_ : 0; }
  // What the last failure was (an errno value), for messages.
  [[nodiscard]] int error() const noexcept { return error_; }
  // Writes again everything held, opening the path first if it has no file, and starting the
  // next file first when the last failure was EFBIG and the file rotates by size.
  OutputResult retry(Wait wait = Wait::may);
  // Lets go of what is held after a failure: those records count as lost. Nothing otherwise.
  OutputResult give_up();

  [[nodiscard]] std::uint64_t rotations() const noexcept { return rotations_; }
  // Whether everything written so far was flushed (and fsynced, with that policy).
  [[nodiscard]] bool flushed() const noexcept { return unflushed_ == 0; }

 private:
  using Clock = std::chrono::steady_clock;

  bool open();
  bool close_descriptor();  // false if closing reported an error
  // Hands `bytes` to the file; how many it took before an error (errno says which: EAGAIN when
  // a pipe had no room and `wait` is never).
  std::size_t send(std::string_view bytes, Wait wait);
  // Sends what is kept and not sent yet: whether all of it went.
  bool send_pending(Wait wait);
  // fsyncs where the policy (or `sync`) asks for it and the output can be synced: false if that
  // failed (errno says why).
  [[nodiscard]] bool synced(bool sync) const;
  // Whether the file holds `rotate_bytes`: once the bytes sent say so, by the file's own size
  // (another program may have truncated it since: logrotate's copytruncate).
  [[nodiscard]] bool rotation_due() noexcept;
  // Sends what is kept and fsyncs (with that policy, or `sync`); the records since the last
  // flush are then written. A pipe with no room under Wait::never keeps the rest for later.
  OutputResult flush(Wait wait, bool sync);
  void mark_flushed() noexcept;  // everything since the last flush is written
  // After a failed write, flush or fsync (`sync_failed`): everything since the last good flush
  // is held, and what of it reached a regular file is taken out again.
  OutputResult hold(int error, bool sync_failed);
  OutputResult rotate(Wait wait);
  OutputResult start_next_file();  // renames the file after its start, prunes, opens the path
  // The rotated files beside the path: STEM-STAMP[-N].EXT.
  struct RotatedFile {
    std::string stamp;     // YYYYMMDDTHHMMSS (UTC)
    unsigned attempt = 0;  // N, 0 without one
    std::filesystem::path path;
  };
  [[nodiscard]] std::vector<RotatedFile> rotated_files() const;
  void prune() const;  // deletes all but the `keep` newest

  std::string path_;
  OutputPolicy policy_;
  int fd_ = -1;
  bool standard_output_ = false;
  bool regular_ = false;         // can be truncated and fsynced
  std::uint64_t size_ = 0;       // bytes in the file now, as far as it knows (for rotation)
  std::uint64_t unflushed_ = 0;  // records written since the last flush
  // The bytes since the last good flush (empty when each write flushed at once); the first
  // `sent_` reached the file.
  std::string pending_;
  std::size_t sent_ = 0;
  bool failed_ = false;  // holding, after a failure
  int error_ = 0;
  Clock::time_point flushed_at_{};  // the last flush
  Clock::time_point opened_at_{};   // when this file was started (for rotation by time)
  std::chrono::system_clock::time_point started_{};  // the same, for the rotated file's name
  std::uint64_t rotations_ = 0;
  std::uint64_t flushes_ = 0;
};

}  // namespace conveyor::log_ingest
