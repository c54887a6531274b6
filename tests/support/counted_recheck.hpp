// CountedRecheck: a recheck for sync::Waiter (and so for a pipeline worker's WorkerContext) that
// only counts how often it ran, for tests of when the rechecks run.
#pragma once

#include <atomic>

namespace conveyor::testing {

struct CountedRecheck {
  std::atomic<int> runs{0};
  static void run(const void* self) {
    // Relaxed: read by the test's own thread after the waits it counts.
    static_cast<CountedRecheck*>(const_cast<void*>(self))
        ->runs.fetch_add(1, std::memory_order_relaxed);
  }
};

}  // namespace conveyor::testing
