#include <cstddef>
#include <exception>

#include "conveyor/framework/detail/node.hpp"

namespace conveyor::detail {

Instance::Instance(NodeBase& node, const Wiring& wiring) : node_(node), wiring_(wiring) {}

Instance::~Instance() = default;

void Instance::run_worker(std::size_t worker) noexcept {
  Control& control = *wiring_.control;
  WorkerCounters& counters = node_.counters(worker);
  try {
    // A sink owes no wake-ups: it pushes to nobody.
    DeferredWakes* owed = worker < wiring_.owed.size() ? wiring_.owed[worker] : nullptr;
    WorkerContext context(*wiring_.own[worker], control, counters, worker, owed);
    run(context, worker);
  } catch (...) {
    // The failure cancels the pipeline.
    counters.errors.add(1);
    control.fail(std::current_exception());
  }
}

}  // namespace conveyor::detail
