// Reports a contract violation and aborts; see detail/contract.hpp.
#include "conveyor/sync/detail/contract.hpp"

#include <cstdio>
#include <cstdlib>

namespace conveyor::sync::detail {

void contract_violation(const char* what, const char* file, int line,
                        const char* function) noexcept {
  std::fprintf(stderr, "conveyor: contract violation: %s\n  at %s:%d in %s\n", what, file, line,
               function);
  std::fflush(stderr);
  std::abort();
}

}  // namespace conveyor::sync::detail
