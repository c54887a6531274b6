// Dispatch::broadcast(): every lane gets every parcel (a copy, and the original into the last);
// the port waits for room in each lane in turn.
#include <cstddef>

#include "conveyor/framework/detail/dispatch_policy.hpp"
#include "conveyor/framework/detail/out_lanes.hpp"
#include "conveyor/framework/options.hpp"

namespace conveyor::detail {
namespace {

class Broadcast final : public DispatchPolicy {
 public:
  [[nodiscard]] bool copies() const noexcept override { return true; }

  bool deliver(OutLanes& port, std::size_t /*lane*/, LanePush push) const override {
    const std::size_t last = port.lane_count() - 1;
    for (std::size_t lane = 0; lane <= last; ++lane) {
      if (!port.push_waiting(lane, lane != last, push)) return false;
    }
    return true;
  }
};

}  // namespace

}  // namespace conveyor::detail

namespace conveyor {

Dispatch Dispatch::broadcast() {
  return stateless<detail::Broadcast>(Kind::broadcast);
}

}  // namespace conveyor
