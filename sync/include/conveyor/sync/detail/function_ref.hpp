// FunctionRef<R(Args...)>: a non-owning reference to a callable, two pointers wide, so that code
// compiled once (in a .cpp) can call back into a caller's lambda without a template.
//
// Contract: the callable outlives the FunctionRef; it is called through one indirect call.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace conveyor::sync::detail {

template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
           std::is_invocable_r_v<R, F&, Args...>) FunctionRef(F&& f)
  noexcept  // NOLINT(google-explicit-constructor): a reference, as a pointer
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace conveyor::sync::detail
