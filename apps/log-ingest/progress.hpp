// A progress bar on stderr for log-ingest run: bytes done of the total, rate, and time left.
// It draws only when stderr is a terminal, and leaves no trace in logs or pipes.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <utility>

#include "conveyor/framework.hpp"

namespace conveyor::log_ingest {

class ProgressBar final : public Observer {
 public:
  // `done` and `total` give bytes read so far and bytes in all (0 when unknown).
  ProgressBar(std::function<std::uint64_t()> done, std::function<std::uint64_t()> total)
      : done_(std::move(done)), total_(std::move(total)), enabled_(isatty(STDERR_FILENO) != 0) {}

  void on_sample(const Pipeline& /*pipeline*/, const PipelineStats& stats) override {
    if (!enabled_) return;
    const double done = static_cast<double>(done_());
    const double total = static_cast<double>(total_());
    const double seconds = std::max(stats.elapsed_seconds, 1e-3);
    const double rate = done / seconds;
    constexpr int width = 30;
    const double fraction = total > 0 ? std::min(done / total, 1.0) : 0.0;
    char bar[width + 1];
    for (int i = 0; i < width; ++i)
      bar[i] = i < static_cast<int>(fraction * width) ? '#' : '.';
    bar[width] = '\0';
    if (total > 0) {
      const double left = rate > 0 ? (total - done) / rate : 0;
      std::fprintf(stderr, "\r[%s] %5.1f%%  %8.1f / %.1f MiB  %7.1f MiB/s  ETA %4.0f s ", bar,
                   fraction * 100, done / 1048576, total / 1048576, rate / 1048576, left);
    } else {
      std::fprintf(stderr, "\r%8.1f MiB  %7.1f MiB/s ", done / 1048576, rate / 1048576);
    }
    std::fflush(stderr);
    drawn_ = true;
  }

  void on_finish(const Pipeline& /*pipeline*/, const PipelineStats& /*stats*/,
                 const std::exception_ptr& /*error*/) override {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  std::function<std::uint64_t()> done_;
  std::function<std::uint64_t()> total_;
  bool enabled_;
  bool drawn_ = false;
};

}  // namespace conveyor::log_ingest
