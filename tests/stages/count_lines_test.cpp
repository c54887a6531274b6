// count_newlines against std::count: every length, alignment and density, and texts long enough
// for its byte counters to be summed several times over.
#include "conveyor/stages/count_lines.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <string_view>

namespace {

using conveyor::stages::count_newlines;

std::size_t reference(std::string_view text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST(CountNewlines, EmptyAndShortTexts) {
  EXPECT_EQ(count_newlines(""), 0U);
  EXPECT_EQ(count_newlines("\n"), 1U);
  EXPECT_EQ(count_newlines("a\nb\n\nc"), 3U);
  EXPECT_EQ(count_newlines(std::string(15, '\n')), 15U);
  EXPECT_EQ(count_newlines(std::string(16, '\n')), 16U);
  EXPECT_EQ(count_newlines(std::string(17, '\n')), 17U);
}

TEST(CountNewlines, OnlyNewlinesPastTheCountersLimit) {
  // 255 blocks of 16 fill a byte counter; these need several sums, and a tail.
  for (const std::size_t size : {std::size_t{16 * 255}, std::size_t{16 * 255 + 1},
                                 std::size_t{16 * 256}, std::size_t{16 * 1000 + 7}}) {
    EXPECT_EQ(count_newlines(std::string(size, '\n')), size);
  }
}

TEST(CountNewlines, MatchesStdCountAtEveryAlignmentAndDensity) {
  std::mt19937 random(7);
  for (const int per_mille : {0, 4, 100, 500, 1000}) {
    std::bernoulli_distribution newline(per_mille / 1000.0);
    std::uniform_int_distribution<int> byte(0, 255);
    std::string text(9000, 'x');
    for (char& c : text) {
      const auto other = static_cast<char>(byte(random));
      c = newline(random) ? '\n' : (other == '\n' ? 'y' : other);
    }
    for (std::size_t start = 0; start < 17; ++start) {
      for (std::size_t size = 0; start + size <= text.size(); size += size < 64 ? 1 : 997) {
        const std::string_view piece(text.data() + start, size);
        ASSERT_EQ(count_newlines(piece), reference(piece))
            << "start " << start << ", size " << size << ", " << per_mille << "‰ newlines";
      }
    }
  }
}

}  // namespace
