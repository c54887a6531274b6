#include "conveyor/framework/detail/io_pool.hpp"

#include <pthread.h>

#include <algorithm>
#include <string>

namespace conveyor::detail {

IoPool::IoPool(std::size_t threads)
    : context_(static_cast<int>(std::max<std::size_t>(1, threads))),
      work_(context_.get_executor()) {
  const std::size_t count = std::max<std::size_t>(1, threads);
  threads_.reserve(count);
  try {
    for (std::size_t i = 0; i < count; ++i) {
      threads_.emplace_back([this, i] {
        // The thread's name in top -H, gdb and perf.
        const std::string name = "io/" + std::to_string(i);
        pthread_setname_np(pthread_self(), name.c_str());
        context_.run();
      });
    }
  } catch (...) {
    // A thread that could not be made: the ones made already end before the error goes on
    // (a joinable std::thread destroyed would end the program).
    finish();
    throw;
  }
}

IoPool::strand_type& IoPool::make_strand() {
  return strands_.emplace_back(context_.get_executor());
}

void IoPool::finish() noexcept {
  if (finished_) return;
  finished_ = true;
  work_.reset();
  context_.stop();
  for (auto& thread : threads_)
    thread.join();
  // Destroys the handlers still queued, and the coroutines they would resume. The services stay
  // until the context is destroyed (a second shutdown finds nothing left to do).
  context_.shutdown();
}

IoPool::~IoPool() {
  finish();
}

}  // namespace conveyor::detail
