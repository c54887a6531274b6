// stage() and sink(): what goes after `|` in a pipeline.
//
//   p.source(read_lines)
//     | conveyor::stage(parse, {.mode = conveyor::Mode::parallel, .workers = 4})
//     | conveyor::sink(write, {.mode = conveyor::Mode::serial_in_order});
//
// The forms a stage's and a sink's code may take are listed in detail/body.hpp and in
// docs/guide.md. `stage<Out>(f)` names the output type where it cannot be deduced (a generic
// lambda that takes `auto& emit`).
#pragma once

#include <type_traits>
#include <utility>

#include "conveyor/framework/detail/body.hpp"
#include "conveyor/framework/options.hpp"

namespace conveyor {

template <class F, class Out>
struct StageSpec {
  F code;
  StageOptions options;
};

template <class F>
struct SinkSpec {
  F code;
  StageOptions options;
};

template <class Out = detail::deduce_output, class F>
[[nodiscard]] StageSpec<std::decay_t<F>, Out> stage(F&& code, StageOptions options = {}) {
  return {std::forward<F>(code), std::move(options)};
}

template <class F>
[[nodiscard]] SinkSpec<std::decay_t<F>> sink(F&& code, StageOptions options = {}) {
  return {std::forward<F>(code), std::move(options)};
}

}  // namespace conveyor
