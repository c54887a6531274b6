// StdinInput: `log-ingest serve` reading plain lines from its standard input, on a thread of its
// own (stdin may be a file, a pipe or a terminal, which an event loop cannot all wait on). It
// waits for room in the Ingress, so a producer writing into the pipe is slowed, never dropped.
//
// Contract: ServiceInput's, except that `finished()` may be called from any thread. At the end of
// stdin, once `stop_accepting` was called and nothing more is ready to read, or once `close_all`
// was called (a writer that never pauses is cut off there), it hands over what it read and
// finishes. An unterminated last line is a message at the end of stdin, and is dead-lettered as
// truncated when it was cut off.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "serve_config.hpp"
#include "service_input.hpp"

namespace conveyor::log_ingest {

class StdinInput final : public ServiceInput {
 public:
  StdinInput(const InputConfig& config, const LimitsConfig& limits, Ingress& ingress,
             InputCounters& counters);
  ~StdinInput() override;

  void start() override;
  void stop_accepting() override { stop_.store(true, std::memory_order_relaxed); }
  void close_all() override {
    stop_accepting();
    cut_.store(true, std::memory_order_relaxed);
  }
  [[nodiscard]] bool finished() const override { return finished_.load(std::memory_order_acquire); }
  [[nodiscard]] std::string where() const override { return "stdin"; }

 private:
  void read_all();

  std::atomic<bool> stop_{false};
  std::atomic<bool> cut_{false};       // reads no more, whatever is ready
  std::atomic<bool> finished_{false};  // release: after its last push
  std::thread reader_;
};

}  // namespace conveyor::log_ingest
