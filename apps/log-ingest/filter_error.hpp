// How log-ingest reports a filter expression that does not parse: the expression, and a caret
// under where it went wrong.
#pragma once

#include <string>
#include <vector>

#include "conveyor/stages/filter.hpp"

namespace conveyor::log_ingest {

// Prints `error`, which parse_all(`texts`) threw, to stderr, naming the option (`--where`,
// `where`) and showing the first expression of `texts` that does not parse on its own.
void print_filter_error(const char* option, const std::vector<std::string>& texts,
                        const stages::FilterError& error);

}  // namespace conveyor::log_ingest
