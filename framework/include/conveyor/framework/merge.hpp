// merge: several flows of one pipeline into one stage, which takes the items of all of them.
//
//   auto web = p.source(read_access_log) | conveyor::stage(parse_access);
//   auto app = p.source(read_app_log) | conveyor::stage(parse_app);
//   conveyor::merge(web, app) | conveyor::stage(enrich, {.mode = conveyor::Mode::parallel})
//                             | conveyor::sink(write);
//
// Contract:
// - Every input carries the same item type T; the result is a Flow<T> that the next `|` continues
//   (a stage, a sink or a chain; a tee or a route needs a stage in between). Inputs of another
//   type do not compile. A pipeline may have several sources for this.
// - The stage at the merge takes the items of every input as they arrive. Its stream ends once
//   every input has ended; every input's items reach it exactly once.
// - A merged stream has no common order. A serial_in_order stage at the merge numbers what it
//   emits in the order it takes the items, and the in-order stages after it keep that order; an
//   in-order stage after the merge with no such stage at the merge makes start() throw.
// - request_stop ends every source's stream; a throw anywhere cancels every input; statistics are
//   per stage as elsewhere.
// - Each input of a merge goes only there: an input that is also continued elsewhere (or a tee or
//   route) makes start() throw.
#pragma once

#include <type_traits>

#include "conveyor/framework/pipeline.hpp"

namespace conveyor {

template <class T, class... More>
[[nodiscard]] Flow<T> merge(const Flow<T>& first, const Flow<More>&... more) {
  static_assert(sizeof...(More) >= 1, "conveyor: a merge joins at least two flows");
  static_assert((std::is_same_v<T, More> && ...),
                "conveyor: every input of a merge must carry the same item type (see the "
                "instantiation of merge below for the inputs' types)");
  if constexpr ((std::is_same_v<T, More> && ...)) {
    return detail::Topology::merged(first, more...);
  } else {
    return first;
  }
}

}  // namespace conveyor
