// HeavyHitters (Space-Saving) and HyperLogLog: exact while they can be, and within their stated
// bounds after, checked against exact counts of the same streams; merged as well as whole.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "conveyor/stages/heavy_hitters.hpp"
#include "conveyor/stages/hyperloglog.hpp"
#include "conveyor/stages/summary.hpp"

namespace {

using namespace conveyor::stages;

// prefix + number + suffix. (GCC 12 at -O3 warns falsely on "literal" + std::string.)
std::string key(std::string_view prefix, std::uint64_t number, std::string_view suffix = {}) {
  std::string text(prefix);
  text.append(std::to_string(number)).append(suffix);
  return text;
}

// A Zipf-like stream over `universe` keys: key i with weight 1 / (i + 1).
std::vector<std::string> zipf_stream(std::size_t length, std::size_t universe, unsigned seed) {
  std::vector<double> weights(universe);
  for (std::size_t i = 0; i < universe; ++i)
    weights[i] = 1.0 / static_cast<double>(i + 1);
  std::discrete_distribution<std::size_t> pick(weights.begin(), weights.end());
  std::mt19937_64 random(seed);
  std::vector<std::string> stream;
  stream.reserve(length);
  for (std::size_t i = 0; i < length; ++i)
    stream.push_back(key("/item/", pick(random), "?page=2"));
  return stream;
}

std::map<std::string, std::uint64_t> exact_counts(const std::vector<std::string>& stream) {
  std::map<std::string, std::uint64_t> counts;
  for (const std::string& key : stream)
    ++counts[key];
  return counts;
}

// Every bound HeavyHitters promises, over the exact counts of what it was given.
void expect_bounds(const HeavyHitters& hitters, const std::map<std::string, std::uint64_t>& truth,
                   std::uint64_t total) {
  EXPECT_EQ(hitters.total(), total);
  EXPECT_LE(hitters.size(), hitters.capacity());
  const auto held = hitters.top(hitters.size());
  ASSERT_EQ(held.size(), hitters.size());
  for (const HeavyHitters::Entry& entry : held) {
    const auto found = truth.find(std::string(entry.key));
    const std::uint64_t real = found == truth.end() ? 0 : found->second;
    EXPECT_LE(entry.count - entry.error, real) << entry.key;
    EXPECT_GE(entry.count, real) << entry.key;
    EXPECT_LE(entry.error, total / hitters.capacity()) << entry.key;
  }
  for (const auto& [key, real] : truth) {
    if (hitters.find(key).count == 0) {
      EXPECT_LE(real, hitters.floor()) << key;
    }
  }
}

TEST(HeavyHitters, CountsExactlyWhileThereIsRoom) {
  HeavyHitters hitters(100);
  const auto stream = zipf_stream(20'000, 100, 1);
  for (const std::string& key : stream)
    hitters.add(key);
  EXPECT_TRUE(hitters.lossless());
  EXPECT_EQ(hitters.floor(), 0U);
  EXPECT_EQ(hitters.max_error(), 0U);
  const auto truth = exact_counts(stream);
  EXPECT_EQ(hitters.size(), truth.size());
  for (const auto& [key, real] : truth) {
    EXPECT_EQ(hitters.find(key).count, real);
    EXPECT_EQ(hitters.find(key).error, 0U);
  }
}

TEST(HeavyHitters, KeepsItsBoundsWhenKeysOutnumberItsCapacity) {
  HeavyHitters hitters(500);
  const auto stream = zipf_stream(200'000, 50'000, 2);
  for (const std::string& key : stream)
    hitters.add(key);
  EXPECT_FALSE(hitters.lossless());
  const auto truth = exact_counts(stream);
  expect_bounds(hitters, truth, stream.size());
  // The heaviest keys are found, in order: their counts are far above the error bound.
  const auto top = hitters.top(5);
  ASSERT_EQ(top.size(), 5U);
  for (std::size_t i = 0; i < 5; ++i)
    EXPECT_EQ(top[i].key, key("/item/", i, "?page=2"));
}

TEST(HeavyHitters, MergedSummariesKeepTheBoundsOfBothStreams) {
  const auto left = zipf_stream(100'000, 20'000, 3);
  const auto right = zipf_stream(60'000, 30'000, 4);
  HeavyHitters a(300);
  HeavyHitters b(300);
  for (const std::string& key : left)
    a.add(key);
  for (const std::string& key : right)
    b.add(key);
  a.merge(b);
  std::vector<std::string> both = left;
  both.insert(both.end(), right.begin(), right.end());
  expect_bounds(a, exact_counts(both), both.size());
  // And it goes on counting with the same guarantees.
  const auto more = zipf_stream(50'000, 10'000, 5);
  for (const std::string& key : more)
    a.add(key);
  both.insert(both.end(), more.begin(), more.end());
  expect_bounds(a, exact_counts(both), both.size());
}

TEST(HeavyHitters, MergeOfSummariesThatFitTogetherStaysExact) {
  HeavyHitters a(100);
  HeavyHitters b(100);
  for (int i = 0; i < 40; ++i) {
    a.add(key("k", i));
    b.add(key("k", i + 20));
  }
  a.merge(b);
  EXPECT_TRUE(a.lossless());
  EXPECT_EQ(a.size(), 60U);
  EXPECT_EQ(a.find("k25").count, 2U);
  EXPECT_EQ(a.find("k5").count, 1U);
  EXPECT_EQ(a.total(), 80U);
}

TEST(HeavyHitters, UnboundedCountsEveryKeyAndMergesExactly) {
  HeavyHitters a;
  HeavyHitters b;
  const auto stream = zipf_stream(50'000, 40'000, 6);
  for (std::size_t i = 0; i < stream.size(); ++i)
    (i % 3 == 0 ? a : b).add(stream[i]);
  a.merge(b);
  const auto truth = exact_counts(stream);
  EXPECT_TRUE(a.lossless());
  EXPECT_EQ(a.size(), truth.size());
  EXPECT_EQ(a.total(), stream.size());
  for (const auto& [key, real] : truth)
    ASSERT_EQ(a.find(key).count, real) << key;
}

TEST(HeavyHitters, LongKeysSurviveTheArenaBeingCompacted) {
  // Every key distinct and long: evictions fill the arena with dead keys many times over.
  HeavyHitters hitters(64);
  const std::string padding(300, 'x');
  for (int i = 0; i < 100'000; ++i)
    hitters.add(key("/", i, padding));
  hitters.add(key("/", 99999, padding));
  EXPECT_EQ(hitters.size(), 64U);
  for (const HeavyHitters::Entry& entry : hitters.top(64)) {
    ASSERT_EQ(
        entry.key.size(),
        padding.size() + 1 + std::to_string(std::stoi(std::string(entry.key.substr(1)))).size());
    EXPECT_EQ(entry.key.substr(entry.key.size() - padding.size()), padding);
  }
  EXPECT_EQ(hitters.top(1).front().key, key("/", 99999, padding));
}

TEST(HeavyHitters, CopiedAndMovedSummariesKeepTheirKeys) {
  HeavyHitters a(10);
  a.add("alpha");
  a.add("alpha");
  HeavyHitters copy = a;
  a.add("beta");
  HeavyHitters b = std::move(a);
  EXPECT_EQ(b.find("alpha").count, 2U);
  EXPECT_EQ(b.find("beta").count, 1U);
  EXPECT_EQ(b.top(1).front().key, "alpha");
  EXPECT_EQ(copy.find("alpha").count, 2U);
  EXPECT_EQ(copy.find("beta").count, 0U);
  EXPECT_EQ(copy.total(), 2U);
}

TEST(HeavyHitters, RefusesWhatWouldBreakItsBounds) {
  HeavyHitters small(1);
  small.add("a");
  small.add("b");  // lossy now: b's count 2 has an error of 1
  HeavyHitters unbounded;
  EXPECT_THROW(unbounded.merge(small), std::invalid_argument);
  HeavyHitters larger(4);
  EXPECT_THROW(larger.merge(small), std::invalid_argument);
  // A count of 0 holds nothing, so a later merge cannot see the key twice.
  HeavyHitters z(2);
  z.add("x", hash_key("x"), 0);
  z.add("y");
  HeavyHitters w(2);
  w.add("x");
  w.add("x");
  z.merge(w);
  EXPECT_EQ(z.size(), 2U);
  EXPECT_EQ(z.find("x").count, 2U);
  EXPECT_EQ(z.find("y").count, 1U);
}

TEST(HyperLogLog, EstimatesWithinFourStandardErrors) {
  for (const std::uint64_t n : {0ULL, 1ULL, 10ULL, 1'000ULL, 20'000ULL, 300'000ULL, 2'000'000ULL}) {
    HyperLogLog sketch;
    for (std::uint64_t i = 0; i < n; ++i)
      sketch.add(hash_key(key("client-", i)));
    const double estimate = sketch.estimate();
    const double tolerance =
        std::max(1.0, 4 * HyperLogLog::relative_error() * static_cast<double>(n));
    EXPECT_NEAR(estimate, static_cast<double>(n), tolerance) << n;
  }
}

TEST(HyperLogLog, RepeatsDoNotCountAndMergeIsTheUnion) {
  HyperLogLog a;
  HyperLogLog b;
  HyperLogLog all;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 50'000; ++i) {
      const std::uint64_t hash = hash_key(std::to_string(i));
      (i < 30'000 ? a : b).add(hash);
      all.add(hash);
    }
  }
  a.merge(b);
  EXPECT_EQ(a.estimate(), all.estimate());
  EXPECT_NEAR(all.estimate(), 50'000, 4 * HyperLogLog::relative_error() * 50'000);
}

TEST(KeyTally, DistinctIsExactUntilKeysAreDroppedThenEstimated) {
  KeyTally few(1000);
  KeyTally many(1000);
  for (int i = 0; i < 900; ++i)
    few.add(key("/p", i));
  for (int i = 0; i < 100'000; ++i)
    many.add(key("/p", i));
  EXPECT_TRUE(few.distinct().exact);
  EXPECT_EQ(few.distinct().count, 900);
  EXPECT_FALSE(many.distinct().exact);
  EXPECT_NEAR(many.distinct().count, 100'000, 4 * HyperLogLog::relative_error() * 100'000);
  // Just past the capacity, the estimate never says fewer keys than are held.
  for (int round = 0; round < 20; ++round) {
    KeyTally barely(1000);
    for (int i = 0; i < 1002; ++i)
      barely.add(key(key("/r", round, "/"), i));
    EXPECT_GE(barely.distinct().count, 1001);
  }
}

TEST(Summary, SaysWhichFiguresAreEstimated) {
  Summary bounded({.top_capacity = 100});
  Summary exact({.exact = true});
  for (int i = 0; i < 5000; ++i) {
    Record r;
    r.path = i % 2 == 0 ? std::string_view("/home") : std::string_view("/x");
    std::string unique = key("/item/", i);
    if (i % 2 == 1) r.path = unique;
    r.time_unparsed = i % 1000 == 0;
    bounded.add(r);
    exact.add(r);
  }
  const std::string estimated = bounded.to_json(3);
  EXPECT_NE(estimated.find(R"("paths":{"exact":false,"method":"space-saving","capacity":100)"),
            std::string::npos)
      << estimated;
  EXPECT_NE(estimated.find(R"("distinct_method":"hyperloglog")"), std::string::npos);
  EXPECT_NE(estimated.find(R"("top_paths":[{"key":"/home","count":2500,"error":0})"),
            std::string::npos)
      << estimated;
  EXPECT_NE(estimated.find(R"("time_unparsed":5)"), std::string::npos);
  EXPECT_NE(bounded.to_table(3).find("estimated"), std::string::npos);

  const std::string counted = exact.to_json(3);
  EXPECT_NE(counted.find(R"("top_capacity":null)"), std::string::npos) << counted;
  EXPECT_NE(counted.find(R"("distinct":{"paths":2501,)"), std::string::npos) << counted;
  EXPECT_EQ(counted.find("space-saving"), std::string::npos);
  EXPECT_EQ(exact.to_table(3).find("estimated"), std::string::npos);
}

}  // namespace
