// Reports a contract violation and aborts; see detail/contract.hpp.
#include "conveyor/sync/detail/contract.hpp"

#include <cstdio>
#include <cstdlib>

namespace conveyor::sync::detail {

void contract_violation(const char* what, std::source_location where) noexcept {
  std::fprintf(stderr, "conveyor: contract violation: %s\n  at %s:%u in %s\n", what,
               where.file_name(), static_cast<unsigned>(where.line()), where.function_name());
  std::fflush(stderr);
  std::abort();
}

}  // namespace conveyor::sync::detail
