// drop_failed: destroys the item a stage's code held when it threw, while the exception propagates,
// as stack unwinding destroys a worker's own parcel. A token the item carries (ack.hpp) then
// settles as failed, also where the framework's copy of the item outlives the catch: a fused
// step's caller, an asynchronous item's coroutine frame.
//
// Contract: call it only inside a catch handler (it rethrows the exception being handled, and
// catches it again). `item` is left moved from.
#pragma once

#include <utility>

namespace conveyor::detail {

template <class T>
void drop_failed(T& item) noexcept {
  try {
    [[maybe_unused]] const T dropped(std::move(item));
    throw;
  } catch (...) {  // NOLINT(bugprone-empty-catch): the handler's own exception, rethrown above
  }
}

}  // namespace conveyor::detail
