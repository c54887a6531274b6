// WriteStage: Batch -> Slices. Writes a batch's records and dead letters to their files (in the
// order it receives batches: run it serial_in_order to keep the input's order), then hands each
// partition of records on for aggregation. WriteSink writes shared batches and hands nothing on,
// for a branch of a tee whose other branch counts the same batches (TallyStage).
//
//   conveyor::stage(WriteStage(outputs), {.mode = conveyor::Mode::serial_in_order})
//   conveyor::sink(WriteSink(outputs), {.mode = conveyor::Mode::serial_in_order})
//
// Contract: one worker (serial). A write that fails (a full disk, a closed pipe) throws
// std::runtime_error naming the file, which fails the pipeline.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "conveyor/framework/emit.hpp"
#include "conveyor/stages/batch.hpp"

namespace conveyor::stages {

// An open output file (or stdout), or none.
struct OutputFile {
  std::FILE* file = nullptr;
  std::string name;
  std::uint64_t bytes = 0;
};

struct Outputs {
  OutputFile records;
  OutputFile dead_letters;
};

class WriteStage {
 public:
  explicit WriteStage(std::shared_ptr<Outputs> outputs) : outputs_(std::move(outputs)) {}

  void operator()(Batch batch, Emit<Slice>& emit);

 private:
  std::shared_ptr<Outputs> outputs_;
};

class WriteSink {
 public:
  explicit WriteSink(std::shared_ptr<Outputs> outputs) : outputs_(std::move(outputs)) {}

  void operator()(const std::shared_ptr<const Batch>& batch);

 private:
  std::shared_ptr<Outputs> outputs_;
};

// Writes `batch`'s records and dead letters to `outputs`.
void write_batch(Outputs& outputs, const Batch& batch);

}  // namespace conveyor::stages
