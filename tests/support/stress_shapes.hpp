// The channels and stage options the pipeline stress matrices run over.
#pragma once

#include <cstddef>

#include "conveyor/framework/options.hpp"

namespace conveyor::testing {

enum class ChannelKind { mailbox, queue1, queue64 };

inline Channel channel_of(ChannelKind kind) {
  switch (kind) {
    case ChannelKind::mailbox:
      return Channel::mailbox();
    case ChannelKind::queue1:
      return Channel::queue(1);
    case ChannelKind::queue64:
      return Channel::queue(64);
  }
  return Channel::mailbox();
}

inline const char* channel_name(ChannelKind kind) {
  constexpr const char* names[] = {"mailbox", "queue1", "queue64"};
  return names[static_cast<int>(kind)];
}

// A shape's options: a parallel stage of `workers` on `channel`, batched by 16 or not, and the same
// edge into a serial_in_order stage.
struct ShapeOptions {
  StageOptions parallel;
  StageOptions in_order;
};

inline ShapeOptions shape_options(std::size_t workers, ChannelKind channel, bool batching) {
  ShapeOptions options;
  options.parallel = {.mode = Mode::parallel,
                      .workers = workers,
                      .channel = channel_of(channel),
                      .batch = batching ? std::size_t{16} : std::size_t{1}};
  options.in_order = options.parallel;
  options.in_order.mode = Mode::serial_in_order;
  return options;
}

}  // namespace conveyor::testing
