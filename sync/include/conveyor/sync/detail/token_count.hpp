// try_take_token: taking a semaphore's token without waiting, shared by the semaphores.
#pragma once

#include <atomic>
#include <cstdint>

namespace conveyor::sync::detail {

// Takes one token from `count` if it holds one (> 0); never waits. Acquire order on success, so
// the caller synchronises with the release that added the token.
[[nodiscard]] inline bool try_take_token(std::atomic<std::int32_t>& count) noexcept {
  std::int32_t tokens = count.load(std::memory_order_relaxed);
  while (tokens > 0) {
    if (count.compare_exchange_weak(tokens, tokens - 1, std::memory_order_acquire,
                                    std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

}  // namespace conveyor::sync::detail
