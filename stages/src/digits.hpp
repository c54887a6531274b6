// Fixed-width decimal fields of timestamps, shared by the parsers (private to conveyor::stages).
#pragma once

#include <cstddef>
#include <string_view>

namespace conveyor::stages::detail {

// The `count` decimal digits of `text` from `at` into `value`; false if any is not a digit or the
// text is too short.
inline bool digits(std::string_view text, std::size_t at, std::size_t count, int& value) noexcept {
  if (at + count > text.size()) return false;
  value = 0;
  for (std::size_t i = at; i < at + count; ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

}  // namespace conveyor::stages::detail
