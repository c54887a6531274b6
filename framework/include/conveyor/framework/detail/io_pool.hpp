// IoPool: the I/O threads of a pipeline with asynchronous stages: one boost::asio::io_context
// run by `threads` threads, from the pipeline's start until it has finished.
//
// Contract:
// - Made by Pipeline::start() when a stage is asynchronous. `make_strand` before the threads may
//   run a handler of it (it is not thread-safe).
// - `finish()`, once every worker has returned (Pipeline::wait()), stops the context, joins its
//   threads and shuts the context down. Coroutines still suspended then (after an abort or a
//   failure, the only way a worker leaves some behind) are destroyed without being resumed: their
//   frames unwind, and what they awaited is cancelled by the destructors of the I/O objects that
//   awaited it. The stages' code, their results' lists and the doorbells outlive that.
// - The context itself is destroyed last, with the pipeline, so that I/O objects the stages' code
//   keeps (a connection, say) may be destroyed with it, after `finish()`.
#pragma once

#include <cstddef>
#include <deque>
#include <thread>
#include <vector>

#include "conveyor/sync/detail/asio_coroutines.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

namespace conveyor::detail {

class IoPool {
 public:
  using executor_type = boost::asio::io_context::executor_type;
  using strand_type = boost::asio::strand<executor_type>;

  explicit IoPool(std::size_t threads);
  ~IoPool();  // finish(), if it was not called

  void finish() noexcept;

  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  // A new strand of the context, which the pool keeps: a strand must not outlive its context.
  [[nodiscard]] strand_type& make_strand();

 private:
  // An io_context whose shutdown (what its destructor starts with) may be run earlier.
  class Context : public boost::asio::io_context {
   public:
    using boost::asio::execution_context::shutdown;
    using boost::asio::io_context::io_context;
  };

  Context context_;
  boost::asio::executor_work_guard<executor_type> work_;
  std::deque<strand_type> strands_;
  std::vector<std::thread> threads_;
  bool finished_ = false;
};

}  // namespace conveyor::detail
