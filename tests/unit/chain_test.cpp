// Unit tests for Chain<In, Out> (chain.hpp) and conveyor::testing::run (testing.hpp): a chain is a
// value that can be stored, composed and put into several pipelines; run() gives back what a chain
// emits, in its inputs' order, and rethrows what a stage threw.
#include "conveyor/framework/chain.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "conveyor/framework.hpp"
#include "conveyor/framework/testing.hpp"
#include "pipeline_support.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::Chain;
using conveyor::Emit;
using conveyor::Mode;
using conveyor::Pipeline;
using conveyor::sink;
using conveyor::stage;
using conveyor::testing::count_to;
using conveyor::testing::Watchdog;

std::vector<int> numbers(int count) {
  std::vector<int> values(static_cast<std::size_t>(count));
  std::iota(values.begin(), values.end(), 0);
  return values;
}

// Parses, then doubles on two workers: a chain as a library would offer it.
Chain<std::string, long> parse_and_double() {
  return conveyor::chain<std::string>() |
         stage([](const std::string& text) { return std::stol(text); }, {.name = "parse"}) |
         stage([](long value) { return 2 * value; },
               {.name = "double", .mode = Mode::parallel, .workers = 2});
}

TEST(ChainTest, RunGivesBackWhatTheChainEmitsInItsInputsOrder) {
  Watchdog watchdog;
  const std::vector<long> out = conveyor::testing::run(
      parse_and_double(), std::vector<std::string>{"1", "2", "3", "40", "-5"});
  EXPECT_EQ(out, (std::vector<long>{2, 4, 6, 80, -10}));
}

TEST(ChainTest, AnEmptyChainPassesItemsThrough) {
  Watchdog watchdog;
  EXPECT_EQ(conveyor::testing::run(conveyor::chain<int>(), numbers(100)), numbers(100));
}

TEST(ChainTest, AStoredChainGoesIntoSeveralPipelines) {
  Watchdog watchdog;
  const Chain<std::uint64_t, std::uint64_t> square =
      conveyor::chain<std::uint64_t>() |
      stage([](std::uint64_t x) { return x * x; }, {.mode = Mode::parallel, .workers = 3});
  for (int round = 0; round < 3; ++round) {
    Pipeline p;
    std::uint64_t total = 0;
    p.source(count_to(1000)) | square | sink([&](std::uint64_t x) { total += x; });
    p.run();
    EXPECT_EQ(total, 332'833'500U) << "round " << round;  // the sum of squares below 1000
  }
}

TEST(ChainTest, ChainsComposeAndKeepTheirStagesOptions) {
  Watchdog watchdog;
  const Chain<long, std::string> to_text =
      conveyor::chain<long>() | stage([](long x) { return std::to_string(x); }, {.name = "text"});
  const Chain<std::string, std::string> round_trip = parse_and_double() | to_text;
  Pipeline p;
  std::vector<std::string> out;
  std::size_t next = 0;
  const std::vector<std::string> in{"7", "8"};
  p.source([&]() -> std::optional<std::string> {
    if (next == in.size()) return std::nullopt;
    return in[next++];
  }) | round_trip |
      sink([&](std::string s) { out.push_back(std::move(s)); }, {.mode = Mode::serial_in_order});
  p.run();
  EXPECT_EQ(out, (std::vector<std::string>{"14", "16"}));
  std::vector<std::string> names;
  for (const auto& stats : p.stats().stages)
    names.push_back(stats.name);
  EXPECT_EQ(names, (std::vector<std::string>{"source", "parse", "double", "text", "sink"}));
}

TEST(ChainTest, AChainThatEndsInASinkCompletesThePipeline) {
  Watchdog watchdog;
  std::atomic<std::uint64_t> total{0};
  const Chain<std::uint64_t, void> add_up =
      conveyor::chain<std::uint64_t>() | stage([](std::uint64_t x) { return x + 1; }) |
      sink([&](std::uint64_t x) { total.fetch_add(x, std::memory_order_relaxed); },
           {.mode = Mode::parallel, .workers = 2});
  Pipeline p;
  p.source(count_to(100)) | add_up;
  p.run();
  EXPECT_EQ(total.load(std::memory_order_relaxed), 5050U);
  total.store(0, std::memory_order_relaxed);
  conveyor::testing::run(add_up, std::vector<std::uint64_t>{1, 2, 3});
  EXPECT_EQ(total.load(std::memory_order_relaxed), 9U);
}

TEST(ChainTest, AStageThatEmitsSeveralItemsKeepsTheirOrder) {
  Watchdog watchdog;
  const auto split =
      conveyor::chain<std::string>() | stage<char>(
                                           [](const std::string& word, Emit<char>& emit) {
                                             for (char c : word)
                                               emit(char{c});
                                           },
                                           {.mode = Mode::parallel, .workers = 2});
  EXPECT_EQ(conveyor::testing::run(split, std::vector<std::string>{"ab", "", "cde"}),
            (std::vector<char>{'a', 'b', 'c', 'd', 'e'}));
}

TEST(ChainTest, RunRethrowsWhatAStageThrew) {
  Watchdog watchdog;
  EXPECT_THROW(
      (void)conveyor::testing::run(parse_and_double(), std::vector<std::string>{"1", "x", "3"}),
      std::invalid_argument);  // std::stol("x")
}

}  // namespace
