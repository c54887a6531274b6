// word_frequencies: a pipeline that shows most of the framework on one page.
//
//   source        the lines of a text (a file, or a built-in one), numbered in order
//   split         parallel, a flat-map: one line in, its words out
//   count         parallel, keyed by word, so each worker counts its own words without a lock;
//                 its flush hook emits the worker's totals at the end of the stream
//   report        serial sink: merges the totals and prints the most frequent words
//
//   word_frequencies [FILE] [--workers N] [--top N] [--executor threads|tbb]
//
// It also prints what each stage did (conveyor::PipelineStats).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "command_line.hpp"
#include "conveyor/framework.hpp"

namespace {

constexpr std::string_view builtin_text = R"(It was the best of times, it was the worst of times,
it was the age of wisdom, it was the age of foolishness,
it was the epoch of belief, it was the epoch of incredulity,
it was the season of Light, it was the season of Darkness,
it was the spring of hope, it was the winter of despair,
we had everything before us, we had nothing before us,
we were all going direct to Heaven, we were all going direct the other way)";

using Counts = std::vector<std::pair<std::string, std::uint64_t>>;

// Keyed by word: every occurrence of a word reaches the same worker.
class Counter {
 public:
  std::optional<Counts> process(std::string word) {
    ++counts_[std::move(word)];
    return std::nullopt;  // nothing per word; the totals go out at the end
  }
  void flush(conveyor::Emit<Counts>& emit) { emit(Counts(counts_.begin(), counts_.end())); }

 private:
  std::unordered_map<std::string, std::uint64_t> counts_;
};

int run(const std::string& path, std::size_t workers, std::size_t top, bool tbb) {
  std::ifstream file;
  std::istringstream builtin{std::string(builtin_text)};
  std::istream* input = &builtin;
  if (!path.empty()) {
    file.open(path);
    if (!file) {
      std::fprintf(stderr, "word_frequencies: cannot open %s\n", path.c_str());
      return 1;
    }
    input = &file;
  }

  conveyor::Pipeline pipeline(
      {.name = "words",
       .executor = tbb ? conveyor::Executor::tbb(2) : conveyor::Executor::threads()});
  std::map<std::string, std::uint64_t> totals;
  pipeline.source(
      [input]() -> std::optional<std::string> {
        std::string line;
        if (!std::getline(*input, line)) return std::nullopt;
        return line;
      },
      {.name = "lines"}) |
      conveyor::stage(
          [](const std::string& line, conveyor::Emit<std::string>& emit) {
            std::string word;
            for (char c : line) {
              if (std::isalpha(static_cast<unsigned char>(c)) != 0) {
                word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
              } else if (!word.empty()) {
                emit(std::exchange(word, {}));
              }
            }
            if (!word.empty()) emit(std::move(word));
          },
          {.name = "split", .mode = conveyor::Mode::parallel, .workers = workers, .batch = 32}) |
      conveyor::stage(Counter{}, {.name = "count",
                                  .mode = conveyor::Mode::parallel,
                                  .workers = workers,
                                  .dispatch = conveyor::Dispatch::by_key<std::string>(
                                      [](const std::string& word) { return word; }),
                                  .batch = 32}) |
      conveyor::sink(
          [&totals](const Counts& counts) {
            for (const auto& [word, count] : counts)
              totals[word] += count;
          },
          {.name = "report"});
  pipeline.run();

  std::vector<std::pair<std::string, std::uint64_t>> ranked(totals.begin(), totals.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::printf("%zu distinct words; the %zu most frequent:\n", ranked.size(),
              std::min(top, ranked.size()));
  for (std::size_t i = 0; i < std::min(top, ranked.size()); ++i) {
    std::printf("  %-16s %llu\n", ranked[i].first.c_str(),
                static_cast<unsigned long long>(ranked[i].second));
  }

  const conveyor::PipelineStats stats = pipeline.stats();
  std::printf("\n%-8s %8s %10s %10s %10s %10s\n", "stage", "workers", "in", "out", "busy ms",
              "waited ms");
  for (const auto& stage : stats.stages) {
    std::printf("%-8s %8zu %10llu %10llu %10.2f %10.2f\n", stage.name.c_str(), stage.workers,
                static_cast<unsigned long long>(stage.items_in),
                static_cast<unsigned long long>(stage.items_out), stage.busy_seconds * 1e3,
                (stage.blocked_pop_seconds + stage.blocked_push_seconds) * 1e3);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return conveyor::examples::guarded("word_frequencies", [&] {
    CLI::App app{"Counts the words of a text with a parallel, keyed pipeline"};
    std::string path;
    std::size_t workers = 2;
    std::size_t top = 10;
    std::string executor = "threads";
    app.add_option("file", path, "Text to count (default: a built-in one)")
        ->check(CLI::ExistingFile);
    app.add_option("--workers", workers, "Workers of the split and count stages")
        ->capture_default_str()
        ->check(CLI::Range(1, 64));
    app.add_option("--top", top, "How many words to show")->capture_default_str();
    app.add_option("--executor", executor, "Where the stages run")
        ->capture_default_str()
        ->check(CLI::IsMember({"threads", "tbb"}));
    if (const auto status = conveyor::examples::parse_command_line(app, argc, argv)) return *status;
    return run(path, workers, top, executor == "tbb");
  });
}
