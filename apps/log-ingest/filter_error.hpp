// How log-ingest reads its filter expressions (`run --where`, serve's `pipeline.where`) and
// reports one that does not parse: the expression, and a caret under where it went wrong.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "conveyor/stages/filter.hpp"

namespace conveyor::log_ingest {

// The filter of which all of `texts` must hold; nullopt after printing to stderr which expression
// does not parse, naming the option (`--where`, `where`) it came from.
std::optional<stages::Filter> parse_filter(const char* option,
                                           const std::vector<std::string>& texts);

}  // namespace conveyor::log_ingest
