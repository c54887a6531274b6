// The line parsers: every field of well-formed lines of each format, and a clear reason for bad
// ones, including lines cut short at every byte.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conveyor/stages/detect.hpp"
#include "conveyor/stages/parsers.hpp"

namespace {

using namespace conveyor::stages;

constexpr std::string_view combined_line =
    R"L(83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1" 200 203023 "http://semicomplete.com/presentations/logstash-monitorama-2013/" "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1)")L";
constexpr std::string_view common_line =
    R"(in24.inetnebr.com - - [01/Aug/1995:00:00:01 -0400] "GET /shuttle/missions/sts-68/news/sts-68-mcc-05.txt HTTP/1.0" 200 1839)";

TEST(ClfParser, ReadsEveryFieldOfACombinedLine) {
  Record r;
  ASSERT_EQ(parse_combined(combined_line, r), nullptr);
  EXPECT_EQ(r.host, "83.149.9.216");
  EXPECT_EQ(r.user, "");
  EXPECT_EQ(r.time, epoch_seconds(2015, 5, 17, 10, 5, 3));
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/presentations/logstash-monitorama-2013/images/kibana-search.png");
  EXPECT_EQ(r.protocol, "HTTP/1.1");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.bytes, 203023);
  EXPECT_EQ(r.referrer, "http://semicomplete.com/presentations/logstash-monitorama-2013/");
  EXPECT_EQ(r.agent, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1)");
}

TEST(ClfParser, ReadsACommonLineWithItsTimeZone) {
  Record r;
  ASSERT_EQ(parse_common(common_line, r), nullptr);
  EXPECT_EQ(r.host, "in24.inetnebr.com");
  EXPECT_EQ(r.time, epoch_seconds(1995, 8, 1, 4, 0, 1));  // -0400
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.bytes, 1839);
  EXPECT_NE(parse_combined(common_line, r), nullptr) << "a common line has no referrer";
  EXPECT_NE(parse_common(combined_line, r), nullptr) << "text after the size";
}

TEST(ClfParser, DashSizeIsZeroAndOddRequestsAreKept) {
  Record r;
  ASSERT_EQ(parse_common(R"(h - - [01/Aug/1995:00:00:07 -0400] "GET / HTTP/1.0" 304 -)", r),
            nullptr);
  EXPECT_EQ(r.bytes, 0);
  ASSERT_EQ(parse_common(R"(h - - [01/Aug/1995:00:00:07 -0400] "-" 400 0)", r), nullptr);
  EXPECT_EQ(r.path, "-");
  EXPECT_EQ(r.method, "");
  ASSERT_EQ(parse_common(R"(h - - [01/Aug/1995:00:00:07 -0400] "GET /a \"b\" HTTP/1.0" 200 1)", r),
            nullptr);
  EXPECT_EQ(r.path, R"(/a \"b\")");
}

TEST(ClfParser, RejectsTheKnownMalformedLinesWithAReason) {
  Record r;
  for (
      const std::string_view line :
      {R"(46.161.41.24 - - [18/May/2015:19:05:46 +0000]")",
       R"L(46.118.127.106 - - [20/May/2015:12:05:26 +0000] (X11; U; ) - BrowseX (2.0.0 Windows)")L",
       R"L(63.140.98.80 - - [20/May/2015:21:05:03 +0000])")L"}) {
    const ParseError error = parse_combined(line, r);
    ASSERT_NE(error, nullptr) << line;
    EXPECT_NE(std::string(error), "");
  }
  EXPECT_STREQ(
      parse_combined(R"(h - - [32/May/2015:21:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "-")", r),
      "bad time: expected dd/Mon/yyyy:HH:MM:SS +zzzz");
  EXPECT_STREQ(
      parse_combined(R"(h - - [20/May/2015:21:05:03 +0000] "GET / HTTP/1.1" 99 1 "-" "-")", r),
      "bad status: expected 100-999");
}

TEST(ClfParser, EveryPrefixOfAGoodLineIsRejectedWithoutReadingPastIt) {
  Record r;
  for (std::size_t n = 0; n < combined_line.size(); ++n) {
    // A copy of exactly n bytes, so that AddressSanitizer sees a read past the end.
    const std::string prefix(combined_line.substr(0, n));
    EXPECT_NE(parse_combined(prefix, r), nullptr) << n;
  }
}

