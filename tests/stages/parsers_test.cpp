// The line parsers: every field of well-formed lines of each format, and a clear reason for bad
// ones, including lines cut short at every byte.
#include <gtest/gtest.h>

#include <fstream>
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
        std::string("\"2024-06-01T02:00:00.123456789+02:00\""),
        // The last nanosecond of the second, which a double would round up into the next one.
        std::string("1717200000999999999"), std::string("\"1717200000999999999\""),
        std::string("1717200000999"), std::string("1717200000.999")}) {
    Record r;
    const std::string line = R"({"@timestamp":)" + time + "}";
    ASSERT_EQ(parser.parse(line, line.size(), r, arena), nullptr) << time;
    EXPECT_EQ(r.time, 1717200000) << time;
  }
  // A time that cannot be read is kept as an extra field, not dropped, and marked for counting.
  Record r;
  const std::string line = R"({"time":"yesterday"})";
  ASSERT_EQ(parser.parse(line, line.size(), r, arena), nullptr);
  ASSERT_EQ(r.extra.size(), 1U);
  EXPECT_EQ(r.extra[0].value, "yesterday");
  EXPECT_TRUE(r.time_unparsed);
  EXPECT_FALSE(r.has_time());
  const std::string readable = R"({"ts":"soon","time":1717200000})";
  ASSERT_EQ(parser.parse(readable, readable.size(), r, arena), nullptr);
  EXPECT_FALSE(r.time_unparsed);
  EXPECT_EQ(r.time, 1717200000);
  // Before the epoch, a fraction rounds down: a second and a half before is 23:59:58.
  const std::string before = R"({"time":-1.5})";
  ASSERT_EQ(parser.parse(before, before.size(), r, arena), nullptr);
  EXPECT_EQ(r.time, -2);
}

