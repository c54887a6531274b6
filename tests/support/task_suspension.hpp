// Whether this build can check code that suspends oneTBB tasks (and throws on them).
//
// ThreadSanitizer cannot follow oneTBB's resumable tasks: Debian's libtbb is not instrumented and
// switches stacks with ucontext without telling TSan (no __tsan_switch_to_fiber), so after a
// suspension TSan's per-thread shadow stack is wrong and it cannot see libtbb's reuse of task
// memory. Observed: data-race reports on task objects recycled by libtbb's small-object pool, on
// the functor of an enqueued task, and SEGVs inside TSan's stack hashing. Tests that suspend a
// task skip under TSan; the same code paths run on threads in the other tests, and the task
// variants run in the ASan and optimised builds.
#pragma once

namespace conveyor::testing {

#if defined(__SANITIZE_THREAD__) || defined(CONVEYOR_TSAN)
inline constexpr bool task_suspension_checkable = false;
#else
inline constexpr bool task_suspension_checkable = true;
#endif

// AddressSanitizer follows suspended tasks, but not an exception thrown on a task's stack after
// it was resumed: it cannot tell that stack's bounds (no __sanitizer_start_switch_fiber in libtbb)
// and stops in an internal CHECK in __asan_handle_no_return (google/sanitizers issue 189).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool throw_after_suspension_checkable = false;
#else
inline constexpr bool throw_after_suspension_checkable = task_suspension_checkable;
#endif

}  // namespace conveyor::testing

#define SKIP_IF_SUSPENSION_IS_UNCHECKABLE()                                         \
  do {                                                                              \
    if (!::conveyor::testing::task_suspension_checkable) {                          \
      GTEST_SKIP() << "ThreadSanitizer cannot follow libtbb's task stack switches"; \
    }                                                                               \
  } while (false)
