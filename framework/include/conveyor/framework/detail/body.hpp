// What a user may give as a source, a stage or a sink, and the adapters that give every form one
// interface inside the runtime.
//
// Stage(In -> Out), first match wins:
//   f.process(In, Emit<Out>&) or f.process(In) -> Out / std::optional<Out>   (a class)
//   f(In, Emit<Out>&)         or f(In)         -> Out / std::optional<Out>   (a callable)
// An std::optional result is a filter: nullopt emits nothing. A class may add
// `flush(Emit<Out>&)`, called once per worker at the end of the stream.
// Sink(In):   f.process(In) or f(In); a class may add `flush()`.
// Source(Out): f() -> std::optional<Out>, called until it returns nullopt; f.next() likewise; or
//   f(Emit<Out>&), which emits everything and returns.
// Out is deduced from the result or from the Emit<Out>& parameter; stage<Out>(f) names it when it
// cannot be (a generic lambda taking `auto& emit`).
#pragma once

#include <concepts>
#include <optional>
#include <type_traits>
#include <utility>

#include "conveyor/framework/detail/signature.hpp"

namespace conveyor::detail {

struct deduce_output {};

template <class R>
using unwrap_optional_t =
    typename std::conditional_t<is_optional<R>::value, R, std::optional<R>>::value_type;

// --- stages ---

template <class F, class In>
concept process_returns = requires(F& f, In&& in) {
  {f.process(std::move(in))};
}
&&!std::is_void_v<decltype(std::declval<F&>().process(std::declval<In&&>()))>;

template <class F, class In, class Out>
concept process_emits = requires(F& f, In&& in, Emit<Out>& emit) {
  f.process(std::move(in), emit);
};

template <class F, class In>
concept call_returns = std::invocable<F&, In&&> && !std::is_void_v<std::invoke_result_t<F&, In&&>>;

template <class F, class In, class Out>
concept call_emits = std::invocable < F&,
        In&&, Emit<Out>
& > ;

template <class F, class In>
struct deduced_stage_output {
  static auto pick() {
    if constexpr (process_returns<F, In>) {
      return std::type_identity<
          unwrap_optional_t<decltype(std::declval<F&>().process(std::declval<In&&>()))>>{};
    } else if constexpr (requires { typename process_signature<F>::arguments; }) {
      return std::type_identity<emit_value_t<argument_t<process_signature<F>, 1>>>{};
    } else if constexpr (call_returns<F, In>) {
      return std::type_identity<unwrap_optional_t<std::invoke_result_t<F&, In&&>>>{};
    } else {
      return std::type_identity<emit_value_t<argument_t<call_signature<F>, 1>>>{};
    }
  }
  using type = typename decltype(pick())::type;
};

template <class F, class In, class Out>
using stage_output_t = std::conditional_t<std::is_same_v<Out, deduce_output>,
                                          typename deduced_stage_output<F, In>::type, Out>;

template <class F, class In, class Out>
concept stage_body = !std::is_void_v<Out> && (process_emits<F, In, Out> || process_returns<F, In> ||
                                              call_emits<F, In, Out> || call_returns<F, In>);

template <class F, class In, class Out>
class StageBody {
 public:
  explicit StageBody(F f) : f_(std::move(f)) {}

  void process(In&& item, Emit<Out>& emit) {
    if constexpr (process_emits<F, In, Out>) {
      f_.process(std::move(item), emit);
    } else if constexpr (process_returns<F, In>) {
      send(f_.process(std::move(item)), emit);
    } else if constexpr (call_emits<F, In, Out>) {
      f_(std::move(item), emit);
    } else {
      send(f_(std::move(item)), emit);
    }
  }

  void flush(Emit<Out>& emit) {
    if constexpr (requires(F & f) { f.flush(emit); }) f_.flush(emit);
  }

  // Whether the code maps each input to exactly one output (it returns Out, not an
  // std::optional and not through Emit), which lets a run of inputs be mapped in one loop.
  static constexpr bool maps = [] {
    if constexpr (process_emits<F, In, Out> ||
                  (!process_returns<F, In> && call_emits<F, In, Out>)) {
      return false;
    } else if constexpr (process_returns<F, In>) {
      return !is_optional<
          std::remove_cvref_t<decltype(std::declval<F&>().process(std::declval<In&&>()))>>::value;
    } else {
      return !is_optional<std::remove_cvref_t<std::invoke_result_t<F&, In&&>>>::value;
    }
  }();

  // The one output of a mapping stage for `item`.
  Out map(In&& item) requires maps {
    if constexpr (process_returns<F, In>) {
      return f_.process(std::move(item));
    } else {
      return f_(std::move(item));
    }
  }

 private:
  template <class R>
  static void send(R&& result, Emit<Out>& emit) {
    if constexpr (is_optional<std::remove_cvref_t<R>>::value) {
      if (result) emit(std::move(*result));
    } else {
      emit(std::forward<R>(result));
    }
  }

  F f_;
};

// --- sinks ---

template <class F, class In>
concept sink_body = requires(F& f, In&& in) {
  f.process(std::move(in));
}
|| std::invocable<F&, In&&>;

template <class F, class In>
class SinkBody {
 public:
  explicit SinkBody(F f) : f_(std::move(f)) {}

  void process(In&& item) {
    if constexpr (requires(F & f, In && in) { f.process(std::move(in)); }) {
      f_.process(std::move(item));
    } else {
      f_(std::move(item));
    }
  }

  void flush() {
    if constexpr (requires(F & f) { f.flush(); }) f_.flush();
  }

 private:
  F f_;
};

// --- sources ---

template <class F>
concept source_generates = std::invocable<F&> && is_optional<std::invoke_result_t<F&>>::value;

template <class F>
concept source_next = requires(F& f) {
  {f.next()};
}
&&is_optional<decltype(std::declval<F&>().next())>::value;

template <class F>
struct deduced_source_output {
  static auto pick() {
    if constexpr (source_next<F>) {
      return std::type_identity<typename decltype(std::declval<F&>().next())::value_type>{};
    } else if constexpr (source_generates<F>) {
      return std::type_identity<typename std::invoke_result_t<F&>::value_type>{};
    } else {
      return std::type_identity<emit_value_t<argument_t<call_signature<F>, 0>>>{};
    }
  }
  using type = typename decltype(pick())::type;
};

template <class F, class Out>
using source_output_t = std::conditional_t<std::is_same_v<Out, deduce_output>,
                                           typename deduced_source_output<F>::type, Out>;

template <class F, class Out>
concept source_body = !std::is_void_v<Out> &&
                      (source_next<F> || source_generates<F> || std::invocable<F&, Emit<Out>&>);

template <class F, class Out>
class SourceBody {
 public:
  // Whether the source is pulled (next() or f() -> std::optional<Out>), rather than emitting.
  static constexpr bool pulled = source_next<F> || source_generates<F>;

  explicit SourceBody(F f) : f_(std::move(f)) {}

  // An emitting source's run; a pulled one is driven by its node (next()).
  void run(Emit<Out>& emit) requires(!pulled) { f_(emit); }

  // A pulled source's next item, or nullopt at its end.
  auto next() requires pulled {
    if constexpr (source_next<F>) {
      return f_.next();
    } else {
      return f_();
    }
  }

 private:
  F f_;
};

}  // namespace conveyor::detail
