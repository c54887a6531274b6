// QueueRoleGuard: a debug-only check that at most one thread at a time plays a queue role (the
// single producer or the single consumer of an SPSC queue).
//
// With NDEBUG the guard is an empty type and entering it compiles to nothing. Without NDEBUG each
// role holds an "in use" flag: entering sets it and leaving clears it, and a thread that finds it
// already set reports a contract violation. It catches two threads inside the same role at the
// same moment, which is how a second producer or consumer usually shows itself.
//
// Memory ordering: the flag's exchange on entry is acquire and its store on exit is release, so one
// legitimate user of a role that hands the role to another thread (through any synchronisation)
// never trips the check. The check adds no ordering that the queue relies on.
#pragma once

#include <atomic>

#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::sync::detail {

#ifdef NDEBUG

class QueueRoleGuard {
 public:
  class Scope {
   public:
    Scope(QueueRoleGuard& /*guard*/, const char* /*violation*/) noexcept {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  };
};

#else

class QueueRoleGuard {
 public:
  class Scope {
   public:
    Scope(QueueRoleGuard& guard, const char* violation) noexcept : guard_(guard) {
      // Acquire pairs with the release in ~Scope of the previous user of the role.
      const bool was_in_use = guard_.in_use_.exchange(true, std::memory_order_acquire);
      CONVEYOR_DEBUG_CONTRACT(!was_in_use, violation);
    }
    ~Scope() { guard_.in_use_.store(false, std::memory_order_release); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    QueueRoleGuard& guard_;
  };

 private:
  std::atomic<bool> in_use_{false};
};

#endif

}  // namespace conveyor::sync::detail
