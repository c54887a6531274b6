// The paper's group locks ("Compound Win32 Synchronization Objects", LOCKS.CPP), one class each,
// following its code line by line with modern primitives:
//   CRITICAL_SECTION -> std::mutex, event objects -> Event, WaitForMultipleObjects -> wait_any,
//   CreateSemaphore -> conveyor::sync::Semaphore, InterlockedIncrement -> std::atomic fetch_add.
// They are references for the experiment, with the paper's flaws kept: see docs/locktest.md.
#pragma once

#include <cstddef>
#include <memory>

#include "compound_lock.hpp"

namespace conveyor::locktest {

enum class WfmoRelease {
  original,   // decrement, then flip <local, global>: the race the author found
  revised,    // the paper's fix: reset local first, then decrement (still unsafe, see the model)
  corrected,  // the original Release and Claim, each inside a per-group critical section
};

std::unique_ptr<CompoundLock> make_unsafe_lock();
std::unique_ptr<CompoundLock> make_mutex_lock();
std::unique_ptr<CompoundLock> make_critical_section_lock(std::size_t groups);
std::unique_ptr<CompoundLock> make_events_lock(std::size_t groups);
std::unique_ptr<CompoundLock> make_semaphore_lock(std::size_t groups, int holders_per_group);
std::unique_ptr<CompoundLock> make_wfmo_lock(std::size_t groups, WfmoRelease release);
// Group 0 writes, every other group reads (the paper's WRITER 0, READER 1).
std::unique_ptr<CompoundLock> make_reader_writer_lock();
// nullptr unless groups == 2: the paper hard-codes its conditional critical region to two groups.
std::unique_ptr<CompoundLock> make_conditional_region_lock(std::size_t groups);

}  // namespace conveyor::locktest
