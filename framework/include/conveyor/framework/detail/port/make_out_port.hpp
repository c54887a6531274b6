// make_out_port: the one place where the run-time description of an edge (the planner's Tagging,
// the consumer stage's batch size) becomes the policy types of its ports (tagging_*.hpp,
// batching_*.hpp); the consumer stage's Dispatch brings its policy object along
// (dispatch_policy.hpp). It runs once per worker, when the pipeline starts; the port it returns
// has no switch on any of them. A route's edge takes the route's own ports (`Routes`), made by the
// PortMaker that route.hpp instantiates for the route's item type and the planner hands to the
// route's producers (Wiring::route_port), so that no other edge compiles the route's code.
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

template <class T, template <class> class Tagger, bool Routes>
std::unique_ptr<OutPort<T>> make_batching_port(WorkerContext& worker, WorkerCounters& counters,
                                               const typename OutPort<T>::Lanes& lanes,
                                               const PortChoice& choice) {
  const bool sequencer = choice.tagging == Tagging::sequencer;
  if (choice.batch == 1) {
    return std::make_unique<PolicyPort<T, Tagger, SingleItems, Routes>>(
        worker, counters, lanes, *choice.dispatch, choice.batch, sequencer, choice.gate);
  }
  return std::make_unique<PolicyPort<T, Tagger, Batches, Routes>>(
      worker, counters, lanes, *choice.dispatch, choice.batch, sequencer, choice.gate);
}

// `Forwarding`: false for a source's port, which numbers what it emits and never forwards.
// `Routes`: the port of a route's edge.
template <class T, bool Forwarding = true, bool Routes = false>
std::unique_ptr<OutPort<T>> make_out_port(WorkerContext& worker, WorkerCounters& counters,
                                          const typename OutPort<T>::Lanes& lanes,
                                          const PortChoice& choice) {
  if constexpr (Forwarding) {
    if (choice.tagging == Tagging::forward) {
      return make_batching_port<T, ForwardedOutput, Routes>(worker, counters, lanes, choice);
    }
  }
  CONVEYOR_CONTRACT(choice.tagging != Tagging::forward, "make_out_port: a source does not forward");
  return make_batching_port<T, NumberedOutput, Routes>(worker, counters, lanes, choice);
}

// What makes the ports of a route's edge for items of type T: make_out_port<T, true, true>, kept
// by the planner with its type erased (`void (*)()`) until a producer of that type asks.
template <class T>
using PortMaker = std::unique_ptr<OutPort<T>> (*)(WorkerContext&, WorkerCounters&,
                                                  const typename OutPort<T>::Lanes&,
                                                  const PortChoice&);

}  // namespace conveyor::detail
