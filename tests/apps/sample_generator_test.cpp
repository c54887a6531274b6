// log-ingest's sample generator: the same seed gives the same bytes, the small profile (the
// embedded sample) never changes, and the realistic profiles have the shape they promise (distinct
// paths under a popular head, a long tail of clients, two hours of time) in lines that log-ingest's
// own parsers read, the JSON twin included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "conveyor/stages/parsers.hpp"
#include "conveyor/stages/record.hpp"
#include "sample.hpp"

namespace {

using conveyor::log_ingest::estimate_lines;
using conveyor::log_ingest::make_sample;
using conveyor::log_ingest::SampleFormat;
using conveyor::log_ingest::SampleGenerator;
using conveyor::log_ingest::SampleOptions;
using conveyor::log_ingest::SampleProfile;
using conveyor::stages::Record;

// 2024-06-01T00:00:00+02:00, where the realistic profiles start.
constexpr std::int64_t realistic_start = 1'717'192'800;

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  return lines;
}

// A line parsed in the given format; false when the parser rejects it. The record's views point
// into `line` or `arena`.
bool parse(SampleFormat format, std::string_view line, Record& record,
           conveyor::stages::JsonParser& json, conveyor::stages::Arena& arena) {
  if (format == SampleFormat::json) return json.parse(line, line.size(), record, arena) == nullptr;
  return conveyor::stages::parse_combined(line, record) == nullptr;
}

struct Parsed {
  conveyor::stages::Arena arena;  // JSON strings that had escapes
  std::vector<Record> records;
  std::uint64_t rejected = 0;
  std::uint64_t malformed = 0;  // as the generator counted them
};

// `text` keeps the lines the records point into.
Parsed generate_and_parse(const SampleOptions& options, std::string& text) {
  SampleGenerator generator(options);
  while (generator.next(text)) {
  }
  Parsed parsed;
  parsed.malformed = generator.malformed_lines();
  conveyor::stages::JsonParser json;
  for (const std::string_view line : lines_of(text)) {
    Record record;
    if (parse(options.format, line, record, json, parsed.arena)) {
      parsed.records.push_back(std::move(record));
    } else {
      ++parsed.rejected;
    }
  }
  return parsed;
}

