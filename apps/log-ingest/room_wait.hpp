// RoomWait: the connections of one listener that wait for room in the Ingress. One timer retries
// them every millisecond, in the order they found it full, until one finds it full again: a
// listener wakes up once a millisecond however many of its connections wait.
//
//   if (!delivered()) room.wait([self = shared_from_this()] { return self->deliver(); });
//
// Contract: used on the I/O thread only. `wait(retry)` calls `retry` at a later turn of the I/O
// thread; `retry` returns false while the Ingress is still full (it stays first in line for the
// next tick) and true once it is done. Destroying the RoomWait drops the retries it holds.
#pragma once

#include <deque>
#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace conveyor::log_ingest {

class RoomWait {
 public:
  explicit RoomWait(boost::asio::io_context& io) : timer_(io) {}
  RoomWait(const RoomWait&) = delete;
  RoomWait& operator=(const RoomWait&) = delete;
  ~RoomWait() = default;

  void wait(std::function<bool()> retry);
  [[nodiscard]] std::size_t waiting() const noexcept { return waiting_.size(); }

 private:
  void arm();
  void tick();

  boost::asio::steady_timer timer_;
  std::deque<std::function<bool()>> waiting_;
  bool armed_ = false;
  // What the timer's handler looks at first: it may run after the RoomWait is gone (cancelled).
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
};

}  // namespace conveyor::log_ingest
