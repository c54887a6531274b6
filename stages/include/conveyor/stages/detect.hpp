// Format detection: which parser accepts most of the first lines of an input.
#pragma once

#include <string_view>

#include "conveyor/stages/record.hpp"

namespace conveyor::stages {

// Tries each format on up to `sample_lines` non-blank lines from the start of `text` and returns
// the one that parses most of them (combined before common, when both parse the same number).
// `Format::combined` when none parses any.
Format detect_format(std::string_view text, std::size_t sample_lines = 32);

}  // namespace conveyor::stages