TEST(SampleGenerator, SameSeedSameBytes) {
  for (const SampleProfile profile :
       {SampleProfile::small, SampleProfile::realistic, SampleProfile::distinct}) {
    for (const SampleFormat format : {SampleFormat::combined, SampleFormat::json}) {
      const SampleOptions options{.lines = 20'000, .seed = 7, .format = format, .profile = profile};
      const std::string first = make_sample(options);
      EXPECT_EQ(first, make_sample(options));
      SampleOptions other = options;
      other.seed = 8;
      EXPECT_NE(first, make_sample(other));
    }
  }
}

// The embedded sample and `generate` without --profile: the bytes from before the profiles were
// added, pinned by their FNV-1a hash.
TEST(SampleGenerator, SmallProfileUnchanged) {
  const std::string combined = make_sample({.lines = 20'000});
  EXPECT_EQ(combined.size(), 3'731'234U);
  EXPECT_EQ(fnv1a(combined), 0x411347e2f8593478ULL);
  EXPECT_TRUE(combined.starts_with(
      "60.214.178.251 - - [01/Nov/2026:00:00:00 +0000] \"GET /products/widgets HTTP/1.1\" 403 "
      "14407 \"https://www.google.com/\""));
  const std::string json = make_sample({.lines = 20'000, .seed = 7, .format = SampleFormat::json});
  EXPECT_EQ(fnv1a(json), 0xd7b47a2c10f2c7dfULL);
  EXPECT_EQ(fnv1a(make_sample({.lines = 20'000, .seed = 7})), 0xa36b461fbc902619ULL);
}

TEST(SampleGenerator, RealisticPathsMostlyDistinctUnderAPopularHead) {
  std::string text;
  const Parsed parsed =
      generate_and_parse({.lines = 100'000, .profile = SampleProfile::realistic}, text);
  std::unordered_map<std::string_view, std::uint64_t> paths;
  for (const Record& record : parsed.records)
    ++paths[record.path];
  EXPECT_GE(paths.size(), 50'000U);
  std::vector<std::uint64_t> counts;
  counts.reserve(paths.size());
  for (const auto& [path, count] : paths)
    counts.push_back(count);
  std::sort(counts.rbegin(), counts.rend());
  EXPECT_GE(counts[0], 2'000U) << "the most popular path has 2 % of the requests or more";
  EXPECT_GE(counts[9], 1'000U) << "the tenth has 1 % or more";
  EXPECT_GE(paths["/"], 2'000U);
  EXPECT_GE(paths["/healthz"], 1'000U);
  EXPECT_GE(paths["/favicon.ico"], 500U);
}

TEST(SampleGenerator, RealisticClientsHaveALongTail) {
  std::string text;
  const Parsed parsed =
      generate_and_parse({.lines = 100'000, .profile = SampleProfile::realistic}, text);
  std::unordered_map<std::string_view, std::uint64_t> clients;
  std::uint64_t ipv6 = 0;
  for (const Record& record : parsed.records) {
    if (clients[record.host]++ == 0 && record.host.find(':') != std::string_view::npos) ++ipv6;
  }
  // About 100 000 clients, a 1/rank share each: 100 000 lines meet about a quarter of them.
  EXPECT_GE(clients.size(), 15'000U);
  EXPECT_LE(clients.size(), 50'000U);
  EXPECT_GE(ipv6, clients.size() / 20);
  EXPECT_LE(ipv6, clients.size() / 4);
  std::vector<std::uint64_t> counts;
  counts.reserve(clients.size());
  for (const auto& [client, count] : clients)
    counts.push_back(count);
  std::sort(counts.rbegin(), counts.rend());
  EXPECT_GE(counts[0], 2'000U) << "a few clients make many requests";
  EXPECT_LE(counts[counts.size() / 2], 2U) << "most make few";
}

TEST(SampleGenerator, RealisticSpansTwoHours) {
  for (const SampleFormat format : {SampleFormat::combined, SampleFormat::json}) {
    std::string text;
    const Parsed parsed = generate_and_parse(
        {.lines = 100'000, .format = format, .profile = SampleProfile::realistic}, text);
    std::int64_t first = parsed.records.front().time;
    std::int64_t last = first;
    std::int64_t latest = first;
    for (const Record& record : parsed.records) {
      ASSERT_TRUE(record.has_time());
      EXPECT_GE(record.time, latest - 2) << "out of order by two seconds at most";
      latest = std::max(latest, record.time);
      first = std::min(first, record.time);
      last = std::max(last, record.time);
    }
    EXPECT_EQ(parsed.records.front().time, realistic_start);
    EXPECT_EQ(parsed.records.front().timestamp, "01/Jun/2024:00:00:00 +0200");
    EXPECT_GE(first, realistic_start - 2);
    EXPECT_GE(last - first, 7'150);
    EXPECT_LE(last - first, 7'202);
  }
}

// With --size, `generate` runs until the size is reached, its two hours spread over the lines
// it estimated the size holds.
TEST(SampleGenerator, SizeEstimateSpansTwoHours) {
  constexpr std::uint64_t bytes = 8U << 20U;
  SampleOptions options{.malformed = false, .profile = SampleProfile::realistic};
  options.expected_lines = estimate_lines(options, bytes);
  options.lines = std::numeric_limits<std::uint64_t>::max();
  SampleGenerator generator(options);
  std::string text;
  while (text.size() < bytes && generator.next(text)) {
  }
  text.pop_back();
  const std::string_view last = std::string_view(text).substr(text.rfind('\n') + 1);
  Record record;
  ASSERT_EQ(conveyor::stages::parse_combined(last, record), nullptr) << last;
  EXPECT_GE(record.time - realistic_start, 7'000);
  EXPECT_LE(record.time - realistic_start, 7'400);
}

TEST(SampleGenerator, RealisticLinesParseButTheDamagedOnes) {
  for (const SampleProfile profile : {SampleProfile::realistic, SampleProfile::distinct}) {
    for (const SampleFormat format : {SampleFormat::combined, SampleFormat::json}) {
      std::string text;
      const Parsed parsed =
          generate_and_parse({.lines = 100'000, .format = format, .profile = profile}, text);
      EXPECT_EQ(parsed.rejected, parsed.malformed);
      EXPECT_GE(parsed.malformed, 10U) << "a few lines in ten thousand";
      EXPECT_LE(parsed.malformed, 60U);
      std::string clean_text;
      const Parsed clean = generate_and_parse(
          {.lines = 20'000, .format = format, .malformed = false, .profile = profile}, clean_text);
      EXPECT_EQ(clean.rejected, 0U);
      EXPECT_EQ(clean.records.size(), 20'000U);
    }
  }
}

// The JSON twin holds the same records as the combined log, under the apache2 parser's keys.
TEST(SampleGenerator, JsonTwinHoldsTheSameRecords) {
  std::string combined_text;
  std::string json_text;
  const Parsed combined = generate_and_parse(
      {.lines = 20'000, .malformed = false, .profile = SampleProfile::realistic}, combined_text);
  const Parsed json = generate_and_parse({.lines = 20'000,
                                          .format = SampleFormat::json,
                                          .malformed = false,
                                          .profile = SampleProfile::realistic},
                                         json_text);
  EXPECT_TRUE(json_text.starts_with("{\"host\":\""));
  EXPECT_NE(json_text.find("\"user\":\"-\",\"method\":\"GET\",\"path\":\"/"), std::string::npos);
  ASSERT_EQ(combined.records.size(), json.records.size());
  for (std::size_t i = 0; i < json.records.size(); ++i) {
    const Record& a = combined.records[i];
    const Record& b = json.records[i];
    ASSERT_TRUE(b.has_time());
    ASSERT_NE(b.status, -1) << "`code` is the status";
    EXPECT_EQ(a.time, b.time);
    EXPECT_EQ(a.timestamp, b.timestamp);
    EXPECT_EQ(a.host, b.host);
    EXPECT_EQ(a.user == "-" ? std::string_view{} : a.user, b.user) << "JSON's \"-\" is no user";
    EXPECT_EQ(a.method, b.method);
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.referrer, b.referrer);
    EXPECT_EQ(a.agent, b.agent);
    EXPECT_TRUE(b.extra.empty()) << "every key is one log-ingest maps";
  }
}

TEST(SampleGenerator, DistinctGivesEveryLineItsOwnPath) {
  std::string text;
  const Parsed parsed = generate_and_parse(
      {.lines = 100'000, .malformed = false, .profile = SampleProfile::distinct}, text);
  std::unordered_set<std::string_view> paths;
  for (const Record& record : parsed.records)
    paths.insert(record.path);
  EXPECT_EQ(paths.size(), 100'000U);
}

TEST(SampleGenerator, ProfileNames) {
  EXPECT_EQ(conveyor::log_ingest::parse_profile("small"), SampleProfile::small);
  EXPECT_EQ(conveyor::log_ingest::parse_profile("realistic"), SampleProfile::realistic);
  EXPECT_EQ(conveyor::log_ingest::parse_profile("distinct"), SampleProfile::distinct);
  EXPECT_EQ(conveyor::log_ingest::parse_profile("big"), std::nullopt);
}

}  // namespace
