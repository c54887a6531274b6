// The futex system calls behind detail/futex.hpp, with a portable fallback on atomic::wait.
#include "conveyor/sync/detail/futex.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>
#endif

namespace conveyor::sync::detail {

namespace {
std::atomic<std::uint64_t> wait_calls{0};
std::atomic<std::uint64_t> wake_calls{0};
void record_call(std::atomic<std::uint64_t>& calls) noexcept {
  calls.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

std::uint64_t futex_wait_calls() noexcept {
  return wait_calls.load(std::memory_order_relaxed);
}
std::uint64_t futex_wake_calls() noexcept {
  return wake_calls.load(std::memory_order_relaxed);
}

#if defined(__linux__)

namespace {

// std::atomic<std::int32_t> has the size and representation of std::int32_t (asserted in the
// header); the kernel only ever reads the word.
int* futex_address(FutexWord& word) noexcept {
  return reinterpret_cast<int*>(&word);
}

long futex_call(FutexWord& word, int operation, std::int32_t value, const timespec* timeout,
                std::uint32_t bitset) noexcept {
  return ::syscall(SYS_futex, futex_address(word), operation, value, timeout, nullptr, bitset);
}

}  // namespace

void futex_wait(FutexWord& word, std::int32_t expected) noexcept {
  record_call(wait_calls);
  // EAGAIN (the word changed), EINTR and spurious wakes all return; the caller re-checks.
  futex_call(word, FUTEX_WAIT_PRIVATE, expected, nullptr, 0);
}

bool futex_wait_until(FutexWord& word, std::int32_t expected,
                      std::chrono::steady_clock::time_point deadline) noexcept {
  record_call(wait_calls);
  // std::chrono::steady_clock is CLOCK_MONOTONIC on Linux, which FUTEX_WAIT_BITSET takes as an
  // absolute deadline: no recomputation of a relative timeout after EINTR.
  const auto since_epoch = deadline.time_since_epoch();
  if (since_epoch.count() < 0) return false;
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  const auto nanoseconds =
      std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - seconds);
  const timespec absolute{static_cast<time_t>(seconds.count()),
                          static_cast<long>(nanoseconds.count())};
  const long result =
      futex_call(word, FUTEX_WAIT_BITSET_PRIVATE, expected, &absolute, FUTEX_BITSET_MATCH_ANY);
  return !(result == -1 && errno == ETIMEDOUT);
}

void futex_wake(FutexWord& word, std::int32_t count) noexcept {
  record_call(wake_calls);
  futex_call(word, FUTEX_WAKE_PRIVATE, count, nullptr, 0);
}

#else  // portable fallback

void futex_wait(FutexWord& word, std::int32_t expected) noexcept {
  record_call(wait_calls);
  word.wait(expected, std::memory_order_relaxed);
}

bool futex_wait_until(FutexWord& word, std::int32_t expected,
                      std::chrono::steady_clock::time_point deadline) noexcept {
  record_call(wait_calls);
  // atomic::wait has no timed form: poll with a growing sleep, capped at a millisecond.
  auto pause = std::chrono::microseconds(20);
  while (word.load(std::memory_order_relaxed) == expected) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
  return true;
}

void futex_wake(FutexWord& word, std::int32_t count) noexcept {
  record_call(wake_calls);
  if (count == 1) {
    word.notify_one();
  } else {
    word.notify_all();
  }
}

#endif

}  // namespace conveyor::sync::detail
