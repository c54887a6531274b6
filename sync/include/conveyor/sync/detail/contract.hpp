// Contract checks for the sync primitives.
//
// A contract violation is a bug in the caller (releasing a semaphore past its maximum, unlocking a
// lock that is not held, pushing from two threads into a single-producer queue). It is reported on
// stderr with its location and the process aborts: carrying on would corrupt the primitive's state.
//
// CONVEYOR_CONTRACT is always checked; use it where the check is cheap next to the operation.
// CONVEYOR_DEBUG_CONTRACT is checked only when NDEBUG is not defined; use it for role and ownership
// checks that cost an atomic operation or more on a hot path.
#pragma once

namespace conveyor::sync::detail {

// The location comes from the macros below rather than std::source_location, which clang's tools
// cannot parse with libstdc++ 12.
[[noreturn, gnu::cold]] void contract_violation(const char* what, const char* file, int line,
                                                const char* function) noexcept;

}  // namespace conveyor::sync::detail

#define CONVEYOR_CONTRACT(condition, what)                                              \
  do {                                                                                  \
    if (!(condition)) [[unlikely]] {                                                    \
      ::conveyor::sync::detail::contract_violation(what, __FILE__, __LINE__, __func__); \
    }                                                                                   \
  } while (false)

#ifdef NDEBUG
#define CONVEYOR_DEBUG_CONTRACT(condition, what) \
  do {                                           \
  } while (false)
#else
#define CONVEYOR_DEBUG_CONTRACT(condition, what) CONVEYOR_CONTRACT(condition, what)
#endif
