// ResourceTotals: the figures of the shared resources that the runs of one pipeline name track,
// added up over the runs without counting an access twice.
//
// A resource's own figures (ResourceStats) count over the resource object's lifetime, the same in
// every run that tracks it, and a service may make a fresh resource per job, keep one for all its
// runs, or run jobs side by side on one. So every resource object (ResourceStats::id) is counted
// up to where its figures were when the last run that tracked it finished: a run's end settles
// what the object added since then, and a snapshot adds what the live runs' objects added since.
// Objects of one name add up. The last figures of the `remembered` most recently used objects that
// no live run tracks are kept; an object forgotten and tracked again counts from zero. A resource
// whose figures carry no id (0: a resource type of the user's own) shows its latest run's figures.
// Figures only ever move forward, field by field: a run's final figures, taken before it reports
// its end, may be older than another run's, or than what a scrape in between showed.
//
// Contract: not thread-safe (PipelineMetrics calls it under its mutex). `run` identifies a run
// from its first tracks() (at its start, and again before each total(), for what it tracked
// since) to its finished().
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/framework/stats.hpp"

namespace conveyor::prometheus::detail {

class ResourceTotals {
 public:
  static constexpr std::size_t remembered = 1024;

  // The objects `run` tracks (those it had not, counted from now on as in use by it).
  void tracks(const void* run, const std::vector<ResourceStats>& resources);
  void finished(const void* run, const std::vector<ResourceStats>& resources);
  // The figures to export, given the live runs' resources now.
  [[nodiscard]] std::vector<ResourceStats> total(
      const std::vector<std::vector<ResourceStats>>& live) const;

 private:
  struct Seen {
    std::uint64_t id = 0;
    ResourceStats counted;        // its figures as far as they are settled
    mutable ResourceStats shown;  // the latest figures a total() showed: never shown less again
    std::size_t runs = 0;         // live runs that track it
  };
  Seen* find(std::uint64_t id);
  [[nodiscard]] const Seen* find(std::uint64_t id) const;
  Seen& use(std::uint64_t id);
  void forget_the_oldest();

  std::vector<Seen> seen_;                                  // least recently used first
  std::map<const void*, std::vector<std::uint64_t>> runs_;  // what each live run tracks
  std::vector<ResourceStats> settled_;
  std::vector<ResourceStats> unidentified_;
  // The wait time last exported per resource and group name: sums of the same parts added in
  // another order may round lower, and a counter must not go down.
  mutable std::map<std::pair<std::string, std::string>, double> exported_seconds_;
};

}  // namespace conveyor::prometheus::detail
