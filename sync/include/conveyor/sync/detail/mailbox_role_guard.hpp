// A debug-only check that at most one thread at a time acts in a single-thread role (the producer
// or the consumer of a mailbox). Not a public header.
//
// Two threads inside the same role at once is a contract violation, reported and aborted on. The
// check catches overlapping calls, not two threads that take turns: a role may pass from one
// thread to another as long as the hand-over is ordered (e.g. by a join).
//
// Without NDEBUG the guard costs two atomic exchanges per call; with NDEBUG it is an empty class
// and `Scope` compiles to nothing.
//
// Memory ordering: `busy_` only detects overlap and guards no data; every operation is relaxed.
#pragma once

#include <atomic>

#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::sync::detail {

class MailboxRoleGuard {
 public:
  class Scope {
   public:
#ifdef NDEBUG
    Scope(MailboxRoleGuard&, const char*) noexcept {}
#else
    Scope(MailboxRoleGuard& guard, const char* what) noexcept : guard_(guard) {
      const bool someone_inside = guard_.busy_.exchange(true, std::memory_order_relaxed);
      CONVEYOR_CONTRACT(!someone_inside, what);
    }
    ~Scope() {
      guard_.busy_.store(false, std::memory_order_relaxed);
    }
#endif
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

#ifndef NDEBUG
   private:
    MailboxRoleGuard& guard_;
#endif
  };

 private:
#ifndef NDEBUG
  std::atomic<bool> busy_{false};
#endif
};

}  // namespace conveyor::sync::detail
