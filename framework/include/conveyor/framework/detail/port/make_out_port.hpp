// make_out_port: the one place where the run-time description of an edge (the planner's Tagging,
// the consumer stage's batch size) becomes the policy types of its ports (tagging_*.hpp,
// batching_*.hpp); the consumer stage's Dispatch brings its policy object along
// (dispatch_policy.hpp). It runs once per worker, when the pipeline starts; the port it returns
// has no switch on any of them.
//
// Contract: the Dispatch outlives the port; `tagging` is never forward when `Forwarding` is false
// (a source's port: a source numbers what it emits or leaves it untagged).
#pragma once

#include <cstddef>
#include <memory>

#include "conveyor/framework/detail/out_port.hpp"
#include "conveyor/framework/detail/port/batching_batched.hpp"
#include "conveyor/framework/detail/port/batching_single.hpp"
#include "conveyor/framework/detail/port/policy_port.hpp"
#include "conveyor/framework/detail/port/tagging_forwarded.hpp"
#include "conveyor/framework/detail/port/tagging_numbered.hpp"
#include "conveyor/framework/options.hpp"
#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::detail {

struct PortChoice {
  const Dispatch* dispatch = nullptr;
  std::size_t batch = 1;
  Tagging tagging = Tagging::none;
  WindowGate* gate = nullptr;
};

template <class T, template <class> class Tagger>
std::unique_ptr<OutPort<T>> make_batching_port(WorkerContext& worker, WorkerCounters& counters,
                                               const typename OutPort<T>::Lanes& lanes,
                                               const PortChoice& choice) {
  const bool sequencer = choice.tagging == Tagging::sequencer;
  if (choice.batch == 1) {
    return std::make_unique<PolicyPort<T, Tagger, SingleItems>>(
        worker, counters, lanes, *choice.dispatch, choice.batch, sequencer, choice.gate);
  }
  return std::make_unique<PolicyPort<T, Tagger, Batches>>(worker, counters, lanes, *choice.dispatch,
                                                          choice.batch, sequencer, choice.gate);
}

// `Forwarding`: false for a source's port, which numbers what it emits and never forwards.
template <class T, bool Forwarding = true>
std::unique_ptr<OutPort<T>> make_out_port(WorkerContext& worker, WorkerCounters& counters,
                                          const typename OutPort<T>::Lanes& lanes,
                                          const PortChoice& choice) {
  if constexpr (Forwarding) {
    if (choice.tagging == Tagging::forward) {
      return make_batching_port<T, ForwardedOutput>(worker, counters, lanes, choice);
    }
  }
  CONVEYOR_CONTRACT(choice.tagging != Tagging::forward, "make_out_port: a source does not forward");
  return make_batching_port<T, NumberedOutput>(worker, counters, lanes, choice);
}

}  // namespace conveyor::detail
