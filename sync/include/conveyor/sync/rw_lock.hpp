// RwLock: a reader/writer lock that meets the SharedMutex requirements, so it works with
// std::shared_lock, std::unique_lock and std::scoped_lock. It is the two-group GroupLock with
// readers unlimited and writers capped at one (the paper's CRWLock).
//
// Contract:
// - Any thread may call any member, concurrently. Not copyable, not movable.
// - `lock`/`try_lock`/`unlock` take and give back exclusive (writer) ownership;
//   `lock_shared`/`try_lock_shared`/`unlock_shared` shared (reader) ownership. Not recursive, no
//   upgrade: a reader that asks for the write lock waits for itself.
// - Unlocking what the calling thread does not hold is a contract violation (checked when NDEBUG
//   is not defined, as far as GroupLock can tell; see group_lock.hpp).
//
// Progress: writers do not starve under a steady stream of readers, and readers do not starve
// under a steady stream of writers. With the default throughput policy, readers that arrive while
// a writer waits keep entering only within GroupLock's bounds (1 ms or 64 entries by default);
// then the readers inside finish, the writer enters, and all readers waiting at that point enter
// together after it. Pass GroupLockPolicy::fair for a strict hand-over at the first waiting writer.
//
// Cost: an uncontended lock_shared/unlock_shared pair is one compare-exchange and one fetch_sub;
// see group_lock.hpp.
//
// Memory ordering: GroupLock's. Whatever a writer wrote before `unlock` is visible to every later
// reader and writer; whatever a reader wrote before `unlock_shared` (to data of its own) is
// visible to the next writer.
#pragma once

#include <chrono>
#include <cstddef>

#include "conveyor/sync/group_lock.hpp"

namespace conveyor::sync {

class RwLock {
 public:
  static constexpr std::size_t reader_group = 0;
  static constexpr std::size_t writer_group = 1;

  explicit RwLock(GroupLockPolicy policy = GroupLockPolicy::throughput)
      : lock_(GroupLockOptions{.groups = 2, .caps = {0, 1}, .policy = policy}) {}

  RwLock(const RwLock&) = delete;
  RwLock& operator=(const RwLock&) = delete;
  RwLock(RwLock&&) = delete;
  RwLock& operator=(RwLock&&) = delete;

  void lock() { lock_.lock(writer_group); }
  [[nodiscard]] bool try_lock() { return lock_.try_lock(writer_group); }
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return lock_.try_lock_for(writer_group, timeout);
  }
  void unlock() { lock_.unlock(writer_group); }

  void lock_shared() { lock_.lock(reader_group); }
  [[nodiscard]] bool try_lock_shared() { return lock_.try_lock(reader_group); }
  template <class Rep, class Period>
  [[nodiscard]] bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout) {
    return lock_.try_lock_for(reader_group, timeout);
  }
  void unlock_shared() { lock_.unlock(reader_group); }

  // Entries, aces and waits of readers (reader_group) and writers (writer_group).
  [[nodiscard]] GroupLock::GroupStats stats(std::size_t group) const { return lock_.stats(group); }

 private:
  GroupLock lock_;
};

}  // namespace conveyor::sync
