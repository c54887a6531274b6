// print_filter_error: the bad expression, with a caret.
#include "filter_error.hpp"

#include <cstdio>

namespace conveyor::log_ingest {

void print_filter_error(const char* option, const std::vector<std::string>& texts,
                        const stages::FilterError& error) {
  for (const std::string& text : texts) {
    try {
      (void)stages::Filter::parse(text);
    } catch (const stages::FilterError& own) {
      std::fprintf(stderr, "log-ingest: bad %s expression: %s\n  %s\n  %*s^\n", option, own.what(),
                   text.c_str(), static_cast<int>(own.position()), "");
      return;
    }
  }
  std::fprintf(stderr, "log-ingest: bad %s expression: %s\n", option, error.what());
}

}  // namespace conveyor::log_ingest
