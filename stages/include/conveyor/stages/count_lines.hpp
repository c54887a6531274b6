// count_newlines: how many '\n' bytes a text holds, sixteen bytes at a time where the CPU has SSE2.
// Sources and inputs count the lines of every chunk they read, so this runs over every byte.
//
// Contract: any text, any alignment; the same result as std::count(text, '\n').
#pragma once

#include <cstddef>
#include <string_view>

namespace conveyor::stages {

[[nodiscard]] std::size_t count_newlines(std::string_view text) noexcept;

}  // namespace conveyor::stages
