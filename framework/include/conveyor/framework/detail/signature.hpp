// Compile-time facts about the callables a user gives to a pipeline: their parameter and result
// types, where these can be known (a function, a function pointer, a class with one non-template
// call operator or member). Generic lambdas have no fixed signature; the callers fall back to
// asking whether a call with the stream's item type compiles.
#pragma once

#include <cstddef>
#include <optional>
#include <tuple>
#include <type_traits>

namespace conveyor {
template <class T>
class Emit;
}

namespace conveyor::detail {

template <class Signature>
struct signature_of_member {};

// `qualifiers` is a list of cv/ref/noexcept qualifiers and cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define CONVEYOR_MEMBER_SIGNATURE(qualifiers)             \
  template <class C, class R, class... A>                 \
  struct signature_of_member<R (C::*)(A...) qualifiers> { \
    using result = R;                                     \
    using arguments = std::tuple<A...>;                   \
  };
CONVEYOR_MEMBER_SIGNATURE()
CONVEYOR_MEMBER_SIGNATURE(const)
CONVEYOR_MEMBER_SIGNATURE(noexcept)
CONVEYOR_MEMBER_SIGNATURE(const noexcept)
CONVEYOR_MEMBER_SIGNATURE(&)
CONVEYOR_MEMBER_SIGNATURE(const&)
#undef CONVEYOR_MEMBER_SIGNATURE
// NOLINTEND(bugprone-macro-parentheses)

// call_signature<F>: `result` and `arguments` of calling an F, when F has one signature.
template <class F, class = void>
struct call_signature {};

template <class F>
struct call_signature<F, std::void_t<decltype(&F::operator())>>
    : signature_of_member<decltype(&F::operator())> {};

template <class R, class... A>
struct call_signature<R (*)(A...), void> {
  using result = R;
  using arguments = std::tuple<A...>;
};

template <class R, class... A>
struct call_signature<R (*)(A...) noexcept, void> {
  using result = R;
  using arguments = std::tuple<A...>;
};

// process_signature<F>: the same for F's member function `process`.
template <class F, class = void>
struct process_signature {};

template <class F>
struct process_signature<F, std::void_t<decltype(&F::process)>>
    : signature_of_member<decltype(&F::process)> {};

// argument_t<Signature, I>: the I-th parameter type, or void when unknown.
template <class Signature, std::size_t I, class = void>
struct argument {
  using type = void;
};

template <class Signature, std::size_t I>
struct argument<Signature, I,
                std::enable_if_t<(I < std::tuple_size_v<typename Signature::arguments>)>> {
  using type = std::tuple_element_t<I, typename Signature::arguments>;
};

template <class Signature, std::size_t I>
using argument_t = typename argument<Signature, I>::type;

// emit_value<P>::type: U when P is Emit<U>& (any cv), else void.
template <class P>
struct emit_value {
  using type = void;
};
template <class U>
struct emit_value<Emit<U>&> {
  using type = U;
};

template <class P>
using emit_value_t = typename emit_value<P>::type;

// Which item type a by_key key function takes: the class of a member pointer, or the parameter
// of a one-argument callable; void when it cannot be told.
template <class Key, class = void>
struct key_argument {
  using type = std::remove_cvref_t<argument_t<call_signature<Key>, 0>>;
};
template <class M, class C>
struct key_argument<M C::*, void> {
  using type = C;
};

template <class Key>
using key_argument_t = typename key_argument<Key>::type;

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

}  // namespace conveyor::detail
