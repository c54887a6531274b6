// The heavy side of detail/asymmetric_fence.hpp: Linux's membarrier, or a seq_cst fence.
#include "conveyor/sync/detail/asymmetric_fence.hpp"

#include <cstdio>
#include <cstdlib>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace conveyor::sync::detail {

#if defined(__linux__) && defined(SYS_membarrier)

namespace {
long membarrier(int command) noexcept {
  return ::syscall(SYS_membarrier, command, 0, 0);
}
}  // namespace

bool register_membarrier() noexcept {
  const long supported = membarrier(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

void asymmetric_fence_heavy() noexcept {
  if (!membarrier_available()) {
    full_fence();
    return;
  }
  // The system call is a full barrier for this thread as well. Once registered it cannot fail;
  // if it did, the light sides would be unprotected, so stop rather than lose a wake-up.
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
    std::fputs("conveyor: membarrier failed after registration\n", stderr);
    std::abort();
  }
}

#else

bool register_membarrier() noexcept {
  return false;
}

void asymmetric_fence_heavy() noexcept {
  full_fence();
}

#endif

}  // namespace conveyor::sync::detail
