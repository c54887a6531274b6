// Helpers shared by the semaphores: taking a token without waiting, and turning a timeout into a
// deadline.
#pragma once

#include <atomic>
#include <chrono>
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

// The steady-clock deadline `timeout` from now, rounded up so that a wait never ends early.
template <class Rep, class Period>
[[nodiscard]] std::chrono::steady_clock::time_point deadline_after(
    const std::chrono::duration<Rep, Period>& timeout) {
  return std::chrono::steady_clock::now() +
         std::chrono::ceil<std::chrono::steady_clock::duration>(timeout);
}

}  // namespace conveyor::sync::detail
