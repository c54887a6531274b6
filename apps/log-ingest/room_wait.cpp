// RoomWait: one timer for the connections that wait for room.
#include "room_wait.hpp"

#include <chrono>
#include <utility>

namespace conveyor::log_ingest {

void RoomWait::wait(std::function<bool()> retry) {
  waiting_.push_back(std::move(retry));
  arm();
}

void RoomWait::arm() {
  if (armed_) return;
  armed_ = true;
  timer_.expires_after(std::chrono::milliseconds(1));
  timer_.async_wait(
      [this, alive = std::weak_ptr<const bool>(alive_)](const boost::system::error_code& error) {
        if (alive.expired() || error) return;
        tick();
      });
}

void RoomWait::tick() {
  armed_ = false;
  while (!waiting_.empty()) {
    std::function<bool()> retry = std::move(waiting_.front());
    waiting_.pop_front();
    if (!retry()) {  // still full: first again at the next tick, the others behind it
      waiting_.push_front(std::move(retry));
      break;
    }
  }
  if (!waiting_.empty()) arm();
}

}  // namespace conveyor::log_ingest
