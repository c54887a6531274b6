// route: each item of a stream into one of several chains (chain.hpp), by predicate.
//
//   auto errors = conveyor::chain<Record>() | conveyor::sink(alert);
//   auto rest = conveyor::chain<Record>() | conveyor::sink(write_record);
//   p.source(read_lines) | conveyor::stage(parse)
//       | conveyor::route(conveyor::when([](const Record& r) { return r.status >= 500; }, errors),
//                         conveyor::otherwise(rest));
//
// Contract:
// - `when(predicate, branch)` cases, then one `otherwise(branch)`, last. Each branch is a
//   Chain<T, void>: it takes the stream's items and ends in a sink. A predicate is called with a
//   `const T&` (a callable, or a member pointer as std::invoke takes it) and returns something
//   that converts to bool. A branch of another type, a predicate that cannot take a T, or a
//   route without its `otherwise` last does not compile.
// - Each item goes to the first branch whose predicate it matches, or else to the `otherwise`
//   branch: to exactly one branch, moved there (T need not be copyable, unless a branch's first
//   stage broadcasts to several workers). A predicate runs on the
//   worker of the stage before the route; a throw from it fails the pipeline as that stage's.
// - Each branch has its own order: an in-order stage in a branch sees its items in the order of
//   the sequencer before the route. The branches that restore order get a gap for every item
//   that went elsewhere, so that they do not wait for its number.
// - End of stream, failure, stop, abort, statistics and memory bounds are as for a tee (tee.hpp).
//   A branch's first stage takes its items as its dispatch says, as in a tee.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "conveyor/framework/chain.hpp"
#include "conveyor/framework/detail/port/make_out_port.hpp"
#include "conveyor/framework/pipeline.hpp"

namespace conveyor {

template <class Predicate, class In>
struct When {
  using input_type = In;
  static constexpr bool is_default = false;
  Predicate predicate;
  Chain<In, void> branch;
};

template <class In>
struct Otherwise {
  using input_type = In;
  static constexpr bool is_default = true;
  Chain<In, void> branch;
};

template <class Predicate, class In, class Out>
[[nodiscard]] When<Predicate, In> when(Predicate predicate, Chain<In, Out> branch) {
  static_assert(std::is_void_v<Out>,
                "conveyor: each branch of a route ends in a sink (a chain ending in sink(...))");
  if constexpr (std::is_void_v<Out>) {
    return When<Predicate, In>{std::move(predicate), std::move(branch)};
  } else {
    return When<Predicate, In>{std::move(predicate), Chain<In, void>(nullptr)};
  }
}

template <class In, class Out>
[[nodiscard]] Otherwise<In> otherwise(Chain<In, Out> branch) {
  static_assert(std::is_void_v<Out>,
                "conveyor: each branch of a route ends in a sink (a chain ending in sink(...))");
  if constexpr (std::is_void_v<Out>) {
    return Otherwise<In>{std::move(branch)};
  } else {
    return Otherwise<In>{Chain<In, void>(nullptr)};
  }
}

template <class... Cases>
class Route {
 public:
  explicit Route(Cases... cases) : cases_(std::move(cases)...) {}
  [[nodiscard]] const std::tuple<Cases...>& cases() const noexcept { return cases_; }

 private:
  std::tuple<Cases...> cases_;
};

namespace detail {
// A case's predicate, checked against the route's item type T, as a tuple of one (none for the
// `otherwise` case), to be joined with the others'.
template <class T, class Case>
auto predicate_of(const Case& one) {
  if constexpr (Case::is_default) {
    return std::tuple<>();
  } else if constexpr (std::is_invocable_v<const decltype(one.predicate)&, const T&>) {
    return std::tuple(one.predicate);
  } else {
    static_assert(std::is_invocable_v<const decltype(one.predicate)&, const T&>,
                  "conveyor: this route's predicate cannot take the items the stage before it "
                  "emits");
    return std::tuple<>();
  }
}

template <class... Cases>
constexpr bool otherwise_last() {
  constexpr bool defaults[] = {Cases::is_default...};
  for (std::size_t i = 0; i + 1 < sizeof...(Cases); ++i) {
    if (defaults[i]) return false;
  }
  return defaults[sizeof...(Cases) - 1];
}
}  // namespace detail

template <class... Cases>
[[nodiscard]] Route<Cases...> route(Cases... cases) {
  static_assert(sizeof...(Cases) >= 2,
                "conveyor: a route has at least one when(predicate, branch) and an "
                "otherwise(branch)");
  if constexpr (sizeof...(Cases) >= 2) {
    static_assert(detail::otherwise_last<Cases...>(),
                  "conveyor: a route ends with exactly one otherwise(branch), after its "
                  "when(predicate, branch) cases");
  }
  return Route<Cases...>(std::move(cases)...);
}

template <class T, class... Cases>
Completed operator|(const Flow<T>& flow, const Route<Cases...>& route) {
  constexpr bool types_match = (std::is_same_v<T, typename Cases::input_type> && ...);
  static_assert(types_match,
                "conveyor: a branch of this route cannot take the items the stage before it emits "
                "(see the instantiation of operator| below for the flow's item type and the "
                "cases' types)");
  if constexpr (types_match) {
    auto predicates = std::apply(
        [](const auto&... each) { return std::tuple_cat(detail::predicate_of<T>(each)...); },
        route.cases());
    constexpr std::size_t count = std::tuple_size_v<decltype(predicates)>;
    // The branch of each item: the first predicate it matches, else `count` (the default).
    auto classify = [predicates = std::move(predicates)](const void* items, std::size_t size,
                                                         std::uint32_t* branches) {
      const T* values = static_cast<const T*>(items);
      for (std::size_t i = 0; i < size; ++i) {
        std::uint32_t branch = 0;
        std::apply(
            [&](const auto&... predicate) {
              (void)((static_cast<bool>(std::invoke(predicate, values[i])) || (++branch, false)) ||
                     ...);
            },
            predicates);
        branches[i] = branch;
      }
    };
    // The route's ports, compiled here for its item type and nowhere else.
    const detail::PortMaker<T> make_port = &detail::make_out_port<T, true, true>;
    detail::Topology::route_at(
        flow, detail::RouteCases{.predicates = count,
                                 .classify = std::move(classify),
                                 .make_port = reinterpret_cast<void (*)()>(make_port),
                                 .item = &typeid(T)});
    // In order: the branches' workers are the edge's consumers in this order.
    std::optional<Completed> done;
    std::apply([&](const auto&... each) { (done.emplace(each.branch.apply(flow)), ...); },
               route.cases());
    return *done;
  } else {
    return flow | sink([](const T&) {});
  }
}

template <class In, class Mid, class... Cases>
[[nodiscard]] Chain<In, void> operator|(Chain<In, Mid> chain, Route<Cases...> route) {
  static_assert(!std::is_void_v<Mid>, "conveyor: this chain already ends in a sink");
  // Checked here, as for a flow.
  using Checked = decltype(std::declval<const Flow<Mid>&>() | route);
  static_assert(std::is_same_v<Checked, Completed>);
  return Chain<In, void>([chain = std::move(chain), route = std::move(route)](
                             const Flow<In>& flow) { return chain.apply(flow) | route; });
}

}  // namespace conveyor
