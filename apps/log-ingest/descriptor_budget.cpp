// raise_descriptor_limit and descriptors_wanted.
#include "descriptor_budget.hpp"

#include <sys/resource.h>

namespace conveyor::log_ingest {

std::uint64_t raise_descriptor_limit() noexcept {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur != limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<std::uint64_t>(limit.rlim_cur);
}

std::uint64_t descriptors_wanted(const ServeConfig& config) noexcept {
  std::uint64_t wanted = descriptor_reserve;
  for (const InputConfig& input : config.inputs) {
    switch (input.type) {
      case InputType::syslog_tcp:
      case InputType::tcp:
      case InputType::http:
        wanted += config.limits.max_connections;
        break;
      case InputType::file:
        wanted += input.file.max_open_files;
        break;
      case InputType::syslog_udp:
      case InputType::stdin_lines:
        break;
    }
  }
  return wanted;
}

}  // namespace conveyor::log_ingest
