// tee: one stream into several chains (chain.hpp), each of which gets every item.
//
//   auto write = conveyor::chain<Record>() | conveyor::sink(write_record, {.mode = in_order});
//   auto count = conveyor::chain<Record>() | conveyor::stage(to_key) | conveyor::sink(count_key);
//   p.source(read_lines) | conveyor::stage(parse) | conveyor::tee(write, count);
//
// Contract:
// - Each branch is a Chain<T, void>: it takes the stream's items and ends in a sink. A branch
//   that takes another type, or does not end in a sink, does not compile. `chain | tee(...)` is a
//   chain that ends in the tee.
// - Every branch gets every item: a copy (T must be copyable), and the original into the last
//   branch. Each branch has its own order: an in-order stage in a branch sees the items in the
//   order of the sequencer before the tee, as without the tee. The stages before the tee run at
//   most as far ahead as the slowest branch lets them (its channels, and its ordering window).
// - The stream ends in every branch once it ends before the tee; every branch's flush hooks run.
//   A throw in any branch cancels the whole pipeline, and request_stop and abort act on every
//   branch. Each stage of each branch has its own statistics.
// - A branch's first stage takes its items as its dispatch says: round-robin over its workers (the
//   next with room), by key (each key on one worker: the tee waits for that worker's room), or
//   broadcast (every item on every worker). Where a keyed or broadcast first stage of several
//   workers shares the tee's channel with another branch, the tee sends items one by one, and
//   least_loaded there makes start() throw.
#pragma once

#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "conveyor/framework/chain.hpp"
#include "conveyor/framework/pipeline.hpp"

namespace conveyor {

template <class... Branches>
class Tee {
 public:
  explicit Tee(Branches... branches) : branches_(std::move(branches)...) {}
  [[nodiscard]] const std::tuple<Branches...>& branches() const noexcept { return branches_; }

 private:
  std::tuple<Branches...> branches_;
};

template <class... Ins, class... Outs>
[[nodiscard]] Tee<Chain<Ins, Outs>...> tee(Chain<Ins, Outs>... branches) {
  static_assert(sizeof...(Ins) >= 2, "conveyor: a tee has at least two branches");
  static_assert((std::is_void_v<Outs> && ...),
                "conveyor: each branch of a tee ends in a sink (a chain ending in sink(...))");
  return Tee<Chain<Ins, Outs>...>(std::move(branches)...);
}

template <class T, class... Branches>
Completed operator|(const Flow<T>& flow, const Tee<Branches...>& tee) {
  static_assert((std::is_same_v<T, typename Branches::input_type> && ...),
                "conveyor: a branch of this tee cannot take the items the stage before it emits "
                "(see the instantiation of operator| below for the flow's item type and the "
                "branches' types)");
  static_assert(std::is_copy_constructible_v<T>,
                "conveyor: a tee gives every branch but the last a copy of each item: the items "
                "must be copyable");
  if constexpr ((std::is_same_v<T, typename Branches::input_type> && ...) &&
                std::is_copy_constructible_v<T>) {
    detail::Topology::branch_at(flow);
    // In order: the branches' workers are the edge's consumers in this order.
    std::optional<Completed> done;
    std::apply([&](const auto&... branch) { (done.emplace(branch.apply(flow)), ...); },
               tee.branches());
    return *done;
  } else {
    return flow | sink([](const T&) {});
  }
}

template <class In, class Mid, class... Branches>
[[nodiscard]] Chain<In, void> operator|(Chain<In, Mid> chain, Tee<Branches...> tee) {
  static_assert(!std::is_void_v<Mid>, "conveyor: this chain already ends in a sink");
  // Checked here, as for a flow.
  using Checked = decltype(std::declval<const Flow<Mid>&>() | tee);
  static_assert(std::is_same_v<Checked, Completed>);
  return Chain<In, void>([chain = std::move(chain), tee = std::move(tee)](const Flow<In>& flow) {
    return chain.apply(flow) | tee;
  });
}

}  // namespace conveyor
