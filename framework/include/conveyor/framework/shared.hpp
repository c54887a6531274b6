// Shared<T>: a resource that several stages use, guarded by a GroupLock (seed 004).
//
// Each stage uses the resource as a member of a group: any number of threads of one group are
// inside at once, never two groups. Many `update` workers add into a summary together while a
// `snapshot` stage that reads it waits for a moment when no update is inside, and the other way
// round.
//
//   conveyor::Shared<Totals> totals("totals", {"update", "snapshot"});
//   totals.access(0, [&](Totals& t) { t.add(record); });     // from the parallel stage
//   totals.access(1, [&](Totals& t) { write(t); });          // from the reporting stage
//   pipeline.track(totals);                                  // its statistics in stats()
//
// Members of one group are inside together, so what they do to T must be safe among themselves
// (atomic counters, per-key slots, or state of their own), as with a shared_mutex's readers.
//
// It counts per group the accesses that entered at once ("aces", the paper's word), the ones that
// waited, and how long those waited.
//
// Contract: any thread may call `access` and `stats`, concurrently. `group` is in [0, groups());
// anything else is a contract violation. Not copyable, not movable. Inside a pipeline on a oneTBB
// executor, do not emit or wait on a channel while inside `access`: a suspended holder would keep
// the other group out for as long as it is suspended.
//
// Memory ordering: the GroupLock orders what one holder did before what the next holder of any
// group does (see group_lock.hpp). The statistics are relaxed counters.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "conveyor/framework/stats.hpp"
#include "conveyor/sync/group_lock.hpp"

namespace conveyor {

namespace detail {
// A number no other resource object of this process has had (ResourceStats::id), from 1.
[[nodiscard]] std::uint64_t next_resource_id() noexcept;
}  // namespace detail

template <class T>
class Shared {
 public:
  // `groups`: the names of the groups, in index order (at least one). The resource is
  // value-initialised, or made from `value`, or from `arguments` with caps and a policy for the
  // lock in `lock` (its `groups` field is set from `groups`).
  Shared(std::string name, std::vector<std::string> groups)
      : Shared(std::move(name), std::move(groups), sync::GroupLockOptions{}) {}

  Shared(std::string name, std::vector<std::string> groups,
         T value) requires std::move_constructible<T>
      : Shared(std::move(name), std::move(groups), sync::GroupLockOptions{}, std::move(value)) {}

  template <class... Arguments>
  Shared(std::string name, std::vector<std::string> groups, sync::GroupLockOptions lock,
         Arguments&&... arguments)
      : name_(std::move(name)),
        group_names_(std::move(groups)),
        lock_(with_groups(std::move(lock), group_names_.size())),
        counters_(std::make_unique<Counters[]>(group_names_.size())),
        value_(std::forward<Arguments>(arguments)...) {}

  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;

  // Runs `action(T&)` inside the resource as a member of `group`, and returns what it returns.
  template <class Action>
  decltype(auto) access(std::size_t group, Action&& action) {
    enter(group);
    struct Leave {
      Shared& shared;
      std::size_t group;
      ~Leave() { shared.lock_.unlock(group); }
    } leave{*this, group};
    return std::forward<Action>(action)(value_);
  }

  // The index of the group called `name`; std::out_of_range if there is none.
  [[nodiscard]] std::size_t group(std::string_view group_name) const {
    for (std::size_t i = 0; i < group_names_.size(); ++i) {
      if (group_names_[i] == group_name) return i;
    }
    throw std::out_of_range("Shared '" + name_ + "': no group called '" + std::string(group_name) +
                            "'");
  }

  [[nodiscard]] std::size_t groups() const noexcept { return group_names_.size(); }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

  [[nodiscard]] ResourceStats stats() const {
    ResourceStats result;
    result.name = name_;
    result.id = id_;
    for (std::size_t g = 0; g < group_names_.size(); ++g) {
      const Counters& counters = counters_[g];
      GroupStats group_stats;
      group_stats.name = group_names_[g];
      group_stats.aces = counters.aces.load(std::memory_order_relaxed);
      for (std::size_t b = 0; b < counters.wait_buckets.size(); ++b) {
        const std::uint64_t count = counters.wait_buckets[b].load(std::memory_order_relaxed);
        group_stats.wait.counts[b] = count;
        group_stats.wait.count += count;
      }
      group_stats.waits = group_stats.wait.count;
      group_stats.entries = group_stats.aces + group_stats.waits;
      group_stats.wait.sum_seconds =
          static_cast<double>(counters.wait_nanoseconds.load(std::memory_order_relaxed)) * 1e-9;
      result.groups.push_back(std::move(group_stats));
    }
    return result;
  }

 private:
  struct alignas(64) Counters {
    std::atomic<std::uint64_t> aces{0};
    std::array<std::atomic<std::uint64_t>, item_duration_buckets.size() + 1> wait_buckets{};
    std::atomic<std::uint64_t> wait_nanoseconds{0};
  };

  static sync::GroupLockOptions with_groups(sync::GroupLockOptions options, std::size_t groups) {
    if (groups == 0) throw std::invalid_argument("Shared: at least one group");
    options.groups = groups;
    return options;
  }

  void enter(std::size_t group) {
    Counters& counters = counters_[group < group_names_.size() ? group : 0];
    if (lock_.try_lock(group)) {
      counters.aces.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const auto started = std::chrono::steady_clock::now();
    lock_.lock(group);
    const auto waited = std::chrono::steady_clock::now() - started;
    const double seconds = std::chrono::duration<double>(waited).count();
    std::size_t bucket = 0;
    while (bucket < item_duration_buckets.size() && seconds > item_duration_buckets[bucket]) {
      ++bucket;
    }
    counters.wait_buckets[bucket].fetch_add(1, std::memory_order_relaxed);
    counters.wait_nanoseconds.fetch_add(
        static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count()),
        std::memory_order_relaxed);
  }

  const std::string name_;
  const std::uint64_t id_ = detail::next_resource_id();
  const std::vector<std::string> group_names_;
  sync::GroupLock lock_;
  std::unique_ptr<Counters[]> counters_;
  T value_;
};

}  // namespace conveyor