TEST(SyslogParser, ReadsAnRfc3164LineFromAFile) {
  Record r;
  ASSERT_EQ(parse_syslog(
                "Mar 27 13:06:56 ip-10-77-20-248 sshd[1291]: Server listening on 0.0.0.0 port 22.",
                r, 2024),
            nullptr);
  EXPECT_EQ(r.time, epoch_seconds(2024, 3, 27, 13, 6, 56));
  EXPECT_EQ(r.host, "ip-10-77-20-248");
  EXPECT_EQ(r.program, "sshd");
  EXPECT_EQ(r.pid, "1291");
  EXPECT_EQ(r.message, "Server listening on 0.0.0.0 port 22.");
  EXPECT_EQ(r.severity, -1);
  ASSERT_EQ(parse_syslog("<13>Feb  5 17:32:18 10.0.0.99 myapp: hello", r, 2024), nullptr);
  EXPECT_EQ(r.facility, 1);
  EXPECT_EQ(r.severity, 5);
  EXPECT_EQ(r.program, "myapp");
  EXPECT_EQ(r.message, "hello");
}

TEST(SyslogParser, ReadsAnRfc5424LineWithStructuredData) {
  Record r;
  ASSERT_EQ(
      parse_syslog(
          R"(<30>1 2024-02-18T02:29:57+08:00 exmaple.com charon 15894 - [meta sequenceId="31"] 06[NET] sending packet)",
          r, 2024),
      nullptr);
  EXPECT_EQ(r.time, epoch_seconds(2024, 2, 17, 18, 29, 57));
  EXPECT_EQ(r.host, "exmaple.com");
  EXPECT_EQ(r.program, "charon");
  EXPECT_EQ(r.pid, "15894");
  EXPECT_EQ(r.facility, 3);
  EXPECT_EQ(r.severity, 6);
  EXPECT_EQ(r.message, "06[NET] sending packet");
  ASSERT_EQ(r.extra.size(), 1U);
  EXPECT_EQ(r.extra[0].value, R"([meta sequenceId="31"])");
  EXPECT_NE(parse_syslog("<999>1 2024-02-18T02:29:57Z h a - - - m", r, 2024), nullptr);
  EXPECT_NE(parse_syslog("<30>1 2024-02-18T02:29:57Z h a - - [unclosed", r, 2024), nullptr);
  EXPECT_NE(parse_syslog("just some words", r, 2024), nullptr);
}

TEST(JsonParser, MapsTheUsualKeysAndKeepsTheRest) {
  JsonParser parser;
  Arena arena;
  Record r;
  const std::string line =
      R"({"time":"2026-11-01T00:00:01Z","remote_addr":"10.0.0.1","method":"GET","path":"/a\"b","status":404,"bytes":12,"request_time":0.25,"upstream":{"x":[1,2]},"tag":"t\u00e9"})";
  ASSERT_EQ(parser.parse(line, line.size(), r, arena), nullptr);
  EXPECT_EQ(r.time, epoch_seconds(2026, 11, 1, 0, 0, 1));
  EXPECT_EQ(r.host, "10.0.0.1");
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/a\"b");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.bytes, 12);
  EXPECT_DOUBLE_EQ(r.duration, 0.25);
  ASSERT_EQ(r.extra.size(), 2U);
  EXPECT_EQ(r.extra[0].name, "upstream");
  EXPECT_EQ(r.extra[0].value, R"({"x":[1,2]})");
  EXPECT_TRUE(r.extra[0].number);
  EXPECT_EQ(r.extra[1].value, "t\xc3\xa9");
}

TEST(JsonParser, ReadsNestedRequestsAndNanosecondDurations) {
  JsonParser parser;
  Arena arena;
  Record r;
  const std::string caddy =
      R"({"ts":1700000000.5,"request":{"remote_ip":"1.2.3.4","method":"POST","uri":"/x","headers":{"User-Agent":["curl"]}},"status":201,"duration":0.5})";
  ASSERT_EQ(parser.parse(caddy, caddy.size(), r, arena), nullptr);
  EXPECT_EQ(r.host, "1.2.3.4");
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/x");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.time, 1700000000);
  const std::string traefik =
      R"({"ClientHost":"172.17.0.1","DownstreamStatus":200,"Duration":357313})";
  ASSERT_EQ(parser.parse(traefik, traefik.size(), r, arena), nullptr);
  EXPECT_NEAR(r.duration, 357313e-9, 1e-12);
}

