// InputSet: opening, reloading and draining serve's inputs.
#include "input_set.hpp"

#include <algorithm>
#include <exception>
#include <optional>

#include "file_input.hpp"
#include "http_input.hpp"
#include "stdin_input.hpp"
#include "tcp_input.hpp"
#include "udp_input.hpp"

namespace conveyor::log_ingest {

namespace {

bool listens(InputType type) {
  return type != InputType::stdin_lines && type != InputType::file;
}

}  // namespace

std::unique_ptr<ServiceInput> InputSet::make(const InputConfig& config,
                                             const LimitsConfig& limits) {
  InputCounters* counters = nullptr;
  {
    std::lock_guard lock(counters_mutex_);
    auto& slot = counters_[config.name];
    if (!slot) slot = std::make_unique<InputCounters>(config.name);
    // Relaxed: a flag that only ever turns on, read by the metrics.
    if (config.type == InputType::http) slot->http.store(true, std::memory_order_relaxed);
    counters = slot.get();
  }
  switch (config.type) {
    case InputType::syslog_tcp:
    case InputType::tcp:
      return std::make_unique<TcpInput>(io_, config, limits, ingress_, *counters);
    case InputType::http:
      return std::make_unique<HttpInput>(io_, config, limits, ingress_, *counters);
    case InputType::syslog_udp:
      return std::make_unique<UdpInput>(io_, config, limits, ingress_, *counters);
    case InputType::stdin_lines:
      return std::make_unique<StdinInput>(config, limits, ingress_, *counters);
    case InputType::file:
      return std::make_unique<FileInput>(config, limits, ingress_, *counters, state_dir_);
  }
  return nullptr;
}

void InputSet::open(const std::vector<InputConfig>& inputs, const LimitsConfig& limits) {
  for (const InputConfig& config : inputs)
    running_.push_back({config, limits, make(config, limits)});
  for (Running& running : running_)
    running.input->start();
}

std::string InputSet::reload(const std::vector<InputConfig>& inputs, const LimitsConfig& limits,
                             std::chrono::milliseconds drain) {
  const auto deadline = std::chrono::steady_clock::now() + drain;
  const auto find = [&inputs](const std::string& name) {
    return std::find_if(inputs.begin(), inputs.end(),
                        [&name](const InputConfig& config) { return config.name == name; });
  };
  std::vector<std::string> before;
  before.reserve(running_.size());
  for (const Running& running : running_)
    before.push_back(running.config.name);
  std::size_t kept = 0;
  std::size_t reopened = 0;
  std::size_t removed = 0;
  std::vector<Running> next;
  // What to open, and for a changed input, what to open again if its new settings fail.
  struct Opening {
    InputConfig config;
    std::optional<Running> previous;  // its settings; no input
  };
  std::vector<Opening> to_open;
  for (Running& running : running_) {
    const auto wanted = find(running.config.name);
    const bool stdin_input = running.config.type == InputType::stdin_lines;
    const bool same = wanted != inputs.end() && *wanted == running.config &&
                      (!listens(running.config.type) || limits == running.limits);
    if (same || stdin_input) {
      ++kept;
      next.push_back(std::move(running));
      continue;
    }
    // Retired first, so that a changed input can bind its address again.
    running.input->stop_accepting();
    if (running.config.type == InputType::file && wanted != inputs.end()) {
      // Its checkpoint is saved before the new one reads it: two never share it. Lines still in
      // flight are read again by the new one (at least once).
      running.input.reset();
    } else {
      retired_.push_back({std::move(running.input), deadline});
    }
    if (wanted != inputs.end()) {
      ++reopened;
      to_open.push_back({*wanted, Running{running.config, running.limits, nullptr}});
    } else {
      ++removed;
    }
  }
  std::size_t added = 0;
  for (const InputConfig& config : inputs) {
    const bool known = std::find(before.begin(), before.end(), config.name) != before.end();
    if (!known && config.type != InputType::stdin_lines) {
      ++added;
      to_open.push_back({config, std::nullopt});
    }
  }
  running_ = std::move(next);
  std::string failures;
  for (Opening& opening : to_open) {
    const std::string& name = opening.config.name;
    try {
      running_.push_back({opening.config, limits, make(opening.config, limits)});
    } catch (const std::exception& error) {
      failures.append("; input '")
          .append(name)
          .append(opening.previous ? "' not reopened (" : "' not opened (");
      failures.append(error.what()).append(")");
      if (!opening.previous) {
        --added;
        continue;
      }
      --reopened;
      // Its old listener has let go of the address by now.
      try {
        Running& previous = *opening.previous;
        previous.input = make(previous.config, previous.limits);
        running_.push_back(std::move(previous));
        failures.append(": it goes on with its previous settings");
      } catch (const std::exception& again) {
        failures.append(", nor opened again with its previous settings (").append(again.what());
        failures.append(")");
        continue;
      }
    }
    running_.back().input->start();
  }
  std::string summary = "kept ";
  summary.append(std::to_string(kept)).append(", reopened ").append(std::to_string(reopened));
  summary.append(", removed ").append(std::to_string(removed)).append(", added ");
  return summary.append(std::to_string(added)).append(failures);
}

void InputSet::stop_accepting() {
  for (Running& running : running_)
    running.input->stop_accepting();
  for (Retired& retired : retired_)
    retired.input->stop_accepting();
}

void InputSet::close_all() {
  for (Running& running : running_)
    running.input->close_all();
  for (Retired& retired : retired_)
    retired.input->close_all();
}

void InputSet::abandon() {
  for (Running& running : running_)
    running.input->abandon();
  for (Retired& retired : retired_)
    retired.input->abandon();
}

bool InputSet::finished() const {
  return std::all_of(running_.begin(), running_.end(),
                     [](const Running& running) { return running.input->finished(); }) &&
         std::all_of(retired_.begin(), retired_.end(),
                     [](const Retired& retired) { return retired.input->finished(); });
}

void InputSet::tick() {
  const auto now = std::chrono::steady_clock::now();
  for (Retired& retired : retired_)
    if (now >= retired.deadline) retired.input->close_all();
  // A retired file input goes once its last checkpoint holds everything it handed over, so that
  // the input put back by a later reload repeats none of it; past its deadline, once finished.
  retired_.erase(std::remove_if(retired_.begin(), retired_.end(),
                                [now](const Retired& retired) {
                                  return retired.input->finished() &&
                                         (retired.input->settled() || now >= retired.deadline);
                                }),
                 retired_.end());
}

std::vector<InputSet::Listening> InputSet::listening() const {
  std::vector<Listening> result;
  result.reserve(running_.size());
  for (const Running& running : running_)
    result.push_back({running.config.name, running.config.type, running.input->where()});
  return result;
}

std::vector<const InputCounters*> InputSet::counters() const {
  std::lock_guard lock(counters_mutex_);
  std::vector<const InputCounters*> result;
  result.reserve(counters_.size());
  for (const auto& [name, counters] : counters_)
    result.push_back(counters.get());
  return result;
}

}  // namespace conveyor::log_ingest
