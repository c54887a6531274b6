#include "harness.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <thread>

#include "event.hpp"

namespace conveyor::locktest {
namespace {

using Clock = std::chrono::steady_clock;

double milliseconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// The harness's shared state: iSanity[] and the start gate.
struct Sanity {
  explicit Sanity(std::size_t groups) : holders(std::make_unique<std::atomic<long>[]>(groups)) {}
  std::unique_ptr<std::atomic<long>[]> holders;
  Event start{EventReset::manual, false};  // hResumeEvent
};

bool another_group_inside(const Sanity& sanity, std::size_t groups, std::size_t own) {
  for (std::size_t group = 0; group < groups; ++group) {
    // relaxed: the counts are what is being checked, not a means of synchronisation; a lock that
    // works orders them by itself.
    if (group != own && sanity.holders[group].load(std::memory_order_relaxed) > 0) return true;
  }
  return false;
}

ThreadResult run_thread(CompoundLock& lock, Sanity& sanity, const HarnessOptions& options,
                        std::size_t group, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  const double max_sleep_us =
      std::max(0.0, static_cast<double>(options.max_sleep.count()) * options.time_scale);
  std::uniform_real_distribution<double> sleep_us(0.0, max_sleep_us);
  const double ace_limit_ms = max_sleep_us / 1000.0 / 100.0;
  auto random_sleep = [&] {
    std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(sleep_us(random)));
  };

  ThreadResult result;
  result.group = group;
  result.loops = options.loops;
  result.wait_min_ms = 1e300;
  sanity.start.wait();
  const auto started = Clock::now();
  for (std::size_t loop = 0; loop < options.loops; ++loop) {
    const auto before = Clock::now();
    lock.claim(group);
    const double waited = milliseconds_between(before, Clock::now());
    // relaxed: see another_group_inside.
    const long holders = sanity.holders[group].fetch_add(1, std::memory_order_relaxed) + 1;
    result.group_peak = std::max(result.group_peak, static_cast<std::size_t>(holders));
    bool goofed = another_group_inside(sanity, options.groups, group);
    random_sleep();
    goofed = another_group_inside(sanity, options.groups, group) || goofed;
    if (goofed) ++result.goofups;
    if (waited < ace_limit_ms) ++result.aces;
    result.wait_sum_ms += waited;
    result.wait_min_ms = std::min(result.wait_min_ms, waited);
    result.wait_max_ms = std::max(result.wait_max_ms, waited);
    sanity.holders[group].fetch_sub(1, std::memory_order_relaxed);
    lock.release(group);
    random_sleep();
  }
  result.turnaround_ms = milliseconds_between(started, Clock::now()) /
                         static_cast<double>(std::max<std::size_t>(1, options.loops));
  if (options.loops == 0) result.wait_min_ms = 0;
  return result;
}

}  // namespace

std::size_t RunResult::goofups() const {
  std::size_t total = 0;
  for (const auto& thread : threads)
    total += thread.goofups;
  return total;
}

RunResult run_experiment(const std::string& name, CompoundLock& lock,
                         const HarnessOptions& options) {
  Sanity sanity(options.groups);
  const std::size_t thread_count = options.groups * options.threads_per_group;
  std::vector<ThreadResult> results(thread_count);
  std::vector<std::thread> threads;
  threads.reserve(thread_count);
  for (std::size_t index = 0; index < thread_count; ++index) {
    const std::size_t group = index % options.groups;
    threads.emplace_back([&, index, group] {
      results[index] =
          run_thread(lock, sanity, options, group,
                     options.same_sleeps ? options.seed : options.seed * 1000003u + index);
    });
  }
  const auto started = Clock::now();
  sanity.start.set();
  for (auto& thread : threads)
    thread.join();

  RunResult run;
  run.variant = name;
  run.elapsed_ms = milliseconds_between(started, Clock::now());
  run.groups.resize(options.groups);
  std::vector<std::size_t> members(options.groups, 0);
  for (auto& group : run.groups)
    group.wait_min_ms = 1e300;
  for (const auto& thread : results) {
    auto& group = run.groups[thread.group];
    ++members[thread.group];
    group.wait_average_ms += thread.wait_average_ms();
    group.turnaround_ms += thread.turnaround_ms;
    group.wait_min_ms = std::min(group.wait_min_ms, thread.wait_min_ms);
    group.wait_max_ms = std::max(group.wait_max_ms, thread.wait_max_ms);
    group.aces += thread.aces;
    group.goofups += thread.goofups;
    group.peak_holders = std::max(group.peak_holders, thread.group_peak);
  }
  for (std::size_t index = 0; index < options.groups; ++index) {
    auto& group = run.groups[index];
    const auto count = static_cast<double>(std::max<std::size_t>(1, members[index]));
    group.wait_average_ms /= count;
    group.turnaround_ms /= count;
    if (members[index] == 0) group.wait_min_ms = 0;
  }
  run.threads = std::move(results);
  return run;
}

}  // namespace conveyor::locktest
