// settle_time: how long a test waits for a freshly started thread to reach a blocking call, also
// under the sanitizers.
//
// Use it only to make the interesting interleaving likely (a waiter asleep before the release, a
// first waiter queued before the second), never in an assertion about time: a test must pass
// whichever way the scheduler goes.
#pragma once

#include <chrono>

#include "stress.hpp"

namespace conveyor::testing {

inline std::chrono::milliseconds settle_time() {
  return std::chrono::milliseconds(30) * sanitizer_slowdown();
}

}  // namespace conveyor::testing
