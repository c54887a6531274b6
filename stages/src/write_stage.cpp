// WriteStage and WriteSink: records and dead letters to their files, partitions on to aggregation.
#include "conveyor/stages/write_stage.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace conveyor::stages {

namespace {

void write(OutputFile& output, const std::string& text) {
  if (output.file == nullptr || text.empty()) return;
  if (std::fwrite(text.data(), 1, text.size(), output.file) != text.size()) {
    throw std::runtime_error("cannot write to " + output.name + ": " +
                             std::generic_category().message(errno));
  }
  output.bytes += text.size();
}

}  // namespace

void write_batch(Outputs& outputs, const Batch& batch) {
  write(outputs.records, batch.output);
  write(outputs.dead_letters, batch.dead_letters);
}

void WriteSink::operator()(const std::shared_ptr<const Batch>& batch) {
  write_batch(*outputs_, *batch);
}

void WriteStage::operator()(Batch batch, Emit<Slice>& emit) {
  write_batch(*outputs_, batch);
  for (std::size_t p = 0; p < batch.partitions.size(); ++p) {
    if (p > 0 && batch.partitions[p].empty()) continue;
    Slice slice{batch.storage, p, std::move(batch.partitions[p]), {}};
    if (p == 0) slice.counts = std::move(batch.counts);
    if (!emit(std::move(slice))) return;
  }
}

}  // namespace conveyor::stages
