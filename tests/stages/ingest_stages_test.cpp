// The ingest building blocks: line splitting, the file source (chunks, gzip, overlong lines, no
// final newline, CRLF, empty files, missing files), the filter language, JSON output, the summary,
// and the whole pipeline counting every line exactly once.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <zlib.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/framework.hpp"
#include "conveyor/framework/testing.hpp"
#include "conveyor/stages/aggregate_stage.hpp"
#include "conveyor/stages/file_source.hpp"
#include "conveyor/stages/filter.hpp"
#include "conveyor/stages/json_writer.hpp"
#include "conveyor/stages/line_splitter.hpp"
#include "conveyor/stages/live_totals.hpp"
#include "conveyor/stages/memory_source.hpp"
#include "conveyor/stages/parse_stage.hpp"
#include "conveyor/stages/parsers.hpp"
#include "conveyor/stages/summary.hpp"
#include "conveyor/stages/tallies.hpp"
#include "conveyor/stages/tally_stage.hpp"
#include "conveyor/stages/write_stage.hpp"
#include "json_reference.hpp"
#include "watchdog.hpp"

namespace {

using namespace conveyor::stages;
namespace fs = std::filesystem;

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  for_each_line(text, [&](std::string_view line, std::uint64_t) { lines.emplace_back(line); });
  return lines;
}

class TempFile {
 public:
  explicit TempFile(const std::string& contents, bool gzip = false)
      : path_(fs::temp_directory_path() /
              ("conveyor-stages-" + std::to_string(::getpid()) + "-" + std::to_string(next_++))) {
    if (gzip) {
      gzFile file = gzopen(path_.c_str(), "wb");
      gzwrite(file, contents.data(), static_cast<unsigned>(contents.size()));
      gzclose(file);
    } else {
      std::ofstream(path_, std::ios::binary) << contents;
    }
  }
  ~TempFile() { fs::remove(path_); }
  [[nodiscard]] std::string path() const { return path_.string(); }

 private:
  static inline int next_ = 0;
  fs::path path_;
};

// Every line the source hands out, with its number, plus the overlong ones.
struct Read {
  std::vector<std::pair<std::uint64_t, std::string>> lines;
  std::vector<OverlongLine> overlong;
  std::size_t chunks = 0;
};

Read read_all(FileSource& source) {
  Read read;
  while (auto chunk = source.next()) {
    ++read.chunks;
    EXPECT_GE(chunk->text.capacity(), chunk->text.size() + read_ahead_padding);
    for (auto& line : chunk->overlong)
      read.overlong.push_back(line);
    for_each_line(chunk->text, [&](std::string_view line, std::uint64_t i) {
      read.lines.emplace_back(chunk->first_line + i, std::string(line));
    });
  }
  return read;
}

