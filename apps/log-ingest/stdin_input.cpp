// StdinInput: lines from fd 0.
#include "stdin_input.hpp"

#include <poll.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <string_view>
#include <system_error>

namespace conveyor::log_ingest {

StdinInput::StdinInput(const InputConfig& config, const LimitsConfig& limits, Ingress& ingress,
                       InputCounters& counters)
    : ServiceInput(config, limits, ingress, counters) {}

StdinInput::~StdinInput() {
  stop_accepting();
  if (reader_.joinable()) reader_.join();
}

void StdinInput::start() {
  reader_ = std::thread([this] { read_all(); });
}

void StdinInput::read_all() {
  stages::FrameDecoder decoder({.max_frame_bytes = limits_.max_frame_bytes},
                               stages::Framing::lines);
  ChunkBuilder builder(input_);
  std::array<char, 64U << 10U> buffer{};
  const auto hand_over = [&] {
    builder.seal();
    while (builder.ready()) {
      Delivery& next = builder.front();
      if (!ingress_.push(std::move(next), counters_)) return;
      builder.pop();
    }
  };
  // Only the end of the input ends its last line; a stop with nothing ready, the drain's
  // deadline or a read error leaves a line without its end cut off.
  bool at_end = false;
  for (;;) {
    // Relaxed: a flag, set once; what was read is handed over below whenever it is seen.
    if (cut_.load(std::memory_order_relaxed)) break;
    pollfd ready{.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
    // Wakes every 100 ms to see a stop; after one, reads only what is there already.
    const bool stopping = stop_.load(std::memory_order_relaxed);
    const int polled = ::poll(&ready, 1, stopping ? 0 : 100);
    if (polled < 0 && errno == EINTR) continue;
    if (polled == 0) {
      if (stopping) break;
      continue;
    }
    const ssize_t count = ::read(STDIN_FILENO, buffer.data(), buffer.size());
    if (count < 0 && errno == EINTR) continue;
    if (count < 0 && errno == EAGAIN) continue;  // a non-blocking descriptor another reader drained
    if (count < 0) {
      const int error = errno;
      std::fprintf(stderr, "log-ingest: input '%s': cannot read stdin: %s; it ends here\n",
                   config_.name.c_str(), std::generic_category().message(error).c_str());
      break;
    }
    if (count == 0) {
      at_end = true;
      break;
    }
    InputCounters::add(counters_.bytes, static_cast<std::uint64_t>(count));
    decoder.feed(std::string_view(buffer.data(), static_cast<std::size_t>(count)), builder);
    hand_over();
  }
  // A line still without its end is dead-lettered as truncated, unless the input ended there.
  if (at_end) {
    decoder.finish(builder);
  } else {
    decoder.cut(builder);
  }
  hand_over();
  finished_.store(true, std::memory_order_release);
}

}  // namespace conveyor::log_ingest
