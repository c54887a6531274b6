// Dispatch::by_key() and Dispatch::by_partition(): an item goes into the lane its key's hash (or
// its partition) picks, so that all items with one key meet on one worker; a gap goes by its
// number. The port waits while that lane is full.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include "conveyor/framework/detail/dispatch_policy.hpp"
#include "conveyor/framework/detail/out_lanes.hpp"

namespace conveyor::detail {
namespace {

class Keyed final : public DispatchPolicy {
 public:
  explicit Keyed(std::function<std::uint64_t(const void*)> hash) : hash_(std::move(hash)) {}

  [[nodiscard]] bool keyed() const noexcept override { return true; }
  [[nodiscard]] FirstTry first_try() const noexcept override { return FirstTry::keyed_lane; }

  [[nodiscard]] std::size_t lane_of(const void* item, std::uint64_t seq,
                                    std::size_t lanes) const override {
    if (lanes == 1) return 0;
    const std::uint64_t hash = item != nullptr ? hash_(item) : seq;
    return static_cast<std::size_t>(hash % lanes);
  }

  bool deliver(OutLanes& port, std::size_t lane, LanePush push) const override {
    return port.push_waiting(lane, false, push);
  }

 private:
  const std::function<std::uint64_t(const void*)> hash_;
};

}  // namespace

std::shared_ptr<const DispatchPolicy> keyed_dispatch(
    std::function<std::uint64_t(const void*)> hash) {
  return std::make_shared<const Keyed>(std::move(hash));
}

}  // namespace conveyor::detail
