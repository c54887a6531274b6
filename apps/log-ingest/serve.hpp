// `log-ingest serve` and `log-ingest validate`: the long-running service (docs/serve.md).
//
//   inputs (TCP, UDP, stdin; I/O thread) -> Ingress -> receive (source) -> parse (parallel)
//     -> write (serial, in order)
//
// SIGTERM or SIGINT drains: stop accepting, /readyz turns 503, read what clients already sent
// until they close or drain_timeout passes, process and write everything in flight, log the
// accounting line (received = written + rejected + filtered + dropped) and exit 0. A second signal
// logs the same line with what was lost and exits 1 at once, and so does a drain still going at
// stop_timeout (an output that takes nothing). SIGHUP reopens the output files and reloads the
// inputs from the configuration (InputSet).
#pragma once

#include <functional>
#include <string>

#include "serve_config.hpp"

namespace conveyor::log_ingest {

// The command line's flags, which override the file's settings.
struct ServeFlags {
  std::string config;          // a YAML file; empty: the defaults
  std::string listen_syslog;   // syslog over TCP and UDP on HOST:PORT (replaces the inputs)
  std::string listen_tcp;      // plain lines over TCP (added)
  std::string format;          // the format of --listen-tcp's lines
  std::string output;          // records: FILE, - or none
  std::string metrics_listen;  // HOST:PORT, or none
  bool stdin_input = false;    // also read lines from stdin
};

// The configuration the flags describe; throws ConfigError.
ServeConfig serve_config_from(const ServeFlags& flags);

// Checks everything `serve` would check before it binds; 0, or 1 after printing the error.
int validate_config(const ServeFlags& flags);

// Runs the service until a signal ends it; the exit status. `reload`, when given, reads the
// configuration again on SIGHUP (it throws ConfigError for an invalid one).
int run_serve(const ServeConfig& config, const std::function<ServeConfig()>& reload = {});

}  // namespace conveyor::log_ingest
