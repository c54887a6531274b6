// parse_filter: the filter, or the bad expression with a caret.
#include "filter_error.hpp"

#include <cstdio>

namespace conveyor::log_ingest {

namespace {

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

}  // namespace

std::optional<stages::Filter> parse_filter(const char* option,
                                           const std::vector<std::string>& texts) {
  try {
    return stages::Filter::parse_all(texts);
  } catch (const stages::FilterError& error) {
    print_filter_error(option, texts, error);
  }
  return std::nullopt;
}

}  // namespace conveyor::log_ingest
