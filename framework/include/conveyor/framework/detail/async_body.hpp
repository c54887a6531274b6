// Asynchronous stage and sink code: what returns a boost::asio::awaitable, and how it is called.
//
// Stage(In -> Out), first match wins:
//   f.process(In) -> awaitable<Out> / awaitable<std::optional<Out>>   (a class)
//   f(In)         -> awaitable<Out> / awaitable<std::optional<Out>>   (a callable)
// Sink(In):  f.process(In) or f(In) -> awaitable<void>.
// An std::optional result is a filter, as for synchronous stages. Asynchronous code has no flush
// hook and no Emit: each input gives at most one output.
//
// Only the name boost::asio::awaitable is declared here, so that recognising such code costs a
// pipeline.hpp user no Asio headers; <conveyor/framework/async.hpp> runs it.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>

#include "conveyor/framework/detail/body.hpp"

namespace boost::asio {
template <typename T, typename Executor>
class awaitable;
}  // namespace boost::asio

namespace conveyor::detail {

template <class R>
struct awaitable_result {
  static constexpr bool value = false;
};
template <class T, class Executor>
struct awaitable_result<boost::asio::awaitable<T, Executor>> {
  static constexpr bool value = true;
  using type = T;
};

// What calling the code on an In returns: f.process(in) if the class has it, else f(in).
template <class F, class In>
struct async_call {
  static auto pick() {
    if constexpr (requires(F & f, In && in) { f.process(std::move(in)); }) {
      return std::type_identity<decltype(std::declval<F&>().process(std::declval<In&&>()))>{};
    } else if constexpr (std::is_invocable_v<F&, In&&>) {
      return std::type_identity<std::invoke_result_t<F&, In&&>>{};
    } else {
      return std::type_identity<void>{};
    }
  }
  using result = std::remove_cvref_t<typename decltype(pick())::type>;
  static constexpr bool awaitable = awaitable_result<result>::value;
};

template <class F, class In>
concept async_code = async_call<F, In>::awaitable;

// What the awaitable yields (void for a sink).
template <class F, class In>
using async_value_t = typename awaitable_result<typename async_call<F, In>::result>::type;

template <class F, class In>
concept async_stage_code = async_code<F, In> && !std::is_void_v<async_value_t<F, In>>;

template <class F, class In>
concept async_sink_code = async_code<F, In> && std::is_void_v<async_value_t<F, In>>;

template <class F, class In>
using async_stage_output_t = unwrap_optional_t<async_value_t<F, In>>;

// Calls the code on `item`, which it takes as an rvalue (In is named, not deduced).
template <class In, class F>
decltype(auto) start_async(F& f, std::type_identity_t<In>&& item) {
  if constexpr (requires { f.process(std::move(item)); }) {
    return f.process(std::move(item));
  } else {
    return f(std::move(item));
  }
}

// Defined in <conveyor/framework/async.hpp>: makes the nodes that run asynchronous code.
template <class In, class Out, class F>
struct AsyncNodes;

template <class T>
concept complete_type = requires {
  sizeof(T);
};

}  // namespace conveyor::detail
