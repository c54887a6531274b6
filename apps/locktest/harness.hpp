// The LockTest harness (LOCKTEST.CPP): groups x threads x loops of claim, sanity check, random
// hold, release, random pause; per-thread waits, turnaround, aces and goofups.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compound_lock.hpp"

namespace conveyor::locktest {

struct HarnessOptions {
  std::size_t groups = 2;             // GROUPS
  std::size_t threads_per_group = 3;  // NUMBEROFTHREADS
  std::size_t loops = 200;            // TESTLOOPS
  // Both sleeps are uniform in [0, max_sleep * time_scale), like DELAY +- DELAYBIAS.
  std::chrono::microseconds max_sleep{100'000};
  double time_scale = 1.0;
  std::uint64_t seed = 1994;
  // Every thread sleeps the same pseudo-random sequence, as in the paper: LOCKTEST.CPP calls
  // rand(), whose state the multithreaded C runtime keeps per thread, seeded with 1 in each. The
  // threads of a group then move in step, which is what makes the paper's group locks wait so
  // little.
  bool same_sleeps = false;
};

struct ThreadResult {
  std::size_t group = 0;
  std::size_t loops = 0;
  double turnaround_ms = 0;  // per loop
  double wait_sum_ms = 0;
  double wait_min_ms = 0;
  double wait_max_ms = 0;
  std::size_t aces = 0;        // claims that did not wait (under 1% of the longest sleep)
  std::size_t goofups = 0;     // loops in which a holder of another group was seen inside
  std::size_t group_peak = 0;  // most holders of this thread's group seen at once

  [[nodiscard]] double wait_average_ms() const {
    return loops == 0 ? 0.0 : wait_sum_ms / static_cast<double>(loops);
  }
};

struct GroupSummary {
  double wait_average_ms = 0;
  double wait_min_ms = 0;
  double wait_max_ms = 0;
  double turnaround_ms = 0;
  std::size_t aces = 0;
  std::size_t goofups = 0;
  std::size_t peak_holders = 0;
};

struct RunResult {
  std::string variant;
  double elapsed_ms = 0;
  std::vector<ThreadResult> threads;
  std::vector<GroupSummary> groups;

  [[nodiscard]] std::size_t goofups() const;
};

// Runs one experiment; `lock` must support options.groups groups.
RunResult run_experiment(const std::string& name, CompoundLock& lock,
                         const HarnessOptions& options);

}  // namespace conveyor::locktest
