// stage() and sink(): what goes after `|` in a pipeline.
//
//   p.source(read_lines)
//     | conveyor::stage(parse, {.mode = conveyor::Mode::parallel, .workers = 4})
//     | conveyor::sink(write, {.mode = conveyor::Mode::serial_in_order});
//
// The forms a stage's and a sink's code may take are listed in detail/body.hpp and in
// docs/guide.md. `stage<Out>(f)` names the output type where it cannot be deduced (a generic
// lambda that takes `auto& emit`). A keyed dispatch given as the third argument has its key
// function's item type checked against the stage's items at compile time.
#pragma once

#include <type_traits>
#include <utility>

#include "conveyor/framework/detail/body.hpp"
#include "conveyor/framework/options.hpp"

namespace conveyor {

// `Key`: the item type of the stage's key function (a keyed dispatch given to stage() or sink()),
// which `|` checks against the items the stage receives; void when there is none to check.
template <class F, class Out, class Key = void>
struct StageSpec {
  F code;
  StageOptions options;
};

template <class F, class Key = void>
struct SinkSpec {
  F code;
  StageOptions options;
};

template <class Out = detail::deduce_output, class F>
[[nodiscard]] StageSpec<std::decay_t<F>, Out> stage(F&& code, StageOptions options = {}) {
  return {std::forward<F>(code), std::move(options)};
}

// A stage whose workers get its items by key (Dispatch::by_key or by_partition), the key
// function's item type checked when the stage is chained:
//   conveyor::stage(count, {.mode = conveyor::Mode::parallel, .workers = 4},
//                   conveyor::Dispatch::by_key(&Record::host))
template <class Out = detail::deduce_output, class F, class Key>
[[nodiscard]] StageSpec<std::decay_t<F>, Out, Key> stage(F&& code, StageOptions options,
                                                         KeyedDispatch<Key> dispatch) {
  options.dispatch = std::move(dispatch);
  return {std::forward<F>(code), std::move(options)};
}

template <class F>
[[nodiscard]] SinkSpec<std::decay_t<F>> sink(F&& code, StageOptions options = {}) {
  return {std::forward<F>(code), std::move(options)};
}

template <class F, class Key>
[[nodiscard]] SinkSpec<std::decay_t<F>, Key> sink(F&& code, StageOptions options,
                                                  KeyedDispatch<Key> dispatch) {
  options.dispatch = std::move(dispatch);
  return {std::forward<F>(code), std::move(options)};
}

}  // namespace conveyor
