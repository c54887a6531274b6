#include "conveyor/framework/detail/worker_context.hpp"

#include <cstdint>

#include "conveyor/sync/detail/ticks.hpp"

namespace conveyor::detail {

bool WorkerContext::wait(WaitReason reason, sync::detail::FunctionRef<bool()> ready,
                         sync::detail::FunctionRef<void()> before_sleep,
                         RelaxedCounter& blocked) {
  const std::uint64_t started = sync::detail::ticks();
  before_sleep();
  // Consumers left asleep by this worker's pushes must not wait for it to wake again.
  if (owed_ != nullptr) owed_->deliver();
  const bool result = waiter_.wait(
      reason, ready, [this] { return control_.cancelled(); },
      parcel_ticks_ < DeferredWakes::dear_parcel_ticks());
  const std::uint64_t now = sync::detail::ticks();
  blocked.add(now - started);
  blocked_ticks_ += now - started;
  return result;
}

}  // namespace conveyor::detail
