// The main of a benchmark binary that compares conveyor's primitives with their peers: Google
// Benchmark's console table, then the ratios table of RatioReporter (ratio_reporter.hpp).
//
// Extra options, read before Google Benchmark's own:
//   --ratios_json=<file>   also write the ratio rows as JSON.
// Without --benchmark_min_time, each benchmark runs for at least 0.4 s.
#pragma once

#include <unistd.h>

#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ratio_reporter.hpp"

namespace conveyor::bench {

// Colour as Google Benchmark would choose it for its own console reporter.
inline benchmark::ConsoleReporter::OutputOptions console_options(
    const std::vector<char*>& arguments) {
  bool colour = isatty(STDOUT_FILENO) != 0;
  for (const char* argument : arguments) {
    const std::string_view text = argument;
    constexpr std::string_view flag = "--benchmark_color=";
    if (!text.starts_with(flag)) continue;
    const std::string_view value = text.substr(flag.size());
    if (value == "false" || value == "no" || value == "0") colour = false;
    if (value == "true" || value == "yes" || value == "1") colour = true;
  }
  return colour ? benchmark::ConsoleReporter::OO_Defaults : benchmark::ConsoleReporter::OO_Tabular;
}

// Until a process first starts a thread, glibc's std::mutex takes a single-threaded shortcut
// without an atomic instruction, so uncontended lock peers would be measured in a state that no
// program which needs a lock is in. One thread, joined at once, ends that state for good.
inline void end_single_threaded_state() {
  std::jthread([] {}).join();
}

// Registers the benchmarks (`register_benchmarks()`), runs them and prints the ratios of
// `comparisons()` (a std::vector<Comparison>). Returns the exit status for main.
template <class Register, class Comparisons>
int run_benchmarks(int argc, char** argv, Register register_benchmarks, Comparisons comparisons) {
  constexpr std::string_view json_flag = "--ratios_json=";
  std::string json_path;
  bool min_time_given = false;
  std::vector<char*> arguments;
  for (int i = 0; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument.starts_with(json_flag)) {
      json_path = argument.substr(json_flag.size());
      continue;
    }
    if (argument.starts_with("--benchmark_min_time")) min_time_given = true;
    arguments.push_back(argv[i]);
  }
  std::string default_min_time = "--benchmark_min_time=0.4";
  if (!min_time_given) arguments.push_back(default_min_time.data());
  const auto options = console_options(arguments);
  int count = static_cast<int>(arguments.size());
  arguments.push_back(nullptr);

  benchmark::Initialize(&count, arguments.data());
  if (benchmark::ReportUnrecognizedArguments(count, arguments.data())) return 1;
  register_benchmarks();
  RatioReporter reporter(options, comparisons(), json_path);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

}  // namespace conveyor::bench
