// Replaces the global operator new and delete for one test binary: include it in one of the
// binary's files only. It counts the process's allocations (`allocations`), and can make one of
// a thread's allocations fail: with `fail_allocation_after` = N, the thread's Nth allocation from
// then on throws std::bad_alloc (-1, the default: none does).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace conveyor::testing {

inline std::atomic<std::size_t> allocations{0};
inline thread_local int fail_allocation_after = -1;

}  // namespace conveyor::testing

// The replacements pair malloc with free; GCC's inliner sees a delete of what new returned and
// warns otherwise.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t size) {
  using conveyor::testing::fail_allocation_after;
  // Relaxed: a count for the tests' before-and-after checks, on the thread that reads it.
  conveyor::testing::allocations.fetch_add(1, std::memory_order_relaxed);
  if (fail_allocation_after > 0 && --fail_allocation_after == 0) throw std::bad_alloc();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
