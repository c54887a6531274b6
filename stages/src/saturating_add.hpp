// saturating_add: a total that stops at the largest value instead of wrapping round (a sum of
// byte counts taken from the input, which a hostile line can make as large as it likes).
#pragma once

#include <cstdint>
#include <limits>

namespace conveyor::stages::detail {

inline void saturating_add(std::uint64_t& total, std::uint64_t amount) noexcept {
  if (__builtin_add_overflow(total, amount, &total))
    total = std::numeric_limits<std::uint64_t>::max();
}

}  // namespace conveyor::stages::detail
