// The file descriptors `log-ingest serve` may hold, against what the process may open.
//
// - raise_descriptor_limit(): sets the soft RLIMIT_NOFILE to the hard one (what systemd advises a
//   service that does not use select(): its default soft limit is 1024, its hard one far higher).
//   Returns the soft limit it leaves (0 when it cannot tell).
// - descriptors_wanted(): what the configuration allows the inputs to hold at once (each TCP, TLS
//   or HTTP input its max_connections, each file input its max_open_files), plus a reserve for the
//   listeners, the outputs, checkpoints, the metrics server and the runtime's own.
//
// A service over its limit fails at the worst moment: a rotated output or a checkpoint that
// cannot be opened while idle clients hold every descriptor. `serve` says so when it starts.
#pragma once

#include <cstdint>

#include "serve_config.hpp"

namespace conveyor::log_ingest {

inline constexpr std::uint64_t descriptor_reserve = 64;

std::uint64_t raise_descriptor_limit() noexcept;
std::uint64_t descriptors_wanted(const ServeConfig& config) noexcept;

}  // namespace conveyor::log_ingest
