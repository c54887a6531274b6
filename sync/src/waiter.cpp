#include "conveyor/sync/waiter.hpp"

#include <cstddef>

#include "conveyor/sync/detail/asymmetric_fence.hpp"

namespace conveyor::sync {

bool Waiter::wait(WaitReason reason, detail::FunctionRef<bool()> ready,
                  detail::FunctionRef<bool()> cancelled, bool deferrable) {
  // The condition holds (or the wait was cancelled): withdraw the announcement.
  auto settled = [&] {
    if (!ready() && !cancelled()) return false;
    bell_.cancel();
    return true;
  };
  bool rechecked = false;
  for (;;) {
    if (ready()) return true;
    if (cancelled()) return false;
    bell_.prepare(reason, deferrable);
    if (!rechecked) {
      for (std::size_t i = 0; i < rechecks_count_; ++i)
        rechecks_[i].run(rechecks_[i].self);
      rechecked = true;
    }
    if (settled()) continue;
    if (recovery_ == Recovery::bounded_park && (bell_.park_bounded() || settled())) continue;
    if (recovery_ != Recovery::none) {
      detail::asymmetric_fence_heavy();
      if (settled()) continue;
    }
    bell_.park();
  }
}

}  // namespace conveyor::sync
