// GroupLock and RwLock against their peers (std::shared_mutex, std::mutex, absl::Mutex), in one
// binary: each scenario is written once, as a template over a small adapter, and runs the same
// work for every library. After the Google Benchmark table the binary prints ours/peer ratios
// against the targets of the group locks.
//
// Options: those of bench_main.hpp (--ratios_json=<file>) and Google Benchmark's own.
//
// Every scenario checks its result, so that a broken lock reports an error instead of a time:
// inside the lock, threads read and update a small protected record whose two fields a writer
// keeps equal; a reader that sees them differ, a count of updates that comes out short (two
// writers inside at once), or a lock that is still held at the end is reported.
//
// Threaded scenarios spawn their partner thread inside the benchmark function (once per run) and
// count the operations of both threads; throughput is operations per second of wall time.
#include <absl/synchronization/mutex.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <utility>
#include <vector>

#include "bench_main.hpp"
#include "conveyor/sync/group_lock.hpp"
#include "conveyor/sync/rw_lock.hpp"
#include "ratio_reporter.hpp"

namespace conveyor::bench {
namespace {

// ---- adapters ----
//
// Group adapters: enter(group), leave(group), try_enter(group) for groups 0 and 1. The peers have
// no group lock; they share for group 0 (readers) and take the lock exclusively for group 1
// (writers), which is how a two-group workload would use them. std::mutex is exclusive for both.
//
// Reader/writer adapters: the SharedMutex calls lock, unlock, try_lock, lock_shared,
// unlock_shared.

struct ConveyorGroupLock {
  void enter(std::size_t group) { lock.lock(group); }
  void leave(std::size_t group) { lock.unlock(group); }
  bool try_enter(std::size_t group) { return lock.try_lock(group); }
  sync::GroupLock lock{sync::GroupLockOptions{.groups = 2}};
};

template <class SharedMutex>
struct SharedMutexGroups {
  void enter(std::size_t group) { group == 0 ? mutex.lock_shared() : mutex.lock(); }
  void leave(std::size_t group) { group == 0 ? mutex.unlock_shared() : mutex.unlock(); }
  bool try_enter(std::size_t group) {
    return group == 0 ? mutex.try_lock_shared() : mutex.try_lock();
  }
  SharedMutex mutex;
};

struct StdMutexGroups {
  void enter(std::size_t) { mutex.lock(); }
  void leave(std::size_t) { mutex.unlock(); }
  bool try_enter(std::size_t) { return mutex.try_lock(); }
  std::mutex mutex;
};

// absl::Mutex with ReaderLock for the shared side, under the SharedMutex names.
struct AbslSharedMutex {
  void lock() { mutex.Lock(); }
  void unlock() { mutex.Unlock(); }
  bool try_lock() { return mutex.TryLock(); }
  void lock_shared() { mutex.ReaderLock(); }
  void unlock_shared() { mutex.ReaderUnlock(); }
  bool try_lock_shared() { return mutex.ReaderTryLock(); }
  absl::Mutex mutex;
};

// std::mutex under the SharedMutex names: readers exclude each other too.
struct StdMutexAsShared {
  void lock() { mutex.lock(); }
  void unlock() { mutex.unlock(); }
  bool try_lock() { return mutex.try_lock(); }
  void lock_shared() { mutex.lock(); }
  void unlock_shared() { mutex.unlock(); }
  bool try_lock_shared() { return mutex.try_lock(); }
  std::mutex mutex;
};

// ---- what the locks protect ----

// Two fields that a writer keeps equal. Relaxed atomics, so that a broken lock shows up as a
// failed check rather than as undefined behaviour; on x86 they cost what plain loads and stores
// do. The lock orders them: that is what is being measured.
struct alignas(64) ProtectedRecord {
  std::atomic<std::uint64_t> first{0};
  std::atomic<std::uint64_t> second{0};

