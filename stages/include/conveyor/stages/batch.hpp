// Batch and Slice: what the parse stage makes of a chunk, and the pieces of it that aggregation
// workers get. Records are views; `storage` keeps the chunk and the arena they point into alive
// for as long as any batch or slice of it is.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/stages/chunk.hpp"
#include "conveyor/stages/parsers.hpp"
#include "conveyor/stages/record.hpp"
#include "conveyor/stages/summary.hpp"

namespace conveyor::stages {

struct BatchStorage {
  Chunk chunk;
  Arena arena;
};

struct Batch {
  std::shared_ptr<const BatchStorage> storage;
  // The records the filter kept, split by a hash of their host into partitions.
  std::vector<std::vector<Record>> partitions;
  std::string output;        // the records as JSON lines, when records are written
  std::string dead_letters;  // the rejected lines as dead-letter JSON lines, when kept
  LineCounts counts;
  // The chunk's token (Chunk::ack), settled when the batch is destroyed; a sink that writes
  // through a buffer keeps a copy until the buffer is flushed.
  AckToken ack{};
  // The parse worker that made it: its slot in Tallies (Tallies::count).
  std::size_t worker = 0;
};

// One partition of a batch, for the aggregation worker that owns the partition.
struct Slice {
  std::shared_ptr<const BatchStorage> storage;
  std::size_t partition = 0;
  std::vector<Record> records;
  LineCounts counts;  // the batch's counts travel with its first slice
};

}  // namespace conveyor::stages
