// The load generator behind `log-ingest generate --to`: the sample generator's lines sent to a log
// service over TCP or UDP, at a steady rate or as fast as the service takes them, for the
// benchmarks and for trying `serve` out.
//
//   log-ingest generate --to tcp://127.0.0.1:5514 --rate 50000 --format syslog5424
//
// Formats: `syslog5424` wraps each access-log line as an RFC 5424 message, as nginx's syslog
// output does (`<134>1 2026-11-26T10:00:00.123Z web-07 nginx 1234 - - LINE`), framed for TCP by
// octet counting or LF (`framing`); `combined` and `json` send the lines as they are, one per LF.
// Over UDP each message is one datagram. Each connection sends its share of `lines` at its share
// of `rate`, from a generator seeded apart from the others. At a rate, a connection sends what is
// due once a millisecond, in writes of up to 512 messages (a file is appended to every 200 us, as
// a program writes its log); docs/serve.md says why.
//
// With `from`, the lines of that file are sent instead, each as one message as it is (framed by
// `octet_counting` over TCP), the file cut into one share of whole lines per connection. The
// file is mapped, not read first, so that sending starts at once: benchmarks render their
// messages beforehand and time only the sending. `latency_file` marks replayed lines as well.
//
// With `latency_file`, one message in `probe_every` carries its send time, and `send_load` reports
// the quantiles of the time until its line appears in that file (latency_probe.hpp).
//
// Contract: `send_load` returns once every line was sent (0), or prints why it could not connect
// or send and returns 1. It reports the messages, bytes and rate it achieved on stderr, and with
// `latency_file` the latency quantiles; a mark that never appears in the file makes it return 1.
#pragma once

#include <cstdint>
#include <string>

#include "sample.hpp"

namespace conveyor::log_ingest {

struct LoadOptions {
  std::string to;                     // tcp://HOST:PORT or udp://HOST:PORT
  double rate = 0;                    // messages per second in all; 0: as fast as it can
  unsigned connections = 1;           // TCP connections (UDP: sockets), each on its own thread
  std::string format = "syslog5424";  // syslog5424, combined or json
  bool octet_counting = true;         // syslog5424 over TCP: octet-counted frames, else LF
  SampleOptions sample;               // lines, seed and profile; `format` follows `format`
  std::string from;                   // if set, send this file's lines instead (framed as asked)
  std::string latency_file;           // if set, measure send-to-write latency (latency_probe.hpp)
  unsigned probe_every = 100;         // with latency_file: mark one message in this many
};

int send_load(const LoadOptions& options);

// Appends `line` (without its LF) as an RFC 5424 message, framed for TCP as asked (none: a
// datagram's text). `number` picks the host; `timestamp` is RFC 3339.
enum class SyslogFrame { none, octet_counted, lf };
void append_syslog5424(std::string& out, std::string_view line, std::uint64_t number,
                       std::string_view timestamp, SyslogFrame frame);
// Appends `message` as it is, framed as asked.
void append_framed(std::string& out, std::string_view message, SyslogFrame frame);

}  // namespace conveyor::log_ingest
