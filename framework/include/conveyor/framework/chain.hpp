// Chain<In, Out>: stages as a value, built once and put into any number of pipelines.
//
//   conveyor::Chain<Line, Record> parse_and_enrich =
//       conveyor::chain<Line>() | conveyor::stage(parse, {.mode = conveyor::Mode::parallel})
//                               | conveyor::stage(enrich);
//   p.source(read_lines) | parse_and_enrich | conveyor::sink(write);
//
// A chain that ends in a sink is a Chain<In, void>; `flow | chain` then completes the pipeline.
// conveyor::testing::run (testing.hpp) runs a chain over a vector of inputs.
//
// Contract:
// - Each stage's type is checked where it joins the chain, as after `p.source(...)`; a chain that
//   does not take its flow's items does not compile.
// - A chain copies its stages' code into every pipeline it is put into, so that code must be
//   copyable; the options are copied with it. A chain is an immutable value: `|` makes a new one.
// - Build and use a chain from one thread at a time; different chains (and copies) are independent.
#pragma once

#include <functional>
#include <type_traits>
#include <utility>

#include "conveyor/framework/pipeline.hpp"
#include "conveyor/framework/stage.hpp"

namespace conveyor {

namespace detail {

// What `Flow<In> | chain` returns: Flow<Out>, or Completed for a chain that ends in a sink.
template <class Out>
struct chain_end {
  using type = Flow<Out>;
};
template <>
struct chain_end<void> {
  using type = Completed;
};
template <class Out>
using chain_end_t = typename chain_end<Out>::type;

}  // namespace detail

template <class In, class Out>
class Chain {
 public:
  using input_type = In;
  using output_type = Out;
  using Apply = std::function<detail::chain_end_t<Out>(const Flow<In>&)>;

  explicit Chain(Apply apply) : apply_(std::move(apply)) {}

  // Puts the chain's stages after `flow`.
  [[nodiscard]] detail::chain_end_t<Out> apply(const Flow<In>& flow) const { return apply_(flow); }

 private:
  Apply apply_;
};

// An empty chain, to which `|` adds stages: its items are of type In.
template <class In>
[[nodiscard]] Chain<In, In> chain() {
  return Chain<In, In>([](const Flow<In>& flow) { return flow; });
}

template <class In, class Mid, class F, class O, class Key>
[[nodiscard]] auto operator|(Chain<In, Mid> chain, StageSpec<F, O, Key> spec) {
  static_assert(!std::is_void_v<Mid>, "conveyor: this chain already ends in a sink");
  static_assert(std::is_copy_constructible_v<F>,
                "conveyor: a chain's stages are copied into each pipeline it is put into; this "
                "stage's code cannot be copied");
  // The stage's type is checked here, by the same operator| a flow uses.
  using Next = decltype(std::declval<const Flow<Mid>&>() | std::move(spec));
  using Out = typename Next::item_type;
  return Chain<In, Out>([chain = std::move(chain), spec = std::move(spec)](const Flow<In>& flow) {
    return chain.apply(flow) | StageSpec<F, O, Key>(spec);
  });
}

template <class In, class Mid, class F, class Key>
[[nodiscard]] Chain<In, void> operator|(Chain<In, Mid> chain, SinkSpec<F, Key> spec) {
  static_assert(std::is_copy_constructible_v<F>,
                "conveyor: a chain's sink is copied into each pipeline it is put into; this sink's "
                "code cannot be copied");
  static_assert(!std::is_void_v<Mid>, "conveyor: this chain already ends in a sink");
  // Checked here, as for a flow.
  using Checked = decltype(std::declval<const Flow<Mid>&>() | std::move(spec));
  static_assert(std::is_same_v<Checked, Completed>);
  return Chain<In, void>([chain = std::move(chain), spec = std::move(spec)](const Flow<In>& flow) {
    return chain.apply(flow) | SinkSpec<F, Key>(spec);
  });
}

// One chain after another: the first one's items must be what the second takes.
template <class In, class Mid, class Mid2, class Out>
[[nodiscard]] auto operator|(Chain<In, Mid> first, Chain<Mid2, Out> second) {
  static_assert(!std::is_void_v<Mid>, "conveyor: this chain already ends in a sink");
  static_assert(std::is_same_v<Mid, Mid2>,
                "conveyor: this chain cannot take the items of the chain before it (see the "
                "instantiation of operator| below for both chains' types)");
  if constexpr (std::is_same_v<Mid, Mid2>) {
    return Chain<In, Out>([first = std::move(first), second = std::move(second)](
                              const Flow<In>& flow) { return second.apply(first.apply(flow)); });
  } else {
    return first;
  }
}

template <class T, class In, class Out>
auto operator|(const Flow<T>& flow, const Chain<In, Out>& chain) {
  static_assert(std::is_same_v<T, In>,
                "conveyor: this chain cannot take the items the stage before it emits (see the "
                "instantiation of operator| below for the flow's and the chain's types)");
  if constexpr (std::is_same_v<T, In>) {
    return chain.apply(flow);
  } else {
    return flow;
  }
}

}  // namespace conveyor
