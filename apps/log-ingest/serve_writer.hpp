// ServeWriter: the last stage of `log-ingest serve`: writes each batch's records and dead letters
// to their outputs (OutputFile: flushed, fsynced and rotated as configured), and keeps the
// service's accounting. Records count as written once flushed. A write or flush that fails is
// counted (`log_ingest_output_errors_total{output}`, once per attempt) and loses nothing: the
// output holds what it could not write, and the writer writes it again, waiting 50 ms, then twice
// as long each time up to 1 s, until the output takes it (a full disk that is freed, a directory
// made again). Meanwhile the writer takes no batch, so the pipeline and the inputs wait behind it,
// as they do for a slow disk. Only a pipe whose reader is gone, `abandon` (the drain's deadline),
// or the close at the end, loses records, counted as lost on output.
//
//   conveyor::sink(ServeWriter(outputs), {.mode = conveyor::Mode::serial_in_order})
//
// Batches' ack tokens (a tailed file's checkpoint waits for them) are settled once their lines are
// flushed: at once when each write flushes, otherwise kept until the flush that covers them (the
// two outputs flush together, so that neither holds the other's tokens back); a
// batch whose lines are lost has its token failed, so that its lines are read again after a
// restart.
//
// Contract: one worker (serial). `Accounting` counters are relaxed atomics, read from any thread;
// once the pipeline has ended they are exact. ServeOutputs' members may be called from any thread
// (its mutex serialises the files). `tick` and `reopen` never wait for the writer (they skip
// their turn while it holds the lock) nor on a pipe whose reader stalls; a regular file's write
// takes what the disk takes. `abandon` ends the writer's retries, not a write the kernel holds.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "conveyor/stages/batch.hpp"
#include "output_file.hpp"

namespace conveyor::log_ingest {

struct Accounting {
  std::atomic<std::uint64_t> written{0};         // records written (flushed)
  std::atomic<std::uint64_t> rejected{0};        // messages dead-lettered (flushed)
  std::atomic<std::uint64_t> filtered{0};        // records the filter left out
  std::atomic<std::uint64_t> lost_on_output{0};  // records and dead letters a failure took out
  std::atomic<std::uint64_t> record_errors{0};   // failed writes of the records file
  std::atomic<std::uint64_t> dead_letter_errors{0};
  std::atomic<std::uint64_t> records_held{0};  // records a failure left, waiting to be written
  std::atomic<std::uint64_t> dead_letters_held{0};
};

class ServeOutputs {
 public:
  // Throws std::runtime_error naming a path that cannot be opened.
  ServeOutputs(const std::string& records, const std::string& dead_letters,
               const OutputPolicy& policy)
      : records_(records, policy), dead_letters_(dead_letters, policy) {}

  [[nodiscard]] bool writes_records() const noexcept { return records_.enabled(); }
  [[nodiscard]] bool writes_dead_letters() const noexcept { return dead_letters_.enabled(); }

  // Writes a batch. While an output holds what a failure left, returns only once it took it (or
  // once abandoned).
  void write(const stages::Batch& batch);
  // Flushes and rotates what time has made due (the service's timer); never waits for a write in
  // progress, which does what is due itself.
  void tick();
  // Closes both files and opens their paths again (SIGHUP), now or, if a write is in progress,
  // before the next: a file logrotate moved away is left, and a new one is made. Never waits.
  void reopen();
  // From now on, what an output holds after a failure is given up (lost, counted, its tokens
  // failed) instead of retried: the writer waits no more (the drain's deadline). Never blocks.
  void abandon();
  // Flushes, fsyncs and closes both (stdout is flushed, not closed), with one last try of what
  // they hold; false if one failed (what it held is then lost on output).
  bool close();

  Accounting accounting;

 private:
  using Clock = std::chrono::steady_clock;

  // Does the reopen asked for, if one was; whether it did.
  bool reopen_if_asked(OutputFile::Wait wait);
  [[nodiscard]] bool holding() const noexcept {
    return records_.holding() || dead_letters_.holding();
  }
  // Writes again what the outputs hold.
  void retry(OutputFile::Wait wait);
  // When one output has flushed since it had made the given number of flushes, and the other
  // keeps records for later, flushes that one too.
  void flush_together(OutputFile::Wait wait, std::uint64_t records_flushes,
                      std::uint64_t dead_letter_flushes);
  // After an attempt: the wait before the next retry, and a line on stderr when the outputs start
  // holding records and when they have written them.
  void note_holding(bool was_holding);
  // Counts what the two files did, and settles the tokens: failed, when some lines were lost;
  // done, once both files are flushed.
  void account(const OutputResult& records, const OutputResult& dead_letters);

  std::mutex mutex_;                 // guards the files and the tokens
  std::vector<AckToken> unflushed_;  // of batches written, not flushed yet
  std::atomic<bool> reopen_{false};  // asked for, not done yet
  // Set by abandon() on any thread, read by the writer between retries. Relaxed: a flag that
  // publishes nothing; the writer sees it at its next look (at most 20 ms later).
  std::atomic<bool> abandoned_{false};
  Clock::duration backoff_{};  // the wait before the next retry
  Clock::time_point retry_at_{};
  std::uint64_t attempts_ = 0;     // failed writes since the outputs last took everything
  bool records_reported_ = false;  // the start of the current hold was logged
  bool dead_letters_reported_ = false;
  OutputFile records_;
  OutputFile dead_letters_;
};

class ServeWriter {
 public:
  // `fail_at` (tests): the write of that batch (1-based) throws instead, and fails the pipeline;
  // 0 for none.
  explicit ServeWriter(std::shared_ptr<ServeOutputs> outputs, std::uint64_t fail_at = 0)
      : outputs_(std::move(outputs)), fail_at_(fail_at) {}

  void operator()(const stages::Batch& batch) {
    if (++writes_ == fail_at_) {
      std::string what = "the write of batch ";
      what += std::to_string(writes_);
      what += " failed (CONVEYOR_WRITE_FAULT)";
      throw std::runtime_error(what);
    }
    outputs_->write(batch);
  }

 private:
  std::shared_ptr<ServeOutputs> outputs_;
  std::uint64_t fail_at_;
  std::uint64_t writes_ = 0;
};

}  // namespace conveyor::log_ingest
