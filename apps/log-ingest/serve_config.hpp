// ServeConfig: what `log-ingest serve` runs, read from a YAML file (docs/serve.md lists every key)
// or made of the defaults and the command line's flags.
//
//   ServeConfig config = load_serve_config("/etc/log-ingest/log-ingest.yaml");
//
// Contract: `load_serve_config` and `parse_serve_config` throw ConfigError for a file that cannot
// be read, YAML that does not parse, an unknown key, a value of the wrong type or out of range, or
// two inputs with one name; its message starts with `FILE:LINE:COLUMN:` (1-based) and names the
// key. A config that loads is complete: every field holds its value or its default.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "conveyor/stages/record.hpp"

namespace conveyor::log_ingest {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class InputType {
  syslog_tcp,   // RFC 6587: octet-counted or LF-terminated, per frame
  syslog_udp,   // one message per datagram
  tcp,          // plain lines, in any format `run` parses
  stdin_lines,  // the process's standard input, plain lines
  http,         // POST /ingest: lines, or JSON lines, in the body
  file,         // files named by globs, followed as they grow (stages::FileTailer)
};

// TLS on a TCP or HTTP input: on when `cert` is set. With `client_ca`, a client must present a
// certificate that it signed.
struct TlsConfig {
  std::string cert{};       // PEM: the certificate chain, the server's first
  std::string key{};        // PEM: its private key
  std::string client_ca{};  // PEM: the CAs that sign client certificates; empty: none asked for

  [[nodiscard]] bool enabled() const noexcept { return !cert.empty(); }
  bool operator==(const TlsConfig&) const = default;
};

// A file input: what it follows and how (docs/serve.md, "File input").
struct FileConfig {
  std::vector<std::string> include{};
  std::vector<std::string> exclude{};
  bool read_from_end = false;  // files found at startup without a checkpoint
  std::chrono::milliseconds glob_interval{1000};
  std::chrono::milliseconds rotate_wait{5000};
  std::chrono::milliseconds partial_line_timeout{5000};
  std::chrono::milliseconds checkpoint_interval{1000};
  std::size_t max_line_bytes = std::size_t{64} << 10;
  std::size_t max_open_files = 1024;
  std::chrono::milliseconds close_idle = std::chrono::minutes(5);
  std::chrono::milliseconds linger{10};  // after reading every file to its end
  bool inotify = true;  // false: look every 100 ms and every glob_interval, and nothing else

  bool operator==(const FileConfig&) const = default;
};

struct InputConfig {
  std::string name;  // unique; the `input` label of the metrics
  InputType type = InputType::syslog_tcp;
  std::string listen = "127.0.0.1:5514";  // HOST:PORT; port 0 picks a free one
  stages::Format format = stages::Format::syslog;
  TlsConfig tls{};
  FileConfig file{};

  bool operator==(const InputConfig&) const = default;
};

struct LimitsConfig {
  static constexpr std::size_t largest_frame = std::size_t{64} << 20U;  // max_frame_bytes' bound

  std::size_t max_connections = 1024;  // per TCP input
  // Per TCP input and client: an IPv4 address, or an IPv6 address's /64 (one host's share).
  std::size_t max_connections_per_client = 256;
  std::size_t max_frame_bytes = std::size_t{64} << 10;
  std::chrono::milliseconds idle_timeout = std::chrono::minutes(5);
  std::size_t max_body_bytes = std::size_t{1} << 20U;  // an HTTP request's body

  // The longest line the parse stage takes from a listener: a frame of max_frame_bytes whose line
  // feeds became `#012` (four times as long), and at least 64 KiB.
  [[nodiscard]] std::size_t max_parsed_line() const noexcept {
    return std::max(max_frame_bytes * 4, std::size_t{1} << 16U);
  }

  bool operator==(const LimitsConfig&) const = default;
};

// How an output is flushed, fsynced and rotated (OutputFile).
struct OutputPolicy {
  bool fsync = false;
  std::uint64_t flush_records = 0;               // 0: flush after each write
  std::chrono::milliseconds flush_interval{0};   // 0: no time-based flush
  std::uint64_t rotate_bytes = 0;                // 0: no rotation by size
  std::chrono::milliseconds rotate_interval{0};  // 0: no rotation by time
  std::size_t keep = 10;                         // rotated files kept

  bool operator==(const OutputPolicy&) const = default;
};

struct ServeConfig {
  std::string file = "(defaults)";  // where it came from, for messages
  std::vector<InputConfig> inputs;
  // pipeline
  std::vector<std::string> where;
  std::vector<std::string> fields;
  std::size_t workers = 0;        // 0: one per hardware thread
  std::size_t queue_chunks = 64;  // chunks between the inputs and the parsers
  // the live summary (GET /summary): tumbling windows of processing time
  std::chrono::milliseconds summary_window = std::chrono::minutes(1);
  std::size_t summary_windows = 60;  // closed windows kept
  std::size_t summary_top = 10;      // entries of each top list
  // outputs: a file, "-" (stdout) or "none"
  std::string records = "log-ingest-out/records.jsonl";
  std::string dead_letters = "log-ingest-out/dead-letters.jsonl";
  OutputPolicy output;  // fsync, flush and rotate
  // service
  std::string metrics_listen = "127.0.0.1:9464";  // "none": no endpoint
  std::string auth_file;
  std::chrono::milliseconds drain_timeout = std::chrono::seconds(30);
  // The longest a drain takes in all: past it, the service stops as at a second signal. Unless
  // set, drain_timeout + stop_after_drain.
  static constexpr std::chrono::milliseconds stop_after_drain = std::chrono::seconds(30);
  std::chrono::milliseconds stop_timeout = drain_timeout + stop_after_drain;
  std::string state_dir = "/var/lib/log-ingest";  // file inputs' checkpoints, one per input
  LimitsConfig limits;
};

// The configuration without a file: syslog over TCP and UDP on 127.0.0.1:5514.
ServeConfig default_serve_config();
ServeConfig load_serve_config(const std::string& path);
// `text` as if read from a file named `file`.
ServeConfig parse_serve_config(const std::string& text, const std::string& file);

[[nodiscard]] const char* to_string(InputType type) noexcept;

}  // namespace conveyor::log_ingest
