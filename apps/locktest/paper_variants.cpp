#include "paper_variants.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "conveyor/sync/semaphore.hpp"
#include "event.hpp"

namespace conveyor::locktest {
namespace {

// The paper's counters start at -1, so that InterlockedIncrement returning 0 marks the first
// member in and InterlockedDecrement returning below 0 marks the last one out.
// acq_rel: the Interlocked calls are full barriers; the first/last decisions read each other.
long interlocked_increment(std::atomic<long>& counter) {
  return counter.fetch_add(1, std::memory_order_acq_rel) + 1;
}
long interlocked_decrement(std::atomic<long>& counter) {
  return counter.fetch_sub(1, std::memory_order_acq_rel) - 1;
}

std::vector<std::unique_ptr<Event>> make_events(std::size_t count, EventReset kind, bool set) {
  std::vector<std::unique_ptr<Event>> events;
  for (std::size_t index = 0; index < count; ++index) {
    events.push_back(std::make_unique<Event>(kind, set));
  }
  return events;
}

std::unique_ptr<std::atomic<long>[]> make_counters(std::size_t count) {
  auto counters = std::make_unique<std::atomic<long>[]>(count);
  for (std::size_t index = 0; index < count; ++index) {
    counters[index].store(-1, std::memory_order_relaxed);
  }
  return counters;
}

// CUnsafe: the synchronisation stubbed out.
class UnsafeLock final : public CompoundLock {
 public:
  void claim(std::size_t) override {}
  void release(std::size_t) override {}
};

// CMutex: WaitForSingleObject(hMutex) / ReleaseMutex. A kernel object every claimer sleeps on,
// so an automatic-reset event (set = free) rather than std::mutex, which the harness runs too.
class MutexLock final : public CompoundLock {
 public:
  void claim(std::size_t) override { mutex_.wait(); }
  void release(std::size_t) override { mutex_.set(); }

 private:
  Event mutex_{EventReset::automatic, true};
};

// CCritSect: the first member of a group waits for the global event while holding its group's
// critical section, so the rest of the group queues behind it ("cascaded waiting").
class CriticalSectionLock final : public CompoundLock {
 public:
  explicit CriticalSectionLock(std::size_t groups)
      : shields_(std::make_unique<std::mutex[]>(groups)), counters_(make_counters(groups)) {}

  void claim(std::size_t group) override {
    std::lock_guard shield(shields_[group]);                           // EnterCriticalSection
    if (interlocked_increment(counters_[group]) == 0) global_.wait();  // first in: take the lock
  }

  void release(std::size_t group) override {
    std::lock_guard shield(shields_[group]);
    if (interlocked_decrement(counters_[group]) < 0) global_.set();  // last out: hand it on
  }

 private:
  std::unique_ptr<std::mutex[]> shields_;
  std::unique_ptr<std::atomic<long>[]> counters_;
  Event global_{EventReset::automatic, true};  // hMutex = CreateEvent(NULL, FALSE, TRUE, NULL)
};

// CEvents: the first member takes the global event on behalf of its group and opens the group's
// local (manual-reset) event; the last one out closes it and hands the global event on.
class EventsLock : public CompoundLock {
 public:
  explicit EventsLock(std::size_t groups)
      : local_(make_events(groups, EventReset::manual, false)), counters_(make_counters(groups)) {}

  void claim(std::size_t group) override {
    if (interlocked_increment(counters_[group]) == 0) {
      global_.wait();
      local_[group]->set();
    }
    local_[group]->wait();
  }

  void release(std::size_t group) override {
    if (interlocked_decrement(counters_[group]) < 0) {
      local_[group]->reset();
      global_.set();
    }
  }

 private:
  std::vector<std::unique_ptr<Event>> local_;
  std::unique_ptr<std::atomic<long>[]> counters_;
  Event global_{EventReset::automatic, true};
};

// CSemaphore: CEvents plus a per-group semaphore taken after the local event.
class SemaphoreLock final : public CompoundLock {
 public:
  SemaphoreLock(std::size_t groups, int holders_per_group) : events_(groups) {
    for (std::size_t group = 0; group < groups; ++group) {
      semaphores_.push_back(std::make_unique<sync::Semaphore>(holders_per_group));
    }
  }

  void claim(std::size_t group) override {
    events_.claim(group);
    semaphores_[group]->acquire();
  }

  void release(std::size_t group) override {
    semaphores_[group]->release();
    events_.release(group);
  }

 private:
  EventsLock events_;
  std::vector<std::unique_ptr<sync::Semaphore>> semaphores_;
};

// CWFMO: each group waits for <global, local> at once; the global event comes first, so the
// first member of a group takes it and opens the local event for the others.
class WfmoLock final : public CompoundLock {
 public:
  WfmoLock(std::size_t groups, WfmoRelease release)
      : release_kind_(release),
        local_(make_events(groups, EventReset::manual, false)),
        counters_(make_counters(groups)),
        sections_(std::make_unique<std::mutex[]>(groups)) {}

