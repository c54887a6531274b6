// The catalogue of variants: the paper's reference locks, then the library's and the standard ones.
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "compound_lock.hpp"
#include "paper_variants.hpp"

// The library's group locks are wired in once their headers exist.
#if __has_include("conveyor/sync/group_lock.hpp") && __has_include("conveyor/sync/rw_lock.hpp")
#define CONVEYOR_LOCKTEST_HAS_GROUP_LOCK 1
#include "conveyor/sync/group_lock.hpp"
#include "conveyor/sync/rw_lock.hpp"
#else
#define CONVEYOR_LOCKTEST_HAS_GROUP_LOCK 0
#endif

namespace conveyor::locktest {
namespace {

// Group 0 takes any SharedMutex exclusively, every other group shares it (writers and readers).
template <class SharedMutex>
class SharedMutexLock final : public CompoundLock {
 public:
  void claim(std::size_t group) override {
    if (group == 0) {
      mutex_.lock();
    } else {
      mutex_.lock_shared();
    }
  }
  void release(std::size_t group) override {
    if (group == 0) {
      mutex_.unlock();
    } else {
      mutex_.unlock_shared();
    }
  }

 private:
  SharedMutex mutex_;
};

class StdMutexLock final : public CompoundLock {
 public:
  void claim(std::size_t) override { mutex_.lock(); }
  void release(std::size_t) override { mutex_.unlock(); }

 private:
  std::mutex mutex_;
};

#if CONVEYOR_LOCKTEST_HAS_GROUP_LOCK
class LibraryGroupLock final : public CompoundLock {
 public:
  explicit LibraryGroupLock(sync::GroupLockOptions options) : lock_(std::move(options)) {}
  void claim(std::size_t group) override { lock_.lock(group); }
  void release(std::size_t group) override { lock_.unlock(group); }

 private:
  sync::GroupLock lock_;
};

std::unique_ptr<CompoundLock> make_group_lock(std::size_t groups, sync::GroupLockPolicy policy) {
  sync::GroupLockOptions options;
  options.groups = groups;
  options.policy = policy;
  return std::make_unique<LibraryGroupLock>(std::move(options));
}
#endif

}  // namespace

std::vector<Variant> all_variants() {
  std::vector<Variant> variants = {
      {"CUnsafe", "the lock stubbed out", Soundness::unsound,
       [](std::size_t) { return make_unsafe_lock(); }},
      {"CMutex", "one automatic-reset event for everybody", Soundness::sound,
       [](std::size_t) { return make_mutex_lock(); }},
      {"CCritSect", "per-group critical section, first member takes the global event",
       Soundness::sound, [](std::size_t groups) { return make_critical_section_lock(groups); }},
      {"CEvents", "global automatic event + per-group manual event", Soundness::racy,
       [](std::size_t groups) { return make_events_lock(groups); }},
      {"CSemaphore", "CEvents + a semaphore of 2 per group", Soundness::racy,
       [](std::size_t groups) { return make_semaphore_lock(groups, 2); }},
      {"CWFMO-original", "wait_any(global, local), the paper's first Release", Soundness::unsound,
       [](std::size_t groups) { return make_wfmo_lock(groups, WfmoRelease::original); }},
      {"CWFMO-revised", "wait_any(global, local), the paper's revised Release", Soundness::unsound,
       [](std::size_t groups) { return make_wfmo_lock(groups, WfmoRelease::revised); }},
      {"CWFMO-corrected", "wait_any(global, local) inside a per-group critical section",
       Soundness::sound,
       [](std::size_t groups) { return make_wfmo_lock(groups, WfmoRelease::corrected); }},
      {"CRWLock", "group 0 writes (writers' mutex), the others read", Soundness::racy,
       [](std::size_t) { return make_reader_writer_lock(); }},
      {"CCCR", "conditional critical region polled with wait_any (2 groups only)", Soundness::sound,
       [](std::size_t groups) { return make_conditional_region_lock(groups); }},
  };
#if CONVEYOR_LOCKTEST_HAS_GROUP_LOCK
  variants.push_back({"GroupLock-throughput", "conveyor::sync::GroupLock, throughput policy",
                      Soundness::sound, [](std::size_t groups) {
                        return make_group_lock(groups, sync::GroupLockPolicy::throughput);
                      }});
  variants.push_back(
      {"GroupLock-fair", "conveyor::sync::GroupLock, fair policy", Soundness::sound,
       [](std::size_t groups) { return make_group_lock(groups, sync::GroupLockPolicy::fair); }});
  variants.push_back({"RwLock", "conveyor::sync::RwLock, group 0 writes", Soundness::sound,
                      [](std::size_t) -> std::unique_ptr<CompoundLock> {
                        return std::make_unique<SharedMutexLock<sync::RwLock>>();
                      }});
#endif
  variants.push_back({"std::shared_mutex", "group 0 writes, the others read", Soundness::sound,
                      [](std::size_t) -> std::unique_ptr<CompoundLock> {
                        return std::make_unique<SharedMutexLock<std::shared_mutex>>();
                      }});
  variants.push_back({"std::mutex", "one std::mutex for everybody", Soundness::sound,
                      [](std::size_t) -> std::unique_ptr<CompoundLock> {
                        return std::make_unique<StdMutexLock>();
                      }});
  return variants;
}

}  // namespace conveyor::locktest
