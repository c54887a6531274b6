// Watchdog: fails a test that hangs instead of letting it block the whole run.
//
// Construct one at the top of any test that can block. If the test is still running when the
// limit passes, the watchdog prints the test's name and the limit on stderr and aborts the
// process, so CTest reports a failure (with the sanitizers' or the debugger's stack, where one
// is attached) rather than waiting for its own much longer timeout.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "stress.hpp"

namespace conveyor::testing {

class Watchdog {
 public:
  // The limit is scaled for the slower sanitizer builds (see stress.hpp).
  explicit Watchdog(std::chrono::seconds limit = std::chrono::seconds(60))
      : limit_(limit * sanitizer_slowdown()), thread_([this] { watch(); }) {}

  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      finished_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

 private:
  void watch() {
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, limit_, [this] { return finished_; })) return;
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::fprintf(stderr, "watchdog: %s.%s still running after %lld s: deadlock or livelock\n",
                 test != nullptr ? test->test_suite_name() : "?",
                 test != nullptr ? test->name() : "?", static_cast<long long>(limit_.count()));
    std::fflush(stderr);
    std::abort();
  }

  std::chrono::seconds limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace conveyor::testing
