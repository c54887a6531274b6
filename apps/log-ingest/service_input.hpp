// ServiceInput: one input of `log-ingest serve` (a TCP or UDP listener, stdin), as the service
// starts, drains and counts it. Inputs hand what they read to the Ingress (ingress.hpp).
//
// Contract: every member is called on the service's I/O thread (the io_context that the input
// was made with). `stop_accepting` takes no new clients, and UDP inputs read what is already
// queued to them and close; `close_all` ends every connection at once (the drain timeout); after
// either, the input becomes `finished()` once everything it read is in the Ingress. `counters()`
// may be read from any thread (relaxed atomics); the counters are the caller's, and outlive the
// input.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/ip/address.hpp>

#include "ingress.hpp"
#include "serve_config.hpp"

namespace conveyor::log_ingest {

class ServiceInput {
 public:
  virtual ~ServiceInput() = default;

  virtual void start() = 0;
  virtual void stop_accepting() = 0;
  virtual void close_all() = 0;
  // The pipeline failed and dropped what was in flight: save no more positions past it (file
  // inputs). Others have nothing to do.
  virtual void abandon() {}
  [[nodiscard]] virtual bool finished() const = 0;
  // Whether destroying it now loses nothing it would still do: once finished, by default; a file
  // input's, once its last checkpoint (everything it handed over written) is saved.
  [[nodiscard]] virtual bool settled() const { return finished(); }
  // Where it listens, as a URL (tcp://127.0.0.1:5514), for the log.
  [[nodiscard]] virtual std::string where() const = 0;
  [[nodiscard]] InputCounters& counters() noexcept { return counters_; }

 protected:
  ServiceInput(const InputConfig& config, const LimitsConfig& limits, Ingress& ingress,
               InputCounters& counters)
      : config_(config),
        limits_(limits),
        ingress_(ingress),
        counters_(counters),
        input_(std::make_shared<const stages::Input>(
            stages::Input{.name = config.name,
                          .index = 0,
                          .format = config.format,
                          .max_line_length = limits.max_parsed_line()})) {}

  const InputConfig config_;
  const LimitsConfig limits_;
  Ingress& ingress_;
  InputCounters& counters_;  // outlives the input: a reloaded input with its name carries it on
  // What its chunks name as their input (dead letters carry its name).
  const std::shared_ptr<const stages::Input> input_;
};

struct Endpoint {
  boost::asio::ip::address address;
  std::uint16_t port = 0;
};

// HOST:PORT, where HOST is an IPv4 address, `localhost` or a bracketed IPv6 address; throws
// std::invalid_argument naming what is wrong.
Endpoint parse_endpoint(const std::string& text);

// SCHEME://HOST:PORT, an IPv6 host in brackets.
std::string url(const char* scheme, const boost::asio::ip::address& address, std::uint16_t port);

}  // namespace conveyor::log_ingest
