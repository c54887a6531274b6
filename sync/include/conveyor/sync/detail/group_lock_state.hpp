// The packed 64-bit state word of conveyor::sync::GroupLock; not a public header.
//
// One word holds everything the fast paths read and write, so that entering is one
// compare-exchange and leaving is one fetch_sub:
//
//   bits  0..23  holders: threads of `owner` inside the lock
//   bit  24      contended: some thread waits; the fast entry path is closed and every exit that
//                sees it takes the slow path (set and cleared only under the internal guard)
//   bits 32..47  owner: the group that holds the lock, or held it last when holders == 0
//   bits 48..63  entries of `owner` not yet folded into its statistics counter
//
// Holders sit in the low bits so that an exit is a plain subtraction of 1.
#pragma once

#include <cstddef>
#include <cstdint>

namespace conveyor::sync::detail {

struct GroupLockState {
  static constexpr std::uint64_t holder_mask = (std::uint64_t{1} << 24) - 1;
  static constexpr std::uint64_t contended_bit = std::uint64_t{1} << 24;
  static constexpr unsigned owner_shift = 32;
  static constexpr std::uint64_t owner_mask = 0xFFFF;
  static constexpr unsigned entries_shift = 48;
  static constexpr std::uint64_t entries_mask = 0xFFFF;

  static constexpr std::uint32_t max_holders = static_cast<std::uint32_t>(holder_mask);
  static constexpr std::size_t max_groups = owner_mask + 1;

  // What one fast entry adds: a holder and an entry.
  static constexpr std::uint64_t one_entry = 1 | (std::uint64_t{1} << entries_shift);

  static constexpr std::uint32_t holders(std::uint64_t word) noexcept {
    return static_cast<std::uint32_t>(word & holder_mask);
  }
  static constexpr bool contended(std::uint64_t word) noexcept {
    return (word & contended_bit) != 0;
  }
  static constexpr std::size_t owner(std::uint64_t word) noexcept {
    return static_cast<std::size_t>((word >> owner_shift) & owner_mask);
  }
  static constexpr std::uint64_t entries(std::uint64_t word) noexcept {
    return (word >> entries_shift) & entries_mask;
  }
  static constexpr std::uint64_t make(std::size_t owner_group, std::uint32_t holder_count,
                                      std::uint64_t entry_count, bool is_contended) noexcept {
    return (static_cast<std::uint64_t>(owner_group) << owner_shift) |
           (entry_count << entries_shift) | holder_count | (is_contended ? contended_bit : 0);
  }
};

}  // namespace conveyor::sync::detail
