// A hint to the CPU that the calling thread is spinning, for spin-then-block waits.
#pragma once

namespace conveyor::sync::detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace conveyor::sync::detail