  void claim(std::size_t group) override {
    std::unique_lock section(sections_[group], std::defer_lock);
    if (release_kind_ == WfmoRelease::corrected) section.lock();
    if (wait_any({&global_, local_[group].get()}) == 0) local_[group]->set();
    interlocked_increment(counters_[group]);
  }

  void release(std::size_t group) override {
    switch (release_kind_) {
      case WfmoRelease::revised:
        local_[group]->reset();
        if (interlocked_decrement(counters_[group]) < 0) {
          global_.set();
        } else {
          local_[group]->set();
        }
        return;
      case WfmoRelease::corrected: {
        std::lock_guard section(sections_[group]);
        release_original(group);
        return;
      }
      case WfmoRelease::original:
        release_original(group);
        return;
    }
  }

 private:
  void release_original(std::size_t group) {
    if (interlocked_decrement(counters_[group]) < 0) {
      // The window the author found: a member of this group that arrives now still passes the
      // local event, and then the global event lets the other group in too.
      local_[group]->reset();
      global_.set();
    }
  }

  WfmoRelease release_kind_;
  Event global_{EventReset::automatic, true};
  std::vector<std::unique_ptr<Event>> local_;
  std::unique_ptr<std::atomic<long>[]> counters_;
  std::unique_ptr<std::mutex[]> sections_;  // used by the corrected version only
};

// CRWLock: writers pass a writers' mutex, then take the global event like a first reader; the
// readers are CEvents' group.
class ReaderWriterLock final : public CompoundLock {
 public:
  void claim(std::size_t group) override {
    if (group == writer) {
      writer_mutex_.lock();
      global_.wait();
      return;
    }
    if (interlocked_increment(readers_) == 0) {
      global_.wait();
      reader_event_.set();
    }
    reader_event_.wait();
  }

  void release(std::size_t group) override {
    if (group == writer) {
      global_.set();
      writer_mutex_.unlock();
      return;
    }
    if (interlocked_decrement(readers_) < 0) {
      reader_event_.reset();
      global_.set();
    }
  }

 private:
  static constexpr std::size_t writer = 0;
  std::mutex writer_mutex_;
  Event global_{EventReset::automatic, true};
  Event reader_event_{EventReset::manual, false};
  std::atomic<long> readers_{-1};
};

// CCCR: a conditional critical region built from a critical section and a wait_any over
// <other group's event, always-set event>; the claimer polls until the other group's event is set.
class ConditionalRegionLock final : public CompoundLock {
 public:
  ConditionalRegionLock() : counters_(make_counters(2)) {}

  void claim(std::size_t group) override {
    Event& other = group == 0 ? group_free_[1] : group_free_[0];
    for (;;) {
      {
        std::lock_guard atomizer(atomizer_);
        if (wait_any({&other, &always_set_}) == 0) {  // the other group's event: it is out
          if (interlocked_increment(counters_[group]) == 0) group_free_[group].reset();
          return;
        }
      }
      // The paper retries at once; yielding keeps the poll from starving the holders of a
      // two-core machine without changing what the region decides.
      std::this_thread::yield();
    }
  }

  void release(std::size_t group) override {
    std::lock_guard atomizer(atomizer_);
    if (interlocked_decrement(counters_[group]) < 0) group_free_[group].set();
  }

 private:
  std::mutex atomizer_;
  Event always_set_{EventReset::manual, true};
  Event group_free_[2] = {{EventReset::manual, true}, {EventReset::manual, true}};
  std::unique_ptr<std::atomic<long>[]> counters_;
};

}  // namespace

std::unique_ptr<CompoundLock> make_unsafe_lock() {
  return std::make_unique<UnsafeLock>();
}
std::unique_ptr<CompoundLock> make_mutex_lock() {
  return std::make_unique<MutexLock>();
}
std::unique_ptr<CompoundLock> make_critical_section_lock(std::size_t groups) {
  return std::make_unique<CriticalSectionLock>(groups);
}
std::unique_ptr<CompoundLock> make_events_lock(std::size_t groups) {
  return std::make_unique<EventsLock>(groups);
}
std::unique_ptr<CompoundLock> make_semaphore_lock(std::size_t groups, int holders_per_group) {
  return std::make_unique<SemaphoreLock>(groups, holders_per_group);
}
std::unique_ptr<CompoundLock> make_wfmo_lock(std::size_t groups, WfmoRelease release) {
  return std::make_unique<WfmoLock>(groups, release);
}
std::unique_ptr<CompoundLock> make_reader_writer_lock() {
  return std::make_unique<ReaderWriterLock>();
}
std::unique_ptr<CompoundLock> make_conditional_region_lock(std::size_t groups) {
  if (groups != 2) return nullptr;
  return std::make_unique<ConditionalRegionLock>();
}

}  // namespace conveyor::locktest