TEST(LineSplitter, SplitsOnNewlinesAndDropsCarriageReturns) {
  EXPECT_EQ(lines_of("a\nb\r\n\nc"), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(lines_of(""), std::vector<std::string>{});
  EXPECT_EQ(lines_of("\n"), std::vector<std::string>{""});
  EXPECT_EQ(lines_of(std::string("x\0y\n", 4)), std::vector<std::string>{std::string("x\0y", 3)});
}

TEST(FileSource, ChunksHoldWholeLinesAndNumberThemAcrossChunks) {
  std::string text;
  for (int i = 1; i <= 5000; ++i)
    text += "line " + std::to_string(i) + (i % 3 == 0 ? "\r\n" : "\n");
  text += "last line without a newline";
  TempFile file(text);
  FileSource source({file.path()}, {.chunk_size = 4096, .max_line_length = 100});
  const Read read = read_all(source);
  ASSERT_EQ(read.lines.size(), 5001U);
  EXPECT_GT(read.chunks, 5U);
  for (int i = 1; i <= 5000; ++i) {
    EXPECT_EQ(read.lines[i - 1].first, static_cast<std::uint64_t>(i));
    EXPECT_EQ(read.lines[i - 1].second, "line " + std::to_string(i));
  }
  EXPECT_EQ(read.lines.back().second, "last line without a newline");
  EXPECT_EQ(source.bytes_read(), text.size());
  EXPECT_EQ(source.bytes_total(), text.size());
}

TEST(FileSource, ReadsGzipLikePlainText) {
  std::string text;
  for (int i = 0; i < 20000; ++i)
    text += "gzip line " + std::to_string(i) + "\n";
  TempFile plain(text);
  TempFile packed(text, true);
  FileSource a({plain.path()}, {.chunk_size = 8192});
  FileSource b({packed.path()}, {.chunk_size = 8192});
  const Read from_plain = read_all(a);
  const Read from_gzip = read_all(b);
  EXPECT_EQ(from_plain.lines, from_gzip.lines);
  EXPECT_EQ(from_gzip.lines.size(), 20000U);
  EXPECT_LT(b.bytes_read(), a.bytes_read()) << "compressed bytes are what is read";
}

TEST(FileSource, DropsLinesLongerThanTheLimitWithBoundedMemoryAndKeepsTheRest) {
  const std::string huge(5 << 20, 'x');  // 5 MB, far beyond a 64 KiB chunk
  const std::string text = "before\n" + huge + "\nafter\n" + std::string(300, 'y') + "\nend";
  TempFile file(text);
  FileSource source({file.path()}, {.chunk_size = 65536, .max_line_length = 200});
  const Read read = read_all(source);
  ASSERT_EQ(read.overlong.size(), 1U);
  EXPECT_EQ(read.overlong[0].line, 2U);
  EXPECT_EQ(read.overlong[0].offset, 7U);
  EXPECT_EQ(read.overlong[0].length, huge.size());
  EXPECT_EQ(read.overlong[0].head.size(), FileSource::overlong_head);
  // The 300-byte line fits in a chunk: the parse stage rejects it, the source passes it on.
  ASSERT_EQ(read.lines.size(), 4U);
  EXPECT_EQ(read.lines[0], (std::pair<std::uint64_t, std::string>{1, "before"}));
  EXPECT_EQ(read.lines[1], (std::pair<std::uint64_t, std::string>{3, "after"}));
  EXPECT_EQ(read.lines[2].first, 4U);
  EXPECT_EQ(read.lines[3], (std::pair<std::uint64_t, std::string>{5, "end"}));
}

TEST(FileSource, ALineAtTheLimitEndingInCrlfIsKeptWhereverAReadEnds) {
  // The limit counts a line without its line end, "\r\n" as well as "\n", and so must the check
  // of a line a read cut off: here the first read (4096 bytes) ends between the '\r' and the
  // '\n' of a line of exactly 100 bytes, and the file's last line is 100 bytes and a '\r'.
  std::string text;
  for (int i = 0; i < 39; ++i)
    text += std::string(99, 'f') + "\n";
  text += std::string(94, 'g') + "\n";
  ASSERT_EQ(text.size() + 100, 4095U);
  text += std::string(100, 'x') + "\r\n" + "short\r\n" + std::string(100, 'z') + "\r";
  TempFile file(text);
  FileSource source({file.path()}, {.chunk_size = 4096, .max_line_length = 100});
  const Read read = read_all(source);
  EXPECT_TRUE(read.overlong.empty()) << "line " << read.overlong.front().line;
  ASSERT_EQ(read.lines.size(), 43U);
  EXPECT_EQ(read.lines[40], (std::pair<std::uint64_t, std::string>{41, std::string(100, 'x')}));
  EXPECT_EQ(read.lines[41], (std::pair<std::uint64_t, std::string>{42, "short"}));
  EXPECT_EQ(read.lines[42], (std::pair<std::uint64_t, std::string>{43, std::string(100, 'z')}));
}

TEST(FileSource, EmptyFilesHaveNoChunksAndMissingFilesAreNamed) {
  TempFile empty("");
  FileSource source({empty.path()}, {});
  EXPECT_FALSE(source.next().has_value());
  try {
    FileSource missing({"/nonexistent/access.log"}, {});
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/access.log"), std::string::npos);
  }
  EXPECT_THROW(FileSource({fs::temp_directory_path().string()}, {}), InputError);
}

TEST(FileSource, ACorruptGzipStreamIsAnErrorAfterTheGoodLines) {
  std::string text;
  for (int i = 0; i < 50000; ++i)
    text += "line " + std::to_string(i) + "\n";
  TempFile packed(text, true);
  std::string bytes;
  {
    std::ifstream in(packed.path(), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes.resize(bytes.size() / 2);  // cut in the middle of the deflate stream
  TempFile cut(bytes);
  FileSource source({cut.path()}, {.chunk_size = 4096});
  std::size_t lines = 0;
  EXPECT_THROW(
      {
        while (auto chunk = source.next())
          lines += lines_of(chunk->text).size();
      },
      InputError);
  EXPECT_GT(lines, 0U);
}

TEST(FileSource, ConcatenatedGzipMembersReadThroughAndTrailingBytesAreIgnored) {
  TempFile first("one\ntwo\n", true);
  TempFile second("three\n", true);
  std::string bytes;
  for (const TempFile* part : {&first, &second}) {
    std::ifstream in(part->path(), std::ios::binary);
    bytes.append(std::istreambuf_iterator<char>(in), {});
  }
  bytes += std::string(16, '\0');  // padding some tools leave after the last member
  TempFile joined(bytes);
  FileSource source({joined.path()}, {});
  const Read read = read_all(source);
  ASSERT_EQ(read.lines.size(), 3U);
  EXPECT_EQ(read.lines[2].second, "three");
}

TEST(FileSource, ATruncatedGzipHeaderIsAnErrorNamingTheFile) {
  TempFile cut(std::string("\x1f\x8b\x08", 3));
  FileSource source({cut.path()}, {});
  try {
    (void)source.next();
    FAIL() << "a truncated gzip stream read without an error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(cut.path()), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("ends early"), std::string::npos) << error.what();
  }
}

// A pipe whose write end the test holds, read through /dev/fd as a FileSource input.
class Pipe {
 public:
  Pipe() {
    if (::pipe(fds_) != 0) throw std::runtime_error("pipe failed");
  }
  ~Pipe() {
    close_writer();
    ::close(fds_[0]);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  [[nodiscard]] std::string reader_path() const { return "/dev/fd/" + std::to_string(fds_[0]); }
  void write(const std::string& text) const {
    ASSERT_EQ(::write(fds_[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  void close_writer() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
};

TEST(FileSource, LinesFromAPipeComeOutBeforeTheWriterCloses) {
  conveyor::testing::Watchdog watchdog(std::chrono::seconds(30));
  Pipe pipe;
  pipe.write("first\nsecond\nthird without its end");
  FileSource source({pipe.reader_path()}, {});
  std::optional<Chunk> chunk = source.next();  // must not wait for a full chunk
  ASSERT_TRUE(chunk);
  EXPECT_EQ(lines_of(chunk->text), (std::vector<std::string>{"first", "second"}));
  pipe.write(" and more\n");
  pipe.close_writer();
  chunk = source.next();
  ASSERT_TRUE(chunk);
  EXPECT_EQ(lines_of(chunk->text), (std::vector<std::string>{"third without its end and more"}));
  EXPECT_FALSE(source.next());
}

TEST(FileSource, AOneByteFirstLineFromAPipeDoesNotWaitForASecondByte) {
  conveyor::testing::Watchdog watchdog(std::chrono::seconds(30));
  Pipe pipe;
  pipe.write("\n");
  FileSource source({pipe.reader_path()}, {});
  std::optional<Chunk> chunk = source.next();
  ASSERT_TRUE(chunk);
  EXPECT_EQ(lines_of(chunk->text), std::vector<std::string>{""});
}

// The unfinished line is handed out as cut short (a dead letter), not as a line to parse: its end,
// which was never read, might have changed what it says.
TEST(FileSource, CancelEndsAReadWaitingOnAQuietPipeAndKeepsWhatWasRead) {
  conveyor::testing::Watchdog watchdog(std::chrono::seconds(30));
  Pipe pipe;
  TempFile later("never read\n");
  pipe.write("one\ntwo\nhalf a li");
  FileSource source({pipe.reader_path(), later.path()}, {});
  ASSERT_TRUE(source.next());
  std::vector<std::string> after_cancel;
  std::vector<OverlongLine> cut;
  std::thread reader([&] {
    while (auto chunk = source.next()) {
      for (auto& line : lines_of(chunk->text))
        after_cancel.push_back(line);
      for (OverlongLine& line : chunk->overlong)
        cut.push_back(std::move(line));
    }
  });
  // The reader now waits in a read; give it time to get there, although a cancel that comes
  // first must end the stream just the same.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  source.cancel();
  reader.join();
  EXPECT_TRUE(after_cancel.empty());
  ASSERT_EQ(cut.size(), 1U);
  EXPECT_TRUE(cut[0].interrupted);
  EXPECT_EQ(cut[0].head, "half a li");
  EXPECT_EQ(cut[0].line, 3U);
  EXPECT_FALSE(source.next());
}

TEST(Filter, EvaluatesComparisonsAndBooleans) {
  Record r;
  r.status = 503;
  r.path = "/api/v1/items";
  r.method = "POST";
  r.duration = 0.7;
  const auto holds = [&](const char* text) { return Filter::parse(text).matches(r); };
  EXPECT_TRUE(holds("status>=500"));
  EXPECT_FALSE(holds("status<500"));
  EXPECT_TRUE(holds("path~^/api"));
  EXPECT_FALSE(holds("path!~^/api"));
  EXPECT_TRUE(holds("status >= 500 and path ~ '^/api' && method == POST"));
  EXPECT_TRUE(holds("status == 200 or method=\"POST\""));
  EXPECT_TRUE(holds("not (status < 500) and !(method==GET)"));
  EXPECT_TRUE(holds("duration > 0.5"));
  EXPECT_FALSE(holds("bytes > 0")) << "absent fields compare false";
  EXPECT_FALSE(holds("agent"));
  EXPECT_TRUE(holds("path"));
  EXPECT_TRUE(Filter::parse_all({"status>=500", "method==POST"}).matches(r));
  EXPECT_FALSE(Filter::parse_all({"status>=500", "method==GET"}).matches(r));
  EXPECT_TRUE(Filter().matches(r));
}

// A text field the record does not have compares false with != too, as a number does; '&&' and
// '||' end a bare word; a number matched by a regular expression has its fraction; a JSON number
// kept under its key compares as a number.
TEST(Filter, MissingFieldsBareWordsAndNumbersAsText) {
  Record r;
  r.status = 404;
  r.method = "GET";
  r.path = "/web";
  r.duration = 0.7;
  const std::string latency = "10";
  const std::string tag = "9z";
  r.extra.push_back(conveyor::stages::Field{"latency", latency, true});
  r.extra.push_back(conveyor::stages::Field{"tag", tag, false});
  const auto holds = [&](const char* text) { return Filter::parse(text).matches(r); };
  EXPECT_FALSE(holds("referrer != x"));
  EXPECT_FALSE(holds("status != 200 and user != admin"));
  EXPECT_FALSE(holds("missing != 3"));
  EXPECT_TRUE(holds("method==GET||method==HEAD"));
  EXPECT_TRUE(holds("method==POST||status==404"));
  EXPECT_FALSE(holds("method==GET&&status==500"));
  EXPECT_FALSE(holds("path~^/api||status==500")) << "a regular expression ends at || too";
  EXPECT_TRUE(holds("duration ~ '^0\\.7$'"));
  EXPECT_TRUE(holds("status ~ '^404$'"));
  EXPECT_TRUE(holds("latency > 9"));
  EXPECT_TRUE(holds("latency == 10.0"));
  EXPECT_FALSE(holds("latency < 9"));
  EXPECT_TRUE(holds("latency ~ ^1"));
  EXPECT_TRUE(holds("tag > 9")) << "a string compares as text: \"9z\" > \"9\"";
}

TEST(Filter, BadExpressionsSayWhereAndWhat) {
  const auto position = [](const char* text) {
    try {
      (void)Filter::parse(text);
    } catch (const FilterError& error) {
      EXPECT_NE(std::string(error.what()), "");
      return static_cast<long>(error.position());
    }
    return -1L;
  };
  EXPECT_EQ(position("status>="), 8);
  EXPECT_EQ(position("status>=abc"), 8);
  EXPECT_EQ(position("(status>=500"), 12);
  EXPECT_EQ(position("path~'['"), 5);
  EXPECT_EQ(position("status>=500 foo"), 12);
  EXPECT_EQ(position(""), 0);
  EXPECT_EQ(position("path~'unclosed"), 14);
  EXPECT_EQ(position(std::string(200, '(').c_str()), 64);
}

TEST(JsonWriter, EscapesControlBytesAndReplacesInvalidUtf8) {
  std::string out;
  append_json_string(out, std::string("a\"b\\c\n\x01\xff\xc3\xa9\0z", 12));
  EXPECT_EQ(out, R"("a\"b\\c\n\u0001\ufffdé\u0000z")");
  simdjson::dom::parser parser;
  EXPECT_NO_THROW((void)parser.parse(out));
  EXPECT_EQ(format_time(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(format_time(1793491200), "2026-11-01T00:00:00Z");
  EXPECT_EQ(format_time(-1), "1969-12-31T23:59:59Z");
}

TEST(JsonWriter, EscapesWhateverWordOfTheStringTheByteFallsIn) {
  // The escaper skips plain ASCII sixteen (in the tail, eight) bytes at a time: put each kind of
  // byte at every offset of both.
  const std::pair<std::string, std::string> cases[] = {{"\"", "\\\""},
                                                       {"\\", "\\\\"},
                                                       {"\n", "\\n"},
                                                       {std::string(1, '\0'), "\\u0000"},
                                                       {"\x1f", "\\u001f"},
                                                       {"\x7f", "\x7f"},
                                                       {"\xc3\xa9", "\xc3\xa9"},
                                                       {"\xff", "\\ufffd"},
                                                       {"\xe2\x82", "\\ufffd\\ufffd"},
                                                       {" ", " "}};
  for (const auto& [byte, escaped] : cases) {
    for (std::size_t at = 0; at <= 40; ++at) {
      const std::string text = std::string(at, 'a') + byte + std::string(40 - at, 'b');
      std::string out;
      append_json_string(out, text);
      EXPECT_EQ(out, '"' + std::string(at, 'a') + escaped + std::string(40 - at, 'b') + '"')
          << "offset " << at;
    }
  }
  EXPECT_EQ(format_time(253402300799), "9999-12-31T23:59:59Z");
}

// Random strings, mostly plain with the bytes that need a look mixed in, against a byte-at-a-time
// reference (the fuzzer json_string_fuzzer does the same on any bytes).
TEST(JsonWriter, EscapesAsAByteAtATimeReferenceDoes) {
  std::mt19937 random(7);
  const std::string special =
      std::string("\"\\\n\r\t\x01\x1f\x7f\x80\xbf\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xff", 20) +
      std::string(1, '\0');
  for (int round = 0; round < 20'000; ++round) {
    std::string text(random() % 100, 'x');
    for (char& c : text) {
      if (random() % 8 == 0) c = special[random() % special.size()];
    }
    std::string out;
    append_json_string(out, text);
    ASSERT_EQ(out, conveyor::testing::reference_json_string(text)) << round;
  }
}

TEST(JsonWriter, WritesARecordsFieldsInTheirOrderAndItsExtraFieldsAfter) {
  const std::string line =
      R"(10.0.0.1 - bob [01/Nov/2026:00:00:00 +0000] "GET /a\"b HTTP/1.1" 200 12 "-" "curl/8")";
  Record record;
  ASSERT_EQ(parse_combined(line, record), nullptr);
  record.extra = {{"tag", "t\"1", false}, {"upstream", "[1,2]", true}};
  const Input input{"access.log", 0, Format::combined, false};
  std::string out;
  append_record(out, record, input, 7, Projection{});  // a referrer of "-" is none
  EXPECT_EQ(out, R"({"time":"2026-11-01T00:00:00Z","host":"10.0.0.1","user":"bob","method":"GET",)"
                 R"("path":"/a\\\"b","protocol":"HTTP/1.1","status":200,"bytes":12,)"
                 R"("agent":"curl/8","tag":"t\"1","upstream":[1,2]})"
                 "\n");
  simdjson::dom::parser parser;
  EXPECT_NO_THROW((void)parser.parse(out));
}

TEST(JsonWriter, AProjectionWritesWhatItNamesInItsOrderAndSkipsWhatTheRecordLacks) {
  Record record;
  record.host = "h";
  record.status = 503;
  record.extra = {{"region", "eu", false}};
  const Input input{"in\"put.log", 0, Format::json, false};
  std::string out;
  append_record(out, record, input, 42,
                Projection{{"status", "line", "input", "region", "path", "nonesuch", "host"}});
  EXPECT_EQ(out, R"({"status":503,"line":42,"input":"in\"put.log","region":"eu","host":"h"})"
                 "\n");
  // A record with none of the fields asked for is still an object.
  out.clear();
  append_record(out, Record{}, input, 1, Projection{{"path"}});
  EXPECT_EQ(out, "{}\n");
}

TEST(JsonWriter, WritesADeadLetterWithItsPlaceReasonAndRawText) {
  std::string out;
  append_dead_letter(out, Input{"a.log", 0, Format::combined, false}, 3, 120, "bad \"size\"", 9,
                     "x\ty");
  EXPECT_EQ(out, R"({"input":"a.log","line":3,"offset":120,"reason":"bad \"size\"","length":9,)"
                 R"("raw":"x\ty"})"
                 "\n");
}

// Line 0: the position is unknown (a chunk that joins several streams), and neither a dead letter
// nor a record claims one.
TEST(JsonWriter, AnUnknownPlaceIsLeftOut) {
  const Input input{"tcp", 0, Format::combined, false};
  std::string out;
  append_dead_letter(out, input, 0, conveyor::stages::unknown_offset, "bad", 3, "xyz");
  EXPECT_EQ(out, R"({"input":"tcp","reason":"bad","length":3,"raw":"xyz"})"
                 "\n");
  out.clear();
  Record record;
  record.status = 200;
  append_record(out, record, input, 0, Projection{{"status", "line", "offset"}}, 10);
  EXPECT_EQ(out, R"({"status":200})"
                 "\n");
  // A tailed file's record says where it was read, and a dead letter its offset alone when its
  // line number is unknown.
  Input tailed = input;
  tailed.file = "/var/log/app.log";
  out.clear();
  append_record(out, record, tailed, 0, Projection{}, 120);
  EXPECT_EQ(out, R"({"status":200,"input":"tcp","file":"/var/log/app.log","offset":120})"
                 "\n");
  out.clear();
  append_dead_letter(out, tailed, 0, 120, "bad", 3, "xyz");
  EXPECT_EQ(out, R"({"input":"tcp","offset":120,"reason":"bad","length":3,"raw":"xyz"})"
                 "\n");
}

// One writer serves a chunk's records: each is written as append_record writes it alone, and a
// tailed file's record with none of its own fields still begins its object with "input".
TEST(JsonWriter, ARecordWriterWritesEachRecordAsAppendRecordDoes) {
  Input tailed{"files", 0, Format::combined, false};
  tailed.file = "/var/log/a \"b\".log";
  Record full;
  full.host = "h";
  full.status = 200;
  full.extra = {{"region", "eu", false}};
  for (const Projection& projection :
       {Projection{}, Projection{{"offset", "region", "file", "host", "nonesuch"}}}) {
    const RecordWriter writer(tailed, projection);
    std::string together;
    std::string alone;
    for (const Record& record : {full, Record{}, full}) {
      writer.append(together, record, 5, 300);
      append_record(alone, record, tailed, 5, projection, 300);
    }
    EXPECT_EQ(together, alone);
  }
  std::string out;
  RecordWriter(tailed, Projection{}).append(out, Record{}, 0, conveyor::stages::unknown_offset);
  EXPECT_EQ(out, R"({"input":"files","file":"/var/log/a \"b\".log"})"
                 "\n");
  simdjson::dom::parser parser;
  EXPECT_NO_THROW((void)parser.parse(out));
}

TEST(Summary, PartialsMergeToWhatOneSummaryOfEverythingSays) {
  Summary whole;
  Summary a;
  Summary b;
  for (int i = 0; i < 1000; ++i) {
    Record r;
    r.status = i % 3 == 0 ? 404 : 200;
    r.bytes = i;
    r.time = 1000 * 60 + i;
    r.duration = i / 1000.0;
    r.path = i % 2 == 0 ? "/even" : "/odd";
    whole.add(r);
    (i < 400 ? a : b).add(r);
  }
  a.merge(std::move(b));
  EXPECT_EQ(a.to_json(5), whole.to_json(5));
  EXPECT_EQ(a.by_status[404], 334U);
  EXPECT_EQ(a.bytes, 999U * 1000 / 2);
  EXPECT_NEAR(a.duration.quantile(0.5), 0.5, 0.01);
  EXPECT_NEAR(a.duration.quantile(0.99), 0.99, 0.02);
  simdjson::dom::parser parser;
  EXPECT_NO_THROW((void)parser.parse(a.to_json(5)));
}

// Byte counts come from the input, which may claim up to 9.2e18 a line: the total stops at the
// largest value rather than wrapping round to a small one, in one summary and in a merge.
TEST(Summary, TheByteTotalDoesNotWrapRound) {
  Summary a;
  Summary b;
  Record r;
  r.bytes = 9'000'000'000'000'000'000;
  for (int i = 0; i < 3; ++i)
    a.add(r);
  EXPECT_EQ(a.bytes, std::numeric_limits<std::uint64_t>::max());
  b.add(r);
  b.add(r);
  Summary c;
  c.add(r);
  b.merge(std::move(c));
  EXPECT_EQ(b.bytes, std::numeric_limits<std::uint64_t>::max());
}

// The parse stage as a chain on its own, run by conveyor::testing::run: every chunk comes back as
// one batch, in the chunks' order, and every line is counted once.
TEST(ParseStage, AsAChainCountsEveryLineOfEveryChunkInOrder) {
  conveyor::testing::Watchdog watchdog;
  std::string text;
  for (int i = 0; i < 2000; ++i) {
    text += i % 10 == 0 ? std::string("not an access log line\n")
                        : "10.0.0." + std::to_string(i % 9) +
                              " - - [01/Nov/2026:00:00:10 +0000] \"GET /p HTTP/1.1\" 200 " +
                              std::to_string(i) + " \"-\" \"agent\"\n";
  }
  MemorySource source("test", text, {.chunk_size = 1024});
  std::vector<Chunk> chunks;
  while (auto chunk = source.next())
    chunks.push_back(std::move(*chunk));
  const std::size_t chunk_count = chunks.size();
  ASSERT_GT(chunk_count, 10U);

  auto config = std::make_shared<ParseConfig>();
  const auto parse =
      conveyor::chain<Chunk>() |
      conveyor::stage(ParseStage(config), {.mode = conveyor::Mode::parallel, .workers = 3});
  const std::vector<Batch> batches = conveyor::testing::run(parse, std::move(chunks));

  ASSERT_EQ(batches.size(), chunk_count);
  LineCounts total;
  std::uint64_t next_line = 1;
  for (const Batch& batch : batches) {
    EXPECT_EQ(batch.storage->chunk.first_line, next_line);
    next_line += batch.counts.lines;
    total.lines += batch.counts.lines;
    total.records += batch.counts.records;
    total.rejected += batch.counts.rejected;
  }
  EXPECT_EQ(total.lines, 2000U);
  EXPECT_EQ(total.rejected, 200U);
  EXPECT_EQ(total.records, 1800U);
}

// A chunk's input may bring a line limit of its own (a tailed file's max_line_bytes): a line
// over it is rejected as too long even where the pipeline's limit is higher, so that a long line
// is dead-lettered alike whether a read held it whole or cut it across two reads.
TEST(ParseStage, AnInputsOwnLineLimitRejectsTheLinesOverIt) {
  conveyor::testing::Watchdog watchdog;
  const std::string good =
      "10.0.0.1 - - [01/Nov/2026:00:00:10 +0000] \"GET /p HTTP/1.1\" 200 5 \"-\" \"agent\"\n";
  const std::string long_line = "10.0.0.2 - - [01/Nov/2026:00:00:10 +0000] \"GET /" +
                                std::string(300, 'x') + " HTTP/1.1\" 200 5 \"-\" \"agent\"\n";
  MemorySource source("test", good + long_line + good, {.chunk_size = 4096});
  std::optional<Chunk> chunk = source.next();
  ASSERT_TRUE(chunk.has_value());
  const auto parse_with = [&](std::size_t input_limit) {
    Chunk copy;
    copy.text = chunk->text;
    copy.first_line = chunk->first_line;
    copy.offset = chunk->offset;
    Input input = *chunk->input;
    input.max_line_length = input_limit;
    copy.input = std::make_shared<const Input>(std::move(input));
    std::vector<Chunk> chunks;
    chunks.push_back(std::move(copy));
    const auto parse =
        conveyor::chain<Chunk>() | conveyor::stage(ParseStage(std::make_shared<ParseConfig>()),
                                                   {.mode = conveyor::Mode::serial_in_order});
    std::vector<Batch> batches = conveyor::testing::run(parse, std::move(chunks));
    EXPECT_EQ(batches.size(), 1U);
    return batches.empty() ? Batch{} : std::move(batches.front());
  };
  const Batch unlimited = parse_with(0);  // the pipeline's 64 KiB alone
  EXPECT_EQ(unlimited.counts.records, 3U);
  const Batch limited = parse_with(200);
  EXPECT_EQ(limited.counts.records, 2U);
  EXPECT_EQ(limited.counts.rejected, 1U);
  EXPECT_NE(limited.dead_letters.find("line too long"), std::string::npos);
}

// The whole chain, as log-ingest builds it: every line is counted once, as a record, a blank,
// a filtered-out record or a dead letter, and the records written are valid JSON.
TEST(IngestPipeline, EveryLineIsCountedExactlyOnceAndEveryRecordWrittenParses) {
  conveyor::testing::Watchdog watchdog;
  std::string text;
  std::uint64_t good = 0;
  for (int i = 0; i < 30000; ++i) {
    if (i % 97 == 0) {
      text += "garbage \x01\xfe line\n";
    } else if (i % 101 == 0) {
      text += "\n";
    } else {
      text += "10.0.0." + std::to_string(i % 50) +
              " - - [01/Nov/2026:00:00:" + std::to_string(10 + i % 50) + " +0000] \"GET /p" +
              std::to_string(i % 7) + " HTTP/1.1\" " + (i % 5 == 0 ? "500" : "200") + " " +
              std::to_string(i) + " \"-\" \"agent\"\n";
      ++good;
    }
  }
  auto config = std::make_shared<ParseConfig>();
  config->filter = Filter::parse("status>=500");
  config->partitions = 8;
  const std::string records_path = (fs::temp_directory_path() / "conveyor-ingest-records").string();
  auto outputs = std::make_shared<Outputs>();
  outputs->records = {std::fopen(records_path.c_str(), "wb"), records_path, 0};
  outputs->dead_letters = {nullptr, "", 0};
  config->write_dead_letters = false;
  MemorySource source("test", text, {.chunk_size = 8192});
  Summary summary;
  auto live = std::make_shared<conveyor::Shared<LiveTotals>>(
      "live-totals", std::vector<std::string>{"update", "snapshot"}, LiveTotals(2));
  // A reader that takes snapshots all along, as a metrics scrape does: each must be a moment's
  // consistent count, never more than the end's.
  std::atomic<bool> done{false};
  std::uint64_t snapshots = 0;
  std::uint64_t last_lines = 0;
  bool monotonic = true;
  std::thread reader([&] {
    while (!done.load(std::memory_order_acquire)) {
      const LiveTotals::Counts now =
          live->access(LiveTotals::snapshot, [](const LiveTotals& t) { return t.total(); });
      monotonic = monotonic && now.lines >= last_lines;
      last_lines = now.lines;
      ++snapshots;
      std::this_thread::yield();
    }
  });
  conveyor::Pipeline pipeline({.name = "ingest-test"});
  pipeline.track(*live);
  pipeline.source([&]() { return source.next(); }) |
      conveyor::stage(ParseStage(config), {.mode = conveyor::Mode::parallel,
                                           .workers = 3,
                                           .channel = conveyor::Channel::queue(2)}) |
      conveyor::stage(WriteStage(outputs), {.mode = conveyor::Mode::serial_in_order}) |
      conveyor::stage(AggregateStage({}, live),
                      {.mode = conveyor::Mode::parallel,
                       .workers = 2,
                       .dispatch = conveyor::Dispatch::by_partition(&Slice::partition)}) |
      conveyor::sink([&](Summary partial) { summary.merge(std::move(partial)); });
  pipeline.run();
  done.store(true, std::memory_order_release);
  reader.join();
  std::fclose(outputs->records.file);

  const LineCounts& c = summary.counts;
  EXPECT_EQ(c.lines, 30000U);
  EXPECT_EQ(c.lines, c.blank + c.records + c.filtered + c.rejected);
  EXPECT_EQ(c.rejected, 310U);  // i % 97 == 0
  EXPECT_EQ(c.records + c.filtered, good);
  EXPECT_EQ(summary.by_status[500], c.records);
  EXPECT_EQ(summary.by_status[200], 0U);

  // The live totals, summed over the workers' slots, say what the summary says.
  const LiveTotals::Counts live_total =
      live->access(LiveTotals::snapshot, [](const LiveTotals& t) { return t.total(); });
  EXPECT_EQ(live_total.lines, c.lines);
  EXPECT_EQ(live_total.records, c.records);
  EXPECT_EQ(live_total.rejected, c.rejected);
  EXPECT_EQ(live_total.filtered, c.filtered);
  EXPECT_EQ(live_total.by_status_class[4], c.records);  // 5xx
  EXPECT_EQ(live_total.bytes, summary.bytes);
  EXPECT_TRUE(monotonic);
  EXPECT_GT(snapshots, 0U);
  const conveyor::PipelineStats stats = pipeline.stats();
  ASSERT_EQ(stats.resources.size(), 1U);
  EXPECT_EQ(stats.resources[0].name, "live-totals");

  std::ifstream written(records_path);
  simdjson::dom::parser parser;
  std::uint64_t parsed = 0;
  for (std::string line; std::getline(written, line); ++parsed) {
    const simdjson::dom::element record = parser.parse(line);
    EXPECT_EQ(std::int64_t(record["status"]), 500);
  }
  EXPECT_EQ(parsed, c.records);
  fs::remove(records_path);
}

// Four ways to count the same lines make the same summary, with live totals that agree with it:
// - log-ingest's own shape: a tee after the parse stage, whose TallyStage branch is fused into it
//   (each parse worker counts its batches into Tallies) and whose WriteSink branch writes;
// - the same tee with TallyStage on workers of its own (Tallies::count locks the parse worker's
//   slot);
// - ParseStage counting into Tallies itself, the writer only writing;
// - the writer handing partitions to keyed aggregation workers.
enum class Counting { tee_fused, tee_own_workers, in_parse, aggregation };

TEST(IngestPipeline, ParseWorkersCountIntoTalliesWhatAggregationWorkersWould) {
  conveyor::testing::Watchdog watchdog;
  std::string text;
  for (int i = 0; i < 20000; ++i) {
    if (i % 89 == 0) {
      text += "not a log line\n";
      continue;
    }
    text += "10.0.1." + std::to_string(i % 300) +
            " - - [01/Nov/2026:00:" + std::to_string(10 + i % 40) + ":00 +0000] \"GET /p" +
            std::to_string(i % 500) + " HTTP/1.1\" " + (i % 7 == 0 ? "404" : "200") + " " +
            std::to_string(i) + " \"-\" \"agent\"\n";
  }
  const auto run = [&](Counting counting) {
    const bool tallied = counting != Counting::aggregation;
    auto config = std::make_shared<ParseConfig>();
    config->partitions = 4;
    config->write_dead_letters = false;
    auto outputs = std::make_shared<Outputs>();
    auto live = std::make_shared<conveyor::Shared<LiveTotals>>(
        "live-totals", std::vector<std::string>{"update", "snapshot"}, LiveTotals(3));
    auto tallies = std::make_shared<Tallies>(3, SummaryOptions{}, live);
    MemorySource source("test", text, {.chunk_size = 4096});
    Summary summary;
    conveyor::Pipeline pipeline({.name = "tallies-test"});
    auto chunks = pipeline.source([&]() { return source.next(); });
    if (counting == Counting::tee_fused || counting == Counting::tee_own_workers) {
      using Parsed = std::shared_ptr<const Batch>;
      auto parse = [parser = ParseStage(config)](Chunk chunk,
                                                 conveyor::Emit<Parsed>& emit) mutable {
        emit(std::make_shared<const Batch>(parser.parse(std::move(chunk), emit.worker())));
      };
      const conveyor::StageOptions count =
          counting == Counting::tee_fused
              ? conveyor::StageOptions{.mode = conveyor::Mode::parallel,
                                       .fuse = conveyor::Fuse::always}
              : conveyor::StageOptions{.mode = conveyor::Mode::parallel, .workers = 2};
      std::move(chunks) |
          conveyor::stage(std::move(parse), {.mode = conveyor::Mode::parallel, .workers = 3}) |
          conveyor::tee(
              conveyor::chain<Parsed>() | conveyor::sink(TallyStage(tallies), count),
              conveyor::chain<Parsed>() |
                  conveyor::sink(WriteSink(outputs), {.mode = conveyor::Mode::serial_in_order}));
      pipeline.run();
      summary = tallies->merged();
      const conveyor::PipelineStats stats = pipeline.stats();
      EXPECT_EQ(stats.stages.size(), 4U);
      return summary.to_json(10);
    }
    auto parsed = std::move(chunks) |
                  conveyor::stage(ParseStage(config, tallied ? tallies : nullptr),
                                  {.mode = conveyor::Mode::parallel, .workers = 3}) |
                  conveyor::stage(WriteStage(outputs), {.mode = conveyor::Mode::serial_in_order});
    if (tallied) {
      std::move(parsed) | conveyor::sink([](const Slice&) {});
    } else {
      std::move(parsed) |
          conveyor::stage(AggregateStage({}, live),
                          {.mode = conveyor::Mode::parallel,
                           .workers = 3,
                           .dispatch = conveyor::Dispatch::by_partition(&Slice::partition)}) |
          conveyor::sink([&](Summary partial) { summary.merge(std::move(partial)); });
    }
    pipeline.run();
    if (tallied) summary = tallies->merged();
    const LiveTotals::Counts total =
        live->access(LiveTotals::snapshot, [](const LiveTotals& t) { return t.total(); });
    EXPECT_EQ(total.lines, summary.counts.lines);
    EXPECT_EQ(total.records, summary.counts.records);
    EXPECT_EQ(total.rejected, summary.counts.rejected);
    EXPECT_EQ(total.bytes, summary.bytes);
    EXPECT_EQ(total.by_status_class[3], summary.by_status[404]);
    return summary.to_json(10);
  };
  const std::string tallied = run(Counting::in_parse);
  const std::string aggregated = run(Counting::aggregation);
  EXPECT_EQ(tallied, aggregated);
  EXPECT_EQ(run(Counting::tee_fused), aggregated);
  EXPECT_EQ(run(Counting::tee_own_workers), aggregated);
  EXPECT_NE(tallied.find(R"("lines":20000,)"), std::string::npos) << tallied;
  EXPECT_NE(tallied.find(R"("rejected":225,)"), std::string::npos) << tallied;
}

}  // namespace
