// Dispatch::round_robin(): each parcel goes into the next lane with a free slot, starting after
// the last one served (seed 002); the port waits while every lane is full.
#include <cstddef>

#include "conveyor/framework/detail/dispatch_policy.hpp"
#include "conveyor/framework/detail/out_lanes.hpp"
#include "conveyor/framework/options.hpp"

namespace conveyor::detail {
namespace {

class RoundRobin final : public DispatchPolicy {
 public:
  [[nodiscard]] FirstTry first_try() const noexcept override { return FirstTry::finger; }
  bool deliver(OutLanes& port, std::size_t /*lane*/, LanePush push) const override {
    const std::size_t count = port.lane_count();
    for (;;) {
      const std::size_t first = port.finger();
      for (std::size_t step = 0; step < count; ++step) {
        std::size_t lane = first + step;
        if (lane >= count) lane -= count;
        if (push(lane, false)) {
          port.pushed_past_finger(lane);
          return true;
        }
      }
      if (!port.wait_for_room(0, port.lane_count())) return false;
    }
  }
};

}  // namespace

}  // namespace conveyor::detail

namespace conveyor {

Dispatch Dispatch::round_robin() {
  return stateless<detail::RoundRobin>(Kind::round_robin);
}

}  // namespace conveyor
