// For unit tests of what runs on one worker (its ports), without threads: the worker's context with
// nothing around it, and the lanes that connect it to the workers on the other side of an edge.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "conveyor/framework/detail/control.hpp"
#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/framework/detail/worker_context.hpp"
#include "conveyor/framework/detail/worker_counters.hpp"
#include "conveyor/sync/doorbell.hpp"
#include "conveyor/sync/spsc_ring.hpp"

namespace conveyor::testing {

// One worker's context: its doorbell, the pipeline's control block and the worker's counters.
struct LoneWorker {
  sync::Doorbell bell;
  detail::Control control;
  detail::WorkerCounters counters;
  detail::WorkerContext context{bell, control, counters, 0};
};

// `count` lanes of `capacity` parcels, each with its return ring of `return_capacity` batches and
// the doorbell of the worker at its far end.
template <class T>
struct TestLanes {
  TestLanes(std::size_t count, std::size_t capacity, std::size_t return_capacity) {
    for (std::size_t i = 0; i < count; ++i) {
      lanes.push_back(std::make_unique<sync::SpscRing<detail::Parcel<T>>>(capacity));
      returns.push_back(std::make_unique<sync::SpscRing<detail::Batch<T>>>(return_capacity));
      bells.push_back(std::make_unique<sync::Doorbell>());
    }
  }

  std::vector<std::unique_ptr<sync::SpscRing<detail::Parcel<T>>>> lanes;
  std::vector<std::unique_ptr<sync::SpscRing<detail::Batch<T>>>> returns;
  std::vector<std::unique_ptr<sync::Doorbell>> bells;
};

}  // namespace conveyor::testing
