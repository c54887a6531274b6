// InputSet: the inputs `log-ingest serve` runs, by name, and what a reload changes of them.
//
//   InputSet inputs(io, ingress);
//   inputs.open(config.inputs, config.limits);        // binds every listener, then starts them
//   inputs.reload(next.inputs, next.limits, drain);   // SIGHUP
//
// A reload keeps every input whose settings (and, for listeners, the limits) did not change, with
// its connections. An input removed or changed is retired: it stops accepting and its connections
// are read until they close, or cut off after `drain`; a changed one is then opened anew with its
// new settings. stdin cannot be opened twice, so a stdin input is kept as it is.
//
// A changed input that cannot be opened with its new settings (a port in use, a TLS file that
// does not load) is opened again with its previous ones, and the others are reloaded all the same.
//
// Contract: every member but `counters` runs on the service's I/O thread. An input's counters
// live as long as the set, under its name, so a reloaded input carries on its totals and metrics
// never see a name twice. `open` throws std::exception naming the input when one cannot be made;
// `reload` does not, and says in its summary which inputs it could not open.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "ingress.hpp"
#include "serve_config.hpp"
#include "service_input.hpp"

namespace conveyor::log_ingest {

class InputSet {
 public:
  // `state_dir`: where file inputs keep their checkpoints.
  InputSet(boost::asio::io_context& io, Ingress& ingress, std::string state_dir = ".")
      : io_(io), ingress_(ingress), state_dir_(std::move(state_dir)) {}

  void open(const std::vector<InputConfig>& inputs, const LimitsConfig& limits);
  // What changed, for the log ("kept 2, reopened 1, removed 0, added 1"), then each input that
  // could not be opened ("; input 'web' not reopened (...): it goes on with its previous
  // settings").
  std::string reload(const std::vector<InputConfig>& inputs, const LimitsConfig& limits,
                     std::chrono::milliseconds drain);

  // Every input, retired ones included.
  void stop_accepting();
  void close_all();
  // The pipeline failed: inputs save no positions past what it dropped.
  void abandon();
  [[nodiscard]] bool finished() const;
  // Cuts off retired inputs past their deadline, and lets go of those that finished.
  void tick();

  // Where each running input listens, in the configuration's order: (name, type, URL).
  struct Listening {
    std::string name;
    InputType type;
    std::string where;
  };
  [[nodiscard]] std::vector<Listening> listening() const;
  [[nodiscard]] std::size_t size() const noexcept { return running_.size(); }

  // Every input's counters, ever; any thread.
  [[nodiscard]] std::vector<const InputCounters*> counters() const;

 private:
  struct Running {
    InputConfig config;
    LimitsConfig limits;  // what it was made with
    std::unique_ptr<ServiceInput> input;
  };
  struct Retired {
    std::unique_ptr<ServiceInput> input;
    std::chrono::steady_clock::time_point deadline;
  };

  std::unique_ptr<ServiceInput> make(const InputConfig& config, const LimitsConfig& limits);

  boost::asio::io_context& io_;
  Ingress& ingress_;
  std::string state_dir_;
  // Before the inputs, so that they outlive them: an input's thread counts until it is destroyed.
  mutable std::mutex counters_mutex_;  // guards counters_' shape (the counts are atomics)
  std::map<std::string, std::unique_ptr<InputCounters>> counters_;
  std::vector<Running> running_;
  std::vector<Retired> retired_;
};

}  // namespace conveyor::log_ingest
