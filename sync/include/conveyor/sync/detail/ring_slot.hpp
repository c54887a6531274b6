// RingSlot<T>: raw, suitably aligned storage for one queue element.
//
// Queues construct and destroy their elements explicitly, so T needs neither a default
// constructor nor assignment. The slot does not know whether it holds an object: the queue's
// indices say so, and the queue calls `destroy` exactly once for every `construct`.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace conveyor::sync::detail {

template <class T>
class RingSlot {
 public:
  template <class... Args>
  T& construct(Args&&... args) {
    return *std::construct_at(pointer(), std::forward<Args>(args)...);
  }

  T& get() noexcept { return *std::launder(pointer()); }

  void destroy() noexcept { std::destroy_at(std::launder(pointer())); }

  // Moves the element out and destroys what is left in the slot.
  T take() noexcept {
    T& element = get();
    T value(std::move(element));
    std::destroy_at(&element);
    return value;
  }

  // Gives the element back to the object it was moved from, and leaves the slot empty. Used when
  // a push lost a race with close(): the caller's value must look untouched.
  void move_back_into(T& origin) noexcept {
    T& element = get();
    if constexpr (std::is_nothrow_move_assignable_v<T>) {
      origin = std::move(element);
    } else {
      std::destroy_at(std::addressof(origin));
      std::construct_at(std::addressof(origin), std::move(element));
    }
    std::destroy_at(&element);
  }

 private:
  T* pointer() noexcept { return reinterpret_cast<T*>(bytes_); }

  alignas(T) std::byte bytes_[sizeof(T)];
};

}  // namespace conveyor::sync::detail
