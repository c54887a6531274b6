// The state word of conveyor::sync::Mailbox: which of three states the slot is in, who owns it,
// and whether it was aborted. Not a public header.
//
// The low two bits say what the slot holds and therefore who owns it, as in seed 002:
//   empty   - owned by the producer; only it may change empty -> item or empty -> done.
//   item    - owned by the consumer; only it may change item -> taking -> empty.
//   taking  - the consumer has claimed the item and is moving it out; still the consumer's.
//   done    - the end-of-stream sentinel; final, owned by nobody.
// The aborted bit is set once, by abort(), on top of any of them and never cleared. Whoever owns
// the storage when the bit appears destroys a held item, so the item is never touched by two
// threads at once.
#pragma once

#include <cstdint>

namespace conveyor::sync::detail {

struct MailboxState {
  static constexpr std::uint32_t empty = 0;
  static constexpr std::uint32_t item = 1;
  static constexpr std::uint32_t taking = 2;
  static constexpr std::uint32_t done = 3;
  static constexpr std::uint32_t contents_mask = 3;
  static constexpr std::uint32_t aborted = 4;

  static constexpr std::uint32_t contents(std::uint32_t state) noexcept {
    return state & contents_mask;
  }
  static constexpr bool is_aborted(std::uint32_t state) noexcept { return (state & aborted) != 0; }
};

}  // namespace conveyor::sync::detail
