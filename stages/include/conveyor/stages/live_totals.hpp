// LiveTotals: what the aggregation workers have counted so far, for a reader while the run goes
// on (log-ingest's metrics endpoint), shared through conveyor::Shared (a GroupLock, seed 004).
//
//   auto live = std::make_shared<conveyor::Shared<LiveTotals>>(
//       "live-totals", std::vector<std::string>{"update", "snapshot"}, LiveTotals(workers));
//   AggregateStage(options, live)              // each worker adds into its own slot: "update"
//   live->access(LiveTotals::snapshot, [](const LiveTotals& t) { return t.total(); });
//
// The aggregation workers are inside together, each writing only its own slot, so that adding a
// slice's counts costs no read-modify-write on a shared line; a reader gets the group to itself
// and so sees every slot as of one moment.
//
// Contract: `add` only inside the `update` group, with the worker's own index; `total` inside the
// `snapshot` group.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "conveyor/stages/batch.hpp"

namespace conveyor::stages {

struct LiveTotals {
  static constexpr std::size_t update = 0;
  static constexpr std::size_t snapshot = 1;

  // Status classes: 1xx .. 5xx, and anything else (no status, or out of range).
  static constexpr std::size_t status_classes = 6;

  struct Counts {
    std::uint64_t lines = 0;
    std::uint64_t records = 0;
    std::uint64_t rejected = 0;
    std::uint64_t filtered = 0;
    std::uint64_t bytes = 0;
    std::array<std::uint64_t, status_classes> by_status_class{};

    void add(const Counts& other) noexcept;
    // A record's size and status class (not its line: those come with the batch's LineCounts).
    void add(const Record& record) noexcept;
    // What happened to a batch's lines.
    void add(const LineCounts& counts) noexcept;
  };

  explicit LiveTotals(std::size_t workers = 1) : slots(workers) {}

  // Worker `worker` aggregated `slice`.
  void add(std::size_t worker, const Slice& slice) noexcept;
  // Worker `worker` counted these.
  void add(std::size_t worker, const Counts& counts) noexcept { slots[worker].counts.add(counts); }
  [[nodiscard]] Counts total() const noexcept;

  // One cache line each: workers write their slots together.
  struct alignas(64) Slot {
    Counts counts;
  };
  std::vector<Slot> slots;
};

}  // namespace conveyor::stages
