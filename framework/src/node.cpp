#include <cstddef>
#include <exception>
#include <stdexcept>
#include <typeindex>

#include "conveyor/framework/detail/node.hpp"
#include "conveyor/sync/detail/contract.hpp"

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

std::unique_ptr<FusedStep> Instance::fused_step(WorkerContext& /*context*/,
                                                std::size_t /*worker*/) {
  CONVEYOR_CONTRACT(false, "Instance::fused_step: this node cannot be fused");
  return nullptr;
}

void Instance::fail_fused(WorkerContext& context, WorkerCounters& counters) noexcept {
  counters.errors.add(1);
  context.control().fail(std::current_exception());
}

void check_input_options(const NodeBase& node, const std::type_info& item, bool item_copyable) {
  const StageOptions& options = node.options();
  if (options.channel.capacity() == 0) {
    throw std::invalid_argument("stage '" + node.name() + "': a channel needs at least one slot");
  }
  if (options.in_flight == 0) {
    throw std::invalid_argument("stage '" + node.name() + "': in_flight must be at least 1");
  }
  if (options.in_flight != 1 && !node.asynchronous()) {
    throw std::invalid_argument("stage '" + node.name() +
                                "': in_flight is for asynchronous stages (code that returns an "
                                "asio::awaitable); a synchronous stage takes one item at a time");
  }
  if (options.batch == 0) {
    throw std::invalid_argument("stage '" + node.name() + "': the batch size must be at least 1");
  }
  const Dispatch& dispatch = options.dispatch;
  if (dispatch.policy().keyed() && dispatch.item_type() != std::type_index(item)) {
    throw std::invalid_argument("stage '" + node.name() +
                                "': Dispatch::by_key's key function takes another type than the "
                                "items this stage receives");
  }
  if (dispatch.policy().copies() && !item_copyable && node.workers() > 1) {
    throw std::invalid_argument("stage '" + node.name() +
                                "': Dispatch::broadcast needs copyable items");
  }
}

}  // namespace conveyor::detail
