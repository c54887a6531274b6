// locktest: the seed-004 LockTest experiment. Runs every group lock variant through the paper's
// harness, prints the per-thread lines and a summary table, and can chart the waits as SVG.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "compound_lock.hpp"
#include "harness.hpp"
#include "svg_chart.hpp"

namespace {

using namespace conveyor::locktest;

const char* soundness_name(Soundness soundness) {
  switch (soundness) {
    case Soundness::sound:
      return "sound";
    case Soundness::racy:
      return "racy";
    case Soundness::unsound:
      return "unsound";
  }
  return "?";
}

void print_threads(const RunResult& run) {
  for (const auto& thread : run.threads) {
    if (thread.goofups > 0) {
      std::printf("goofup!!! Threads of more than one group in the lock %zu times\n",
                  thread.goofups);
    }
    std::printf(
        "Avg. turnaround for thread of grp %zu : %8.2f ms; avg wait: %.3f ms, min %.3f, max %.3f, "
        "aces: %zu\n",
        thread.group, thread.turnaround_ms, thread.wait_average_ms(), thread.wait_min_ms,
        thread.wait_max_ms, thread.aces);
  }
  std::printf("Total elapsed time: %8.0f ms\n\n", run.elapsed_ms);
}

void print_summary(const std::vector<RunResult>& runs, const std::vector<Variant>& variants,
                   double time_scale) {
  std::printf("Summary (waits in ms as measured; 'x1' columns divide by --time-scale %.3g)\n",
              time_scale);
  std::printf("%-22s %-7s %5s %9s %9s %9s %9s %9s %6s %7s %5s %9s\n", "variant", "kind", "group",
              "avg wait", "avg x1", "min", "max", "max x1", "aces", "goofups", "peak", "elapsed");
  for (std::size_t index = 0; index < runs.size(); ++index) {
    const auto& run = runs[index];
    for (std::size_t group = 0; group < run.groups.size(); ++group) {
      const auto& summary = run.groups[group];
      std::printf("%-22s %-7s %5zu %9.3f %9.1f %9.3f %9.3f %9.1f %6zu %7zu %5zu %9.0f\n",
                  group == 0 ? run.variant.c_str() : "",
                  group == 0 ? soundness_name(variants[index].soundness) : "", group,
                  summary.wait_average_ms, summary.wait_average_ms / time_scale,
                  summary.wait_min_ms, summary.wait_max_ms, summary.wait_max_ms / time_scale,
                  summary.aces, summary.goofups, summary.peak_holders,
                  group == 0 ? run.elapsed_ms : 0.0);
    }
  }
}

bool write_chart(const std::string& path, const std::vector<RunResult>& runs, double time_scale,
                 std::size_t groups) {
  BarChart chart;
  chart.title = "LockTest: average wait per loop by variant and group";
  chart.value_label = "ms per loop (scaled to 0-100 ms sleeps)";
  for (std::size_t group = 0; group < groups; ++group) {
    chart.series.push_back("group " + std::to_string(group));
  }
  for (const auto& run : runs) {
    chart.categories.push_back(run.variant);
    std::vector<double> row;
    for (const auto& summary : run.groups)
      row.push_back(summary.wait_average_ms / time_scale);
    chart.values.push_back(std::move(row));
  }
  std::ofstream out(path);
  out << render_svg(chart);
  return static_cast<bool>(out.flush());
}

}  // namespace

int run_locktest(int argc, char** argv) {
  CLI::App app{"The seed-004 LockTest experiment: group locks under the paper's harness"};
  HarnessOptions options;
  std::vector<std::string> selected;
  std::string svg_path;
  bool list = false;
  bool check = false;
  long long max_sleep_ms = 100;
  app.add_option("--groups", options.groups, "groups of threads (GROUPS)")
      ->check(CLI::Range(1, 64));
  app.add_option("--threads", options.threads_per_group, "threads per group (NUMBEROFTHREADS)")
      ->check(CLI::Range(1, 256));
  app.add_option("--loops", options.loops, "loops per thread (TESTLOOPS)");
  app.add_option("--max-sleep-ms", max_sleep_ms, "longest sleep inside and after the lock")
      ->check(CLI::Range(0, 10'000));
  app.add_option("--time-scale", options.time_scale, "multiplies both sleeps (0.1: 0-10 ms)")
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--variant", selected, "run only this variant (repeatable); default all");
  app.add_option("--seed", options.seed, "seed of the per-thread random sleeps");
  app.add_flag("--same-sleeps", options.same_sleeps,
               "every thread sleeps the same random sequence, as the paper's rand() did");
  app.add_option("--svg", svg_path, "write the bar chart of waits to this SVG file");
  app.add_flag("--list", list, "list the variants and exit");
  app.add_flag("--check", check, "exit with status 1 if a sound variant shows a goofup");
  CLI11_PARSE(app, argc, argv);
  options.max_sleep = std::chrono::milliseconds(max_sleep_ms);

  const auto variants = all_variants();
  if (list) {
    for (const auto& variant : variants) {
      std::printf("%-22s %-7s %s\n", variant.name.c_str(), soundness_name(variant.soundness),
                  variant.description.c_str());
    }
    return 0;
  }
  for (const auto& name : selected) {
    bool known = false;
    for (const auto& variant : variants)
      known = known || variant.name == name;
    if (!known) {
      std::fprintf(stderr, "locktest: unknown variant '%s' (see --list)\n", name.c_str());
      return 2;
    }
  }

  std::printf("LockTest: %zu groups x %zu threads x %zu loops, sleeps 0-%.3f ms, seed %llu\n\n",
              options.groups, options.threads_per_group, options.loops,
              static_cast<double>(max_sleep_ms) * options.time_scale,
              static_cast<unsigned long long>(options.seed));
  std::vector<RunResult> runs;
  std::vector<Variant> ran;
  bool sound_goofed = false;
  for (const auto& variant : variants) {
    if (!selected.empty() &&
        std::find(selected.begin(), selected.end(), variant.name) == selected.end()) {
      continue;
    }
    auto lock = variant.make(options.groups);
    if (!lock) {
      std::printf("%s: skipped, it does not support %zu groups\n\n", variant.name.c_str(),
                  options.groups);
      continue;
    }
    std::printf("%s (%s)\n", variant.name.c_str(), variant.description.c_str());
    std::fflush(stdout);
    runs.push_back(run_experiment(variant.name, *lock, options));
    ran.push_back(variant);
    print_threads(runs.back());
    std::fflush(stdout);
    if (variant.soundness == Soundness::sound && runs.back().goofups() > 0) sound_goofed = true;
  }
  print_summary(runs, ran, options.time_scale > 0 ? options.time_scale : 1.0);

  if (!svg_path.empty()) {
    if (!write_chart(svg_path, runs, options.time_scale > 0 ? options.time_scale : 1.0,
                     options.groups)) {
      std::fprintf(stderr, "locktest: cannot write %s\n", svg_path.c_str());
      return 1;
    }
    std::printf("\nchart written to %s\n", svg_path.c_str());
  }
  if (check && sound_goofed) {
    std::fprintf(stderr, "locktest: a sound variant let two groups in\n");
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run_locktest(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "locktest: %s\n", error.what());
    return 1;
  }
}