// The keys of Fluentd's and Fluent Bit's apache2 parser, with the time in CLF form.
TEST(JsonParser, MapsFluentApacheKeysAndAClfTime) {
  JsonParser parser;
  Arena arena;
  Record r;
  const std::string line =
      R"({"host":"10.0.0.7","user":"-","method":"GET","path":"/item/42?x=1","code":"503","size":"2048","referer":"-","agent":"curl/8.0","time":"01/Jun/2024:00:00:00 +0200"})";
  ASSERT_EQ(parser.parse(line, line.size(), r, arena), nullptr);
  EXPECT_EQ(r.host, "10.0.0.7");
  EXPECT_EQ(r.path, "/item/42?x=1");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.bytes, 2048);
  EXPECT_EQ(r.agent, "curl/8.0");
  EXPECT_EQ(r.time, epoch_seconds(2024, 5, 31, 22, 0, 0));
  EXPECT_TRUE(r.extra.empty());
}

// Epoch times in every unit, as numbers or strings, told apart by magnitude.
TEST(JsonParser, ReadsEpochTimesInAnyUnit) {
  JsonParser parser;
  Arena arena;
  for (const std::string& time :
       {std::string("1717200000"), std::string("1717200000123"), std::string("1717200000123456"),
        std::string("1717200000123456789"), std::string("\"1717200000\""),
        std::string("\"1717200000123456789\""), std::string("\"2024-06-01 00:00:00\""),
        std::string("\"2024-06-01T02:00:00.123456789+02:00\"")}) {
    Record r;
    const std::string line = R"({"@timestamp":)" + time + "}";
    ASSERT_EQ(parser.parse(line, line.size(), r, arena), nullptr) << time;
    EXPECT_EQ(r.time, 1717200000) << time;
  }
  // A time that cannot be read is kept as an extra field, not dropped.
  Record r;
  const std::string line = R"({"time":"yesterday"})";
  ASSERT_EQ(parser.parse(line, line.size(), r, arena), nullptr);
  ASSERT_EQ(r.extra.size(), 1U);
  EXPECT_EQ(r.extra[0].value, "yesterday");
}

TEST(JsonParser, RejectsWhatIsNotOneObject) {
  JsonParser parser;
  Arena arena;
  Record r;
  for (const std::string& line :
       std::vector<std::string>{"[1,2]", "{\"a\":", "not json", "\"text\"", "",
                                std::string(5000, '[') + std::string(5000, ']')}) {
    EXPECT_NE(parser.parse(line, line.size(), r, arena), nullptr) << line.substr(0, 20);
  }
  std::string deep = "{\"a\":";
  for (int i = 0; i < 2000; ++i)
    deep += "{\"a\":";
  deep += "1";
  for (int i = 0; i < 2001; ++i)
    deep += "}";
  // Valid, only deep: kept whole as the raw text of its one field, or rejected; never a crash.
  if (parser.parse(deep, deep.size(), r, arena) == nullptr) {
    ASSERT_EQ(r.extra.size(), 1U);
    EXPECT_EQ(r.extra[0].value.size(), deep.size() - 6);
  }
}

TEST(DetectFormat, PicksTheFormatMostFirstLinesParseAs) {
  EXPECT_EQ(detect_format(std::string(combined_line) + "\n" + std::string(combined_line)),
            Format::combined);
  EXPECT_EQ(detect_format(std::string(common_line) + "\n"), Format::common);
  EXPECT_EQ(detect_format("{\"status\":200}\n{\"status\":404}\n"), Format::json);
  EXPECT_EQ(detect_format("Mar 27 13:06:56 host sshd[1]: x\n"), Format::syslog);
  EXPECT_EQ(detect_format(""), Format::combined);
}

TEST(Rfc3339, ParsesOffsetsAndFractions) {
  std::int64_t s = 0;
  ASSERT_TRUE(parse_rfc3339("2024-02-18T02:29:57.123456+08:00", s));
  EXPECT_EQ(s, epoch_seconds(2024, 2, 17, 18, 29, 57));
  ASSERT_TRUE(parse_rfc3339("1970-01-01T00:00:00Z", s));
  EXPECT_EQ(s, 0);
  EXPECT_FALSE(parse_rfc3339("2024-13-01T00:00:00Z", s));
  EXPECT_FALSE(parse_rfc3339("2024-02-18", s));
}

}  // namespace
