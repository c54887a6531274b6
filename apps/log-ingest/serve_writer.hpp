// ServeWriter: the last stage of `log-ingest serve`: writes each batch's records and dead letters
// to their files, flushes them (and fsyncs them, when configured), and keeps the service's
// accounting. A write that fails is counted (`log_ingest_output_errors_total{output}`) and the
// service goes on; the records of that batch count as lost on output.
//
//   conveyor::sink(ServeWriter(outputs), {.mode = conveyor::Mode::serial_in_order})
//
// Contract: one worker (serial). `Accounting` counters are relaxed atomics, read from any thread;
// once the pipeline has ended they are exact.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "conveyor/stages/batch.hpp"
#include "conveyor/stages/write_stage.hpp"

namespace conveyor::log_ingest {

struct Accounting {
  std::atomic<std::uint64_t> written{0};         // records written
  std::atomic<std::uint64_t> rejected{0};        // messages dead-lettered
  std::atomic<std::uint64_t> filtered{0};        // records the filter left out
  std::atomic<std::uint64_t> lost_on_output{0};  // records of batches whose write failed
  std::atomic<std::uint64_t> record_errors{0};   // failed writes of the records file
  std::atomic<std::uint64_t> dead_letter_errors{0};
};

struct ServeOutputs {
  stages::OutputFile records;  // `name` is the path it was opened from
  stages::OutputFile dead_letters;
  bool fsync = false;
  Accounting accounting;
  // Set from any thread (SIGHUP): the writer reopens both files by their paths before its next
  // batch, so that a file logrotate moved away is left and a new one is made.
  std::atomic<bool> reopen{false};

  // Flushes, fsyncs and closes both (stdout is flushed, not closed); false if one failed.
  bool close();
};

class ServeWriter {
 public:
  explicit ServeWriter(std::shared_ptr<ServeOutputs> outputs) : outputs_(std::move(outputs)) {}

  void operator()(const stages::Batch& batch);

 private:
  std::shared_ptr<ServeOutputs> outputs_;
};

}  // namespace conveyor::log_ingest
