// shared_summary: a resource shared by stages, guarded by a group lock (seed 004).
//
// Many `update` workers add readings into one summary at the same time (members of one group do
// not exclude each other; the summary's counters are atomic), while a `snapshot` stage every few
// thousand readings takes a consistent view of it: the group lock keeps the updates out while a
// snapshot is inside, and the other way round. A snapshot is consistent when its count and its sum
// agree, which the program checks. At the end it prints the lock's statistics: how many accesses
// went straight in ("aces") and how many waited, and for how long.
//
//   shared_summary [--readings N] [--workers N]
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "command_line.hpp"
#include "conveyor/framework.hpp"

namespace {

struct Summary {
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::uint64_t> sum{0};  // of the readings' values, 1 each here
};

int run(std::uint64_t readings, std::size_t workers) {
  conveyor::Shared<Summary> summary("summary", {"update", "snapshot"});
  const std::size_t update = summary.group("update");
  const std::size_t snapshot = summary.group("snapshot");
  std::uint64_t snapshots = 0;
  std::uint64_t torn = 0;

  conveyor::Pipeline pipeline({.name = "readings"});
  pipeline.track(summary);
  std::uint64_t next = 0;
  pipeline.source([&]() -> std::optional<std::uint64_t> {
    if (next == readings) return std::nullopt;
    return next++;
  }) |
      conveyor::stage(
          [&](std::uint64_t reading) {
            summary.access(update, [](Summary& s) {
              s.count.fetch_add(1, std::memory_order_relaxed);
              s.sum.fetch_add(1, std::memory_order_relaxed);
            });
            return reading;
          },
          {.name = "update", .mode = conveyor::Mode::parallel, .workers = workers}) |
      conveyor::sink(
          [&](std::uint64_t reading) {
            if (reading % 5000 != 0) return;
            summary.access(snapshot, [&](Summary& s) {
              ++snapshots;
              // No update is inside: the two counters agree.
              if (s.count.load(std::memory_order_relaxed) !=
                  s.sum.load(std::memory_order_relaxed)) {
                ++torn;
              }
            });
          },
          {.name = "snapshot"});
  pipeline.run();

  const conveyor::PipelineStats stats = pipeline.stats();
  std::printf("%llu readings, %llu snapshots, %llu torn\n",
              static_cast<unsigned long long>(readings), static_cast<unsigned long long>(snapshots),
              static_cast<unsigned long long>(torn));
  for (const auto& group : stats.resources.at(0).groups) {
    std::printf("  %-9s entries %8llu  aces %8llu  waits %6llu  waited %.3f ms\n",
                group.name.c_str(), static_cast<unsigned long long>(group.entries),
                static_cast<unsigned long long>(group.aces),
                static_cast<unsigned long long>(group.waits), group.wait.sum_seconds * 1e3);
  }
  const bool ok = torn == 0 && stats.resources.at(0).groups.at(0).entries == readings;
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return conveyor::examples::guarded("shared_summary", [&] {
    CLI::App app{"Stages sharing one summary under a group lock: updates in, snapshots out"};
    std::uint64_t readings = 200'000;
    std::size_t workers = 3;
    app.add_option("--readings", readings, "Readings the source produces")->capture_default_str();
    app.add_option("--workers", workers, "Workers of the update stage")
        ->capture_default_str()
        ->check(CLI::Range(1, 64));
    if (const auto status = conveyor::examples::parse_command_line(app, argc, argv)) return *status;
    return run(readings, workers);
  });
}
