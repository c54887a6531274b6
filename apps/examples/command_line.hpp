// What every example's main() shares: CLI11 parsing with the conventional exit statuses, and a
// guard that turns an escaping exception into a message instead of std::terminate.
//
// Exit statuses: 0 after --help, 2 for a bad command line (CLI11 says why), 1 for an error.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <optional>

namespace conveyor::examples {

// Parses argv into `app`. Returns the status to exit with now (0 after --help, 2 after a bad
// command line), or nullopt to go on.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  return std::nullopt;
}

// Runs `body` (which returns the exit status) and reports any exception it lets escape.
template <class Body>
int guarded(const char* program, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", program, error.what());
  } catch (...) {
    std::fprintf(stderr, "%s: unknown error\n", program);
  }
  return 1;
}

}  // namespace conveyor::examples