  // Under exclusive ownership. A plain read-modify-write, so that two writers inside at once lose
  // updates.
  void update() {
    const std::uint64_t next = first.load(std::memory_order_relaxed) + 1;
    first.store(next, std::memory_order_relaxed);
    second.store(next, std::memory_order_relaxed);
  }
  // Under shared ownership at least; true if the record is consistent.
  [[nodiscard]] bool consistent() const {
    const std::uint64_t seen = first.load(std::memory_order_relaxed);
    return second.load(std::memory_order_relaxed) == seen;
  }
  [[nodiscard]] std::uint64_t updates() const { return first.load(std::memory_order_relaxed); }
};

// What one thread did. Padded: each thread owns one.
struct alignas(64) Tally {
  std::uint64_t operations = 0;
  std::uint64_t updates = 0;
  std::uint64_t inconsistent = 0;
};

// Runs `partner_work(tally, stop)` on a second thread while the timed loop of `state` runs
// `main_work(tally)` once per iteration; returns both tallies once the partner has stopped.
template <class MainWork, class PartnerWork>
std::pair<Tally, Tally> run_with_partner(benchmark::State& state, MainWork main_work,
                                         PartnerWork partner_work) {
  alignas(64) std::atomic<bool> started{false};
  alignas(64) std::atomic<bool> stopping{false};
  Tally main_tally;
  Tally partner_tally;  // written by the partner, read after its join
  std::jthread partner([&] {
    // Acquire pairs with the release store before the timed loop; the wait only keeps the
    // partner from working before the clock starts.
    started.wait(false, std::memory_order_acquire);
    // Relaxed: the flag only says when to stop; the join orders the tally.
    while (!stopping.load(std::memory_order_relaxed))
      partner_work(partner_tally);
  });
  started.store(true, std::memory_order_release);
  started.notify_one();
  for (auto _ : state)
    main_work(main_tally);
  stopping.store(true, std::memory_order_relaxed);
  partner.join();
  return {main_tally, partner_tally};
}

// Reports an error for any inconsistency, else the operations of both threads as items.
void settle(benchmark::State& state, const ProtectedRecord& record, const Tally& main_tally,
            const Tally& partner_tally, bool still_held) {
  const std::uint64_t operations = main_tally.operations + partner_tally.operations;
  if (main_tally.operations != static_cast<std::uint64_t>(state.iterations())) {
    state.SkipWithError("the timed loop lost count of its operations");
  } else if (main_tally.inconsistent + partner_tally.inconsistent != 0) {
    state.SkipWithError("a reader saw a half-written record: a writer was inside with it");
  } else if (record.updates() != main_tally.updates + partner_tally.updates) {
    state.SkipWithError("updates were lost: two writers were inside at once");
  } else if (still_held) {
    state.SkipWithError("the lock is still held after every thread left");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(operations));
}

// ---- group scenarios ----

template <class Lock>
bool held_by_anyone(Lock& lock) {
  if (!lock.try_enter(1)) return true;
  lock.leave(1);
  return false;
}

// One thread enters group 0 and leaves, so neither call ever waits.
template <class Lock>
void group_uncontended(benchmark::State& state) {
  Lock lock;
  ProtectedRecord record;
  Tally tally;
  for (auto _ : state) {
    lock.enter(0);
    tally.inconsistent += record.consistent() ? 0 : 1;
    lock.leave(0);
    ++tally.operations;
  }
  settle(state, record, tally, Tally{}, held_by_anyone(lock));
}

// Two threads of group 0 enter and leave over and over (concurrent entering): each reads the
// record inside.
template <class Lock>
void group_same_group(benchmark::State& state) {
  Lock lock;
  ProtectedRecord record;
  lock.enter(1);
  record.update();  // something to read
  lock.leave(1);
  const auto read = [&](Tally& tally) {
    lock.enter(0);
    tally.inconsistent += record.consistent() ? 0 : 1;
    lock.leave(0);
    ++tally.operations;
  };
  const auto [main_tally, partner_tally] = run_with_partner(state, read, read);
  Tally setup = main_tally;
  setup.updates += 1;
  settle(state, record, setup, partner_tally, held_by_anyone(lock));
}

// The timed thread is group 0, its partner group 1, so the lock alternates between the groups:
// every operation is an update, which is exclusive because each group has one thread.
template <class Lock>
void group_two_groups(benchmark::State& state) {
  Lock lock;
  ProtectedRecord record;
  const auto work_as = [&](std::size_t group) {
    return [&lock, &record, group](Tally& tally) {
      lock.enter(group);
      record.update();
      lock.leave(group);
      ++tally.updates;
      ++tally.operations;
    };
  };
  const auto [main_tally, partner_tally] = run_with_partner(state, work_as(0), work_as(1));
  settle(state, record, main_tally, partner_tally, held_by_anyone(lock));
}

// ---- reader/writer scenarios ----

template <class SharedMutex>
bool held_by_anyone_rw(SharedMutex& mutex) {
  if (!mutex.try_lock()) return true;
  mutex.unlock();
  return false;
}

template <class SharedMutex>
void rw_uncontended_shared(benchmark::State& state) {
  SharedMutex mutex;
  ProtectedRecord record;
  Tally tally;
  for (auto _ : state) {
    mutex.lock_shared();
    tally.inconsistent += record.consistent() ? 0 : 1;
    mutex.unlock_shared();
    ++tally.operations;
  }
  settle(state, record, tally, Tally{}, held_by_anyone_rw(mutex));
}

template <class SharedMutex>
void rw_uncontended_exclusive(benchmark::State& state) {
  SharedMutex mutex;
  ProtectedRecord record;
  Tally tally;
  for (auto _ : state) {
    mutex.lock();
    record.update();
    mutex.unlock();
    ++tally.updates;
    ++tally.operations;
  }
  settle(state, record, tally, Tally{}, held_by_anyone_rw(mutex));
}

// Two threads; of every 20 operations of each, 19 read the record under shared ownership and one
// updates it under exclusive ownership (95% reads).
template <class SharedMutex>
void rw_mostly_reads(benchmark::State& state) {
  constexpr std::uint64_t operations_per_write = 20;
  SharedMutex mutex;
  ProtectedRecord record;
  const auto operate = [&](Tally& tally) {
    if (tally.operations % operations_per_write == operations_per_write - 1) {
      mutex.lock();
      record.update();
      mutex.unlock();
      ++tally.updates;
    } else {
      mutex.lock_shared();
      tally.inconsistent += record.consistent() ? 0 : 1;
      mutex.unlock_shared();
    }
    ++tally.operations;
  };
  const auto [main_tally, partner_tally] = run_with_partner(state, operate, operate);
  settle(state, record, main_tally, partner_tally, held_by_anyone_rw(mutex));
}

// ---- registration ----

void register_benchmarks() {
  using benchmark::RegisterBenchmark;
  const auto single = [](benchmark::internal::Benchmark* benchmark) {
    benchmark->Unit(benchmark::kNanosecond);
  };
  const auto threaded = [](benchmark::internal::Benchmark* benchmark) {
    benchmark->Unit(benchmark::kNanosecond)->UseRealTime();
  };
  using StdSharedGroups = SharedMutexGroups<std::shared_mutex>;
  using AbslGroups = SharedMutexGroups<AbslSharedMutex>;

  single(RegisterBenchmark("group/uncontended/conveyor_group_lock",
                           group_uncontended<ConveyorGroupLock>));
  single(
      RegisterBenchmark("group/uncontended/std_shared_mutex", group_uncontended<StdSharedGroups>));
  single(RegisterBenchmark("group/uncontended/std_mutex", group_uncontended<StdMutexGroups>));
  single(RegisterBenchmark("group/uncontended/absl_mutex", group_uncontended<AbslGroups>));

  threaded(RegisterBenchmark("group/same_group_2_threads/conveyor_group_lock",
                             group_same_group<ConveyorGroupLock>));
  threaded(RegisterBenchmark("group/same_group_2_threads/std_shared_mutex",
                             group_same_group<StdSharedGroups>));
  threaded(
      RegisterBenchmark("group/same_group_2_threads/std_mutex", group_same_group<StdMutexGroups>));
  threaded(
      RegisterBenchmark("group/same_group_2_threads/absl_mutex", group_same_group<AbslGroups>));

  threaded(RegisterBenchmark("group/two_groups_2_threads/conveyor_group_lock",
                             group_two_groups<ConveyorGroupLock>));
  threaded(RegisterBenchmark("group/two_groups_2_threads/std_shared_mutex",
                             group_two_groups<StdSharedGroups>));
  threaded(
      RegisterBenchmark("group/two_groups_2_threads/std_mutex", group_two_groups<StdMutexGroups>));
  threaded(
      RegisterBenchmark("group/two_groups_2_threads/absl_mutex", group_two_groups<AbslGroups>));

  single(RegisterBenchmark("rw/uncontended_shared/conveyor_rw_lock",
                           rw_uncontended_shared<sync::RwLock>));
  single(RegisterBenchmark("rw/uncontended_shared/std_shared_mutex",
                           rw_uncontended_shared<std::shared_mutex>));
  single(RegisterBenchmark("rw/uncontended_shared/absl_mutex",
                           rw_uncontended_shared<AbslSharedMutex>));

  single(RegisterBenchmark("rw/uncontended_exclusive/conveyor_rw_lock",
                           rw_uncontended_exclusive<sync::RwLock>));
  single(RegisterBenchmark("rw/uncontended_exclusive/std_shared_mutex",
                           rw_uncontended_exclusive<std::shared_mutex>));
  single(RegisterBenchmark("rw/uncontended_exclusive/std_mutex",
                           rw_uncontended_exclusive<StdMutexAsShared>));
  single(RegisterBenchmark("rw/uncontended_exclusive/absl_mutex",
                           rw_uncontended_exclusive<AbslSharedMutex>));

  threaded(
      RegisterBenchmark("rw/reads_95_2_threads/conveyor_rw_lock", rw_mostly_reads<sync::RwLock>));
  threaded(RegisterBenchmark("rw/reads_95_2_threads/std_shared_mutex",
                             rw_mostly_reads<std::shared_mutex>));
  threaded(RegisterBenchmark("rw/reads_95_2_threads/std_mutex", rw_mostly_reads<StdMutexAsShared>));
  threaded(RegisterBenchmark("rw/reads_95_2_threads/absl_mutex", rw_mostly_reads<AbslSharedMutex>));
}

std::vector<Comparison> comparisons() {
  constexpr auto time = Figure::time;
  constexpr auto throughput = Figure::items_per_second;
  return {
      // The targets.
      {"GroupLock uncontended lock+unlock", "group/uncontended/conveyor_group_lock",
       "group/uncontended/std_shared_mutex", time, 1.0},
      {"RwLock 2 threads, 95% reads", "rw/reads_95_2_threads/conveyor_rw_lock",
       "rw/reads_95_2_threads/std_shared_mutex", throughput, 1.5},
      // For information.
      {"GroupLock uncontended lock+unlock", "group/uncontended/conveyor_group_lock",
       "group/uncontended/std_mutex", time, std::nullopt},
      {"GroupLock uncontended lock+unlock", "group/uncontended/conveyor_group_lock",
       "group/uncontended/absl_mutex", time, std::nullopt},
      {"GroupLock 2 threads, same group", "group/same_group_2_threads/conveyor_group_lock",
       "group/same_group_2_threads/std_shared_mutex", throughput, std::nullopt},
      {"GroupLock 2 threads, same group", "group/same_group_2_threads/conveyor_group_lock",
       "group/same_group_2_threads/std_mutex", throughput, std::nullopt},
      {"GroupLock 2 threads, same group", "group/same_group_2_threads/conveyor_group_lock",
       "group/same_group_2_threads/absl_mutex", throughput, std::nullopt},
      {"GroupLock 2 threads, 2 groups", "group/two_groups_2_threads/conveyor_group_lock",
       "group/two_groups_2_threads/std_shared_mutex", throughput, std::nullopt},
      {"GroupLock 2 threads, 2 groups", "group/two_groups_2_threads/conveyor_group_lock",
       "group/two_groups_2_threads/std_mutex", throughput, std::nullopt},
      {"GroupLock 2 threads, 2 groups", "group/two_groups_2_threads/conveyor_group_lock",
       "group/two_groups_2_threads/absl_mutex", throughput, std::nullopt},
      {"RwLock uncontended shared", "rw/uncontended_shared/conveyor_rw_lock",
       "rw/uncontended_shared/std_shared_mutex", time, std::nullopt},
      {"RwLock uncontended shared", "rw/uncontended_shared/conveyor_rw_lock",
       "rw/uncontended_shared/absl_mutex", time, std::nullopt},
      {"RwLock uncontended exclusive", "rw/uncontended_exclusive/conveyor_rw_lock",
       "rw/uncontended_exclusive/std_shared_mutex", time, std::nullopt},
      {"RwLock uncontended exclusive", "rw/uncontended_exclusive/conveyor_rw_lock",
       "rw/uncontended_exclusive/std_mutex", time, std::nullopt},
      {"RwLock uncontended exclusive", "rw/uncontended_exclusive/conveyor_rw_lock",
       "rw/uncontended_exclusive/absl_mutex", time, std::nullopt},
      {"RwLock 2 threads, 95% reads", "rw/reads_95_2_threads/conveyor_rw_lock",
       "rw/reads_95_2_threads/std_mutex", throughput, std::nullopt},
      {"RwLock 2 threads, 95% reads", "rw/reads_95_2_threads/conveyor_rw_lock",
       "rw/reads_95_2_threads/absl_mutex", throughput, std::nullopt},
  };
}

}  // namespace
}  // namespace conveyor::bench

int main(int argc, char** argv) {
  using namespace conveyor::bench;
  end_single_threaded_state();
  return run_benchmarks(argc, argv, register_benchmarks, comparisons);
}
