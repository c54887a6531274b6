// conveyor::testing::run: runs a chain (chain.hpp) over a vector of inputs in a pipeline of its
// own, and returns what it emitted, in the inputs' order, so that a chain can be unit-tested
// without a source or a sink written for the test.
//
//   auto words = conveyor::testing::run(split_words, std::vector<Line>{...});
//
// Contract: the chain runs as in any pipeline (its stages on their own workers, with their
// options); run() blocks until every input is through, and rethrows the first exception a stage
// threw. A chain that ends in a sink returns nothing. `options` names the pipeline.
#pragma once

#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "conveyor/framework/chain.hpp"
#include "conveyor/framework/options.hpp"
#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/stage.hpp"

namespace conveyor::testing {

template <class In, class Out>
auto run(const Chain<In, Out>& chain, std::vector<In> inputs,
         PipelineOptions options = {.name = "test"}) {
  Pipeline pipeline(std::move(options));
  std::size_t next = 0;
  auto flow = pipeline.source([&]() -> std::optional<In> {
    if (next == inputs.size()) return std::nullopt;
    return std::move(inputs[next++]);
  }) | chain;
  if constexpr (std::is_void_v<Out>) {
    pipeline.run();
  } else {
    std::vector<Out> outputs;
    std::move(flow) | sink([&](Out value) { outputs.push_back(std::move(value)); },
                           {.name = "test-sink", .mode = Mode::serial_in_order});
    pipeline.run();
    return outputs;
  }
}

}  // namespace conveyor::testing
