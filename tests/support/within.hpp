// within: polls a condition until it holds or a time limit passes, for tests that wait on another
// thread or process. The limit is a bound on a hang, never an assertion about speed: choose it
// far above the time the condition takes.
#pragma once

#include <chrono>
#include <thread>

namespace conveyor::testing {

// Polls `done` every `step` for up to `limit`: whether it came true.
template <class Done>
bool within(std::chrono::milliseconds limit, Done done,
            std::chrono::milliseconds step = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(step);
  }
  return true;
}

}  // namespace conveyor::testing
