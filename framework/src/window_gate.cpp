#include "conveyor/framework/detail/window_gate.hpp"

namespace conveyor::detail {

void WindowGate::advance(std::uint64_t released) {
  released_.store(released, std::memory_order_relaxed);
  sequencer_.ring_after_hand_over(WaitReason::window, [this] { return half_free(); });
}

void WindowGate::recheck() const {
  sequencer_.ring_on_recheck(WaitReason::window, [this] { return half_free(); });
}

}  // namespace conveyor::detail
