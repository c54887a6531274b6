// FunctionRef<R(Args...)>: a non-owning reference to a callable object (a lambda, a functor), as
// two pointers: the object and a function that calls it. Code that takes one is compiled once for
// its signature rather than once for every lambda handed to it; each call through it is an indirect
// call.
//
// Contract: the referenced callable outlives the FunctionRef (a lambda passed as an argument lives
// until the call that takes it returns). Copying a FunctionRef copies the reference, not the
// callable.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace conveyor::detail {

template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
  template <class F>
  static constexpr bool referable =
      !std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
      !std::is_function_v<std::remove_reference_t<F>> && std::is_invocable_r_v<R, F&, Args...>;

 public:
  // Implicit, so that a lambda passes where a FunctionRef is taken.
  template <class F, class = std::enable_if_t<referable<F>>>
  FunctionRef(F&& f) noexcept
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_(&call<std::remove_reference_t<F>>) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  template <class F>
  static R call(void* object, Args... args) {
    return static_cast<R>((*static_cast<F*>(object))(std::forward<Args>(args)...));
  }

  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace conveyor::detail
