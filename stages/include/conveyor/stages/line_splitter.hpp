// Zero-copy line splitting: each line is a view into the chunk's text, without its "\n" or
// "\r\n". The caller keeps the text alive for as long as it uses the views.
//
//   for_each_line(chunk.text, [&](std::string_view line, std::uint64_t index) { ... });
//
// A final line without a newline is a line too; an empty text has no lines. A line (as given)
// of nothing but spaces and tabs is blank: the parse stage skips it, and counts it nowhere else.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace conveyor::stages {

[[nodiscard]] inline bool blank_line(std::string_view line) noexcept {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

template <class F>
void for_each_line(std::string_view text, F&& f) {
  std::uint64_t index = 0;
  const char* at = text.data();
  const char* const end = text.data() + text.size();
  while (at < end) {
    const auto* newline =
        static_cast<const char*>(std::memchr(at, '\n', static_cast<std::size_t>(end - at)));
    const char* line_end = newline != nullptr ? newline : end;
    std::size_t length = static_cast<std::size_t>(line_end - at);
    if (length > 0 && at[length - 1] == '\r') --length;
    f(std::string_view(at, length), index++);
    at = newline != nullptr ? newline + 1 : end;
  }
}

}  // namespace conveyor::stages
