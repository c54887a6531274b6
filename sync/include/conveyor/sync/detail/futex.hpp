// Sleeping on a 32-bit atomic word: the Linux futex, or C++20 atomic::wait elsewhere.
//
// These calls only put a thread to sleep and wake it. They carry no synchronisation of their own:
// every caller re-reads the word (with the memory order it needs) after a wait returns, and must
// tolerate spurious returns.
//
// Contract: `futex_wait*` return at once if `word != expected` when the kernel looks at it; they
// may also return spuriously. `futex_wake` wakes at most `count` threads sleeping on `word`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace conveyor::sync::detail {

using FutexWord = std::atomic<std::int32_t>;
static_assert(sizeof(FutexWord) == sizeof(std::int32_t) && FutexWord::is_always_lock_free,
              "the futex word must be a plain 32-bit integer");

void futex_wait(FutexWord& word, std::int32_t expected) noexcept;

// Returns false once `deadline` has passed; true when woken, spuriously or not.
bool futex_wait_until(FutexWord& word, std::int32_t expected,
                      std::chrono::steady_clock::time_point deadline) noexcept;

void futex_wake(FutexWord& word, std::int32_t count) noexcept;

// How many times this process has asked to sleep or to wake, for tests of the "no system call
// when nobody waits" promise. Counted only on these slow paths, with relaxed increments.
std::uint64_t futex_wait_calls() noexcept;
std::uint64_t futex_wake_calls() noexcept;

}  // namespace conveyor::sync::detail
