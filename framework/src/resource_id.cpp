// next_resource_id: one process-wide count for the identities of shared resources.
#include <atomic>
#include <cstdint>

#include "conveyor/framework/shared.hpp"

namespace conveyor::detail {

std::uint64_t next_resource_id() noexcept {
  static std::atomic<std::uint64_t> last{0};
  // Relaxed: only uniqueness matters, which the read-modify-write gives in any order.
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace conveyor::detail
