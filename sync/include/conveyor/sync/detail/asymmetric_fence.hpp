// Asymmetric fences: a store-load (Dekker) pairing whose fast side costs no fence instruction.
//
// A Dekker pairing needs a full barrier on each side between its store and its load. When one side
// runs on every operation (a queue's push) and the other only rarely (a consumer about to sleep),
// the barrier can be moved entirely to the rare side: the fast side only stops the compiler from
// reordering (`asymmetric_fence_light`), and the rare side asks the kernel to run a full barrier on
// every CPU that is running a thread of this process (`asymmetric_fence_heavy`, Linux's
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)). A fast-side thread is then either past the
// point where the kernel interrupted it, so its earlier stores are visible when the heavy fence
// returns, or before it, so its later loads see what the rare side stored before the heavy fence.
//
// Where membarrier is not available (another OS, an old kernel, a sandbox that forbids it), both
// functions are a seq_cst fence, which gives the same guarantee at the cost of a full barrier on
// the fast side.
//
// Contract: a pairing is correct when the fast side does `store; asymmetric_fence_light(); load`
// and the rare side does `store; asymmetric_fence_heavy(); load`, on atomics (relaxed is enough
// for the pairing itself; use acquire/release for whatever data the stores publish).
// ThreadSanitizer does not model these fences; no non-atomic data may depend on them alone.
#pragma once

#include <atomic>

namespace conveyor::sync::detail {

// A full barrier. Under ThreadSanitizer, which does not model fences (and g++ refuses them there),
// a seq_cst read-modify-write, which is a full barrier on the hardware.
inline void full_fence() noexcept {
#if defined(__SANITIZE_THREAD__)
  static std::atomic<int> word{0};
  word.fetch_add(0, std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// Registers the process for expedited membarrier, once; true if the heavy fence can use it.
bool register_membarrier() noexcept;

// Decided once, while the program starts, so that the light fence costs no guard check. Every
// fence before that moment (a static initialiser of another file using a queue) takes the
// full-fence path on both sides, which is correct; threads of such initialisers must be gone by
// main().
inline const bool membarrier_registered = register_membarrier();

inline bool membarrier_available() noexcept {
  return membarrier_registered;
}

inline void asymmetric_fence_light() noexcept {
  if (membarrier_registered) [[likely]] {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    full_fence();
  }
}

void asymmetric_fence_heavy() noexcept;

}  // namespace conveyor::sync::detail