// The first line of each key map, as its writer emits it.
TEST(JsonParser, MapsNginxCaddyTraefikAndEcsKeys) {
  JsonParser parser;
  Arena arena;
  struct Case {
    std::string line;
    std::string_view host;
    std::string_view path;
    int status;
    std::int64_t bytes;
    std::string_view agent;
  };
  const std::vector<Case> cases = {
      {R"({"time_local":"x","remote_addr":"10.1.1.1","request_method":"GET","request_uri":"/a?b=1","status":"404","body_bytes_sent":"12","request_time":"0.004","http_user_agent":"curl/8"})",
       "10.1.1.1", "/a?b=1", 404, 12, "curl/8"},
      {R"({"level":"info","ts":1693840791.75,"request":{"remote_ip":"172.17.0.1","client_ip":"127.0.0.1","proto":"HTTP/1.0","method":"GET","uri":"/","headers":{"User-Agent":["curl/7.74.0"],"Accept":["*/*"]}},"size":10,"status":200,"duration":0.0009})",
       "172.17.0.1", "/", 200, 10, "curl/7.74.0"},
      {R"({"ClientHost":"172.17.0.1","DownstreamContentSize":356,"DownstreamStatus":404,"Duration":215563,"RequestMethod":"GET","RequestPath":"/x","StartUTC":"2023-09-04T15:22:37.84Z","request_User-Agent":"Mozilla/5.0"})",
       "172.17.0.1", "/x", 404, 356, "Mozilla/5.0"},
      {R"({"@timestamp":"2024-06-01T00:00:00Z","source":{"ip":"192.0.2.9"},"http":{"request":{"method":"POST","referrer":"https://a/"},"response":{"status_code":502,"body":{"bytes":77}},"version":"1.1"},"url":{"path":"/api/v1","original":"/api/v1?q=2"},"user_agent":{"original":"Go-http-client/1.1"},"event":{"duration":2500000}})",
       "192.0.2.9", "/api/v1", 502, 77, "Go-http-client/1.1"},
      {R"({"@timestamp":"2024-06-01T00:00:00Z","source.ip":"192.0.2.10","url.path":"/flat","http.response.status_code":201,"http.response.body.bytes":5,"user_agent.original":"ua"})",
       "192.0.2.10", "/flat", 201, 5, "ua"},
  };
  for (const Case& c : cases) {
    Record r;
    ASSERT_EQ(parser.parse(c.line, c.line.size(), r, arena), nullptr) << c.line;
    EXPECT_EQ(r.host, c.host) << c.line;
    EXPECT_EQ(r.path, c.path) << c.line;
    EXPECT_EQ(r.status, c.status) << c.line;
    EXPECT_EQ(r.bytes, c.bytes) << c.line;
    EXPECT_EQ(r.agent, c.agent) << c.line;
  }
  Record ecs;
  ASSERT_EQ(parser.parse(cases[3].line, cases[3].line.size(), ecs, arena), nullptr);
  EXPECT_EQ(ecs.method, "POST");
  EXPECT_EQ(ecs.protocol, "1.1");
  EXPECT_EQ(ecs.referrer, "https://a/");
  EXPECT_DOUBLE_EQ(ecs.duration, 0.0025);
  EXPECT_EQ(ecs.time, 1717200000);
}

// Real files: Caddy's and Traefik's own logs. Counted independently: records, then those with a
// path, a user agent and an HTTP status (Caddy writes 0 for a request it aborted).
TEST(JsonParser, ReadsTheRealCaddyAndTraefikLogs) {
  JsonParser parser;
  struct Expected {
    const char* name;
    std::size_t records, paths, agents, statuses;
  };
  for (const Expected& e :
       {Expected{"caddy-logs.log", 11, 10, 10, 3}, Expected{"traefik_json.log", 6, 6, 2, 6},
        Expected{"traefik_base-http-scenario.log", 80, 80, 80, 80}}) {
    std::ifstream file(std::string(CONVEYOR_LOG_DATA) + "/crowdsec-json-access/" + e.name);
    ASSERT_TRUE(file) << e.name;
    std::size_t records = 0;
    std::size_t paths = 0;
    std::size_t agents = 0;
    std::size_t statuses = 0;
    for (std::string line; std::getline(file, line);) {
      if (line.empty() || line.front() != '{') continue;
      Arena arena;
      Record r;
      ASSERT_EQ(parser.parse(line, line.size(), r, arena), nullptr) << line;
      EXPECT_TRUE(r.has_time()) << line;
      ++records;
      paths += r.path.empty() ? 0 : 1;
      agents += r.agent.empty() ? 0 : 1;
      statuses += r.status >= 100 ? 1 : 0;
    }
    EXPECT_EQ(records, e.records) << e.name;
    EXPECT_EQ(paths, e.paths) << e.name;
    EXPECT_EQ(agents, e.agents) << e.name;
    EXPECT_EQ(statuses, e.statuses) << e.name;
  }
}

// The first key that maps wins, for numbers and times too; whatever is not taken is kept, under a
// name that no written field has.
TEST(JsonParser, FirstKeyWinsAndNothingIsLost) {
  JsonParser parser;
  Arena arena;
  const auto extra = [](const Record& r, std::string_view name) -> std::string_view {
    for (const Field& field : r.extra) {
      if (field.name == name) return field.value;
    }
    return "(none)";
  };
  Record r;
  std::string line =
      R"({"status":200,"code":404,"time":"2024-01-01T00:00:00Z","ts":5,"duration":0.5,"Duration":2000000000})";
  ASSERT_EQ(parser.parse(line, line.size(), r, arena), nullptr);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.time, 1704067200);
  EXPECT_DOUBLE_EQ(r.duration, 0.5);
  EXPECT_EQ(extra(r, "code"), "404");
  EXPECT_EQ(extra(r, "ts"), "5");
  EXPECT_EQ(extra(r, "Duration"), "2000000000");

  const std::string long_key(70, 'k');
  line =
      R"({")" + long_key +
      R"(":1,"host":{"name":"web-1"},"source":{"ip":"192.0.2.1","port":9},"path":[1,2],"agent":["x"]})";
  ASSERT_EQ(parser.parse(line, line.size(), r, arena), nullptr);
  EXPECT_EQ(extra(r, long_key), "1");
  EXPECT_EQ(r.host, "192.0.2.1");
  EXPECT_EQ(extra(r, "_host"), R"({"name":"web-1"})");              // not a second "host"
  EXPECT_EQ(extra(r, "source"), R"({"ip":"192.0.2.1","port":9})");  // read, and kept whole
  EXPECT_EQ(extra(r, "_path"), "[1,2]");                            // nothing taken from it
  EXPECT_EQ(r.agent, "x");
  EXPECT_EQ(extra(r, "_agent"), "(none)");

  // The names a tailed file's records carry too (Fluent Bit's Path_Key and Offset_Key add them).
  line = R"({"status":200,"offset":7,"file":"x","input":"i","line":3})";
  ASSERT_EQ(parser.parse(line, line.size(), r, arena), nullptr);
  EXPECT_EQ(extra(r, "_offset"), "7");
  EXPECT_EQ(extra(r, "_file"), "x");
  EXPECT_EQ(extra(r, "_input"), "i");
  EXPECT_EQ(extra(r, "_line"), "3");
  EXPECT_EQ(extra(r, "offset"), "(none)");
  EXPECT_EQ(extra(r, "file"), "(none)");
}

// One pass reads all of a line: whatever is not valid JSON, mapped or kept or neither, is rejected.
TEST(JsonParser, RejectsInvalidJsonAnywhereInTheLine) {
  JsonParser parser;
  Arena arena;
  for (const std::string& line : std::vector<std::string>{
           R"({"a":tru})", R"({"a":[1,]})", R"({"a":{"b":nul}})", R"({"a":1} x)", R"({"a":01})",
           R"({"request":{"headers":{"X":[1,2,}}}})", R"({"status":200,"x":"\q"})", R"({"a":1,})",
           R"({"path":"/x" "y":1})", R"({"extra":{"deep":[{"k":-}]}})"}) {
    Record r;
    EXPECT_NE(parser.parse(line, line.size(), r, arena), nullptr) << line;
  }
  const std::string good = R"({"status":200,"k":{"deep":[1,2.5e3,true,null,"s\n"]},"n":-0.5})";
  Record r;
  ASSERT_EQ(parser.parse(good, good.size(), r, arena), nullptr);
  ASSERT_EQ(r.extra.size(), 2U);
  EXPECT_EQ(r.extra[0].value, R"({"deep":[1,2.5e3,true,null,"s\n"]})");
  EXPECT_EQ(r.extra[1].value, "-0.5");
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
