// FrameDecoder (RFC 6587): both framings on one connection, real syslog lines through every
// chunking, oversized frames skipped to their ends with the next frame intact, broken octet
// counts, the end of the stream, and the memory bound.
#include "conveyor/stages/frame_decoder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

using conveyor::stages::FrameDecoder;
using conveyor::stages::FrameLimits;
using conveyor::stages::FrameRejection;
using conveyor::stages::FrameSink;
using conveyor::stages::Framing;

// Records what the decoder delivers: "message" for a frame, "!oversized 100 <head>" or
// "!truncated 10 <head>" for a rejection.
class Recorder final : public FrameSink {
 public:
  void frame(std::string_view message) override { events.emplace_back(message); }
  void rejected(FrameRejection why, std::string_view head, std::uint64_t length) override {
    events.push_back(std::string(why == FrameRejection::oversized ? "!oversized " : "!truncated ") +
                     std::to_string(length) + " " + std::string(head));
  }
  std::vector<std::string> events;
};

// Feeds `stream` in pieces of the given sizes (the last piece takes the rest), then finishes (or
// cuts, with `cut_off`). Checks the memory bound after every piece.
std::vector<std::string> decode(std::string_view stream, const std::vector<std::size_t>& pieces,
                                FrameLimits limits = {}, Framing framing = Framing::rfc6587,
                                bool cut_off = false) {
  FrameDecoder decoder(limits, framing);
  Recorder sink;
  std::size_t at = 0;
  for (std::size_t i = 0; at < stream.size(); ++i) {
    const std::size_t size = i < pieces.size() ? pieces[i] : stream.size() - at;
    decoder.feed(stream.substr(at, size), sink);
    at += std::min(size, stream.size() - at);
    EXPECT_LE(decoder.held(), limits.max_frame_bytes + limits.dead_letter_head);
  }
  if (cut_off) {
    decoder.cut(sink);
  } else {
    decoder.finish(sink);
  }
  return sink.events;
}

std::vector<std::string> decode_whole(std::string_view stream, FrameLimits limits = {}) {
  return decode(stream, {}, limits);
}

std::vector<std::string> decode_bytewise(std::string_view stream, FrameLimits limits = {}) {
  return decode(stream, std::vector<std::size_t>(stream.size(), 1), limits);
}

std::string counted(std::string_view message) {
  return std::to_string(message.size()) + " " + std::string(message);
}

TEST(FrameDecoder, BothFramingsOnOneConnection) {
  const std::string stream =
      counted("<13>hello a") + "<14>line two\n" + counted("<15>third") + "<16>last\n";
  const std::vector<std::string> expected{"<13>hello a", "<14>line two", "<15>third", "<16>last"};
  EXPECT_EQ(decode_whole(stream), expected);
  EXPECT_EQ(decode_bytewise(stream), expected);
}

// The first 2,000 non-empty lines of a log in tests/data/logs.
std::vector<std::string> real_lines(const std::string& path) {
  std::ifstream file(std::string(CONVEYOR_LOG_DATA) + "/" + path);
  EXPECT_TRUE(file) << path;
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line) && lines.size() < 2000;) {
    if (!line.empty()) lines.push_back(line);
  }
  EXPECT_GT(lines.size(), 100U) << path;
  return lines;
}

// `stream` decodes to `lines` fed whole, byte by byte, and cut at random 20 ways.
void expect_every_chunking(const std::string& stream, const std::vector<std::string>& lines,
                           Framing framing, unsigned seed) {
  EXPECT_EQ(decode(stream, {}, {}, framing), lines);
  EXPECT_EQ(decode(stream, std::vector<std::size_t>(stream.size(), 1), {}, framing), lines);
  std::mt19937 random(seed);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::size_t> pieces;
    for (std::size_t total = 0; total < stream.size();) {
      pieces.push_back(std::uniform_int_distribution<std::size_t>(1, 700)(random));
      total += pieces.back();
    }
    EXPECT_EQ(decode(stream, pieces, {}, framing), lines) << "round " << round;
  }
}

// Every line of a real auth.log, framed alternately by count and by LF (some with CRLF), comes
// out once and in order however the stream is cut.
TEST(FrameDecoder, RealLinesThroughEveryChunking) {
  const std::vector<std::string> lines = real_lines("elastic-auth-log/auth.log");
  std::string stream;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    stream += i % 3 == 0 ? counted(lines[i]) : lines[i] + (i % 3 == 1 ? "\n" : "\r\n");
  }
  expect_every_chunking(stream, lines, Framing::rfc6587, 7);
}

// Plain lines in any format: those of a real access log start with digits, which octet counting
// would take for counts.
TEST(FrameDecoder, PlainLinesThatStartWithDigits) {
  const std::vector<std::string> lines = real_lines("elastic-apache-combined/apache_logs");
  ASSERT_TRUE(lines.front().front() >= '1' && lines.front().front() <= '9');
  std::string stream;
  for (std::size_t i = 0; i < lines.size(); ++i)
    stream += lines[i] + (i % 2 == 0 ? "\n" : "\r\n");
  expect_every_chunking(stream, lines, Framing::lines, 11);
  EXPECT_EQ(decode("12 abc\n3x\n", {}, {}, Framing::lines),
            (std::vector<std::string>{"12 abc", "3x"}));
}

TEST(FrameDecoder, OversizedCountedFrameIsSkippedAndTheNextOneArrives) {
  const FrameLimits limits{.max_frame_bytes = 16, .dead_letter_head = 4};
  const std::string stream = counted(std::string(40, 'x')) + counted("<1>next") + "<2>line\n";
  const std::vector<std::string> expected{"!oversized 40 xxxx", "<1>next", "<2>line"};
  EXPECT_EQ(decode_whole(stream, limits), expected);
  EXPECT_EQ(decode_bytewise(stream, limits), expected);
}

TEST(FrameDecoder, OversizedLineIsSkippedToItsLf) {
  const FrameLimits limits{.max_frame_bytes = 16, .dead_letter_head = 4};
  const std::string stream = "abcd" + std::string(96, 'y') + "\n<1>ok\n" + counted("<2>after");
  const std::vector<std::string> expected{"!oversized 100 abcd", "<1>ok", "<2>after"};
  EXPECT_EQ(decode_whole(stream, limits), expected);
  EXPECT_EQ(decode_bytewise(stream, limits), expected);
  EXPECT_EQ(decode(stream, {10, 3, 50}, limits), expected);
}

TEST(FrameDecoder, AFrameOfExactlyTheLimitPasses) {
  const FrameLimits limits{.max_frame_bytes = 16, .dead_letter_head = 4};
  const std::string sixteen(16, 'z');
  const std::string stream = counted(sixteen) + sixteen + "\n";
  EXPECT_EQ(decode_bytewise(stream, limits), (std::vector<std::string>{sixteen, sixteen}));
}

TEST(FrameDecoder, MalformedOctetCountBreaksTheStream) {
  FrameDecoder decoder;
  Recorder sink;
  EXPECT_TRUE(decoder.feed("5 <1>ab", sink));
  EXPECT_FALSE(decoder.feed("12x <1>", sink));
  EXPECT_TRUE(decoder.broken());
  EXPECT_NE(decoder.error().find("0x78"), std::string::npos) << decoder.error();
  EXPECT_NE(decoder.error().find("offset 9"), std::string::npos) << decoder.error();
  EXPECT_FALSE(decoder.feed("<2>more\n", sink));
  decoder.finish(sink);
  EXPECT_EQ(sink.events, std::vector<std::string>{"<1>ab"});
  EXPECT_EQ(decoder.held(), 0U);

  FrameDecoder too_long;
  EXPECT_FALSE(too_long.feed("12345678901 x", sink));
  EXPECT_NE(too_long.error().find("more than 10 digits"), std::string::npos);
}

TEST(FrameDecoder, EmptyFramesAreDroppedAndCrlfTrimmed) {
  EXPECT_EQ(decode_whole("\n\r\n<1>a\r\n\n"), std::vector<std::string>{"<1>a"});
  // Some senders count the LF that follows the message.
  EXPECT_EQ(decode_whole("6 <1>ab\n7 <1>ab\r\n"), (std::vector<std::string>{"<1>ab", "<1>ab"}));
  // A counted message keeps a CR that no LF follows.
  EXPECT_EQ(decode_whole("6 <1>ab\r"), std::vector<std::string>{"<1>ab\r"});
}

TEST(FrameDecoder, TheEndOfTheStream) {
  EXPECT_EQ(decode_bytewise("<1>last words"), std::vector<std::string>{"<1>last words"});
  EXPECT_EQ(decode_bytewise("10 <1>ab"), std::vector<std::string>{"!truncated 10 <1>ab"});
  EXPECT_EQ(decode_bytewise("12"), std::vector<std::string>{"!truncated 2 12"});
  EXPECT_EQ(decode_bytewise("12", {.dead_letter_head = 1}),
            std::vector<std::string>{"!truncated 2 1"});
  const FrameLimits limits{.max_frame_bytes = 4, .dead_letter_head = 2};
  EXPECT_EQ(decode_bytewise("30 abcdefgh", limits), std::vector<std::string>{"!truncated 30 ab"});
  EXPECT_EQ(decode_bytewise("abcdefgh", limits), std::vector<std::string>{"!oversized 8 ab"});
}

// A stream cut off (an idle client, the drain's deadline, a reset): a last line without its end
// is rejected as truncated, since it may not be whole; the rest ends as at a clean close.
TEST(FrameDecoder, AStreamCutOffRejectsItsUnfinishedLine) {
  const auto cut = [](std::string_view stream, Framing framing = Framing::rfc6587) {
    return decode(stream, std::vector<std::size_t>(stream.size(), 1), {}, framing, true);
  };
  EXPECT_EQ(cut("<1>last words"), std::vector<std::string>{"!truncated 13 <1>last words"});
  EXPECT_EQ(cut("<1>whole\n<1>half\r"),
            (std::vector<std::string>{"<1>whole", "!truncated 7 <1>half"}));
  EXPECT_EQ(cut("<1>whole\n"), std::vector<std::string>{"<1>whole"});
  EXPECT_EQ(cut("<1>whole\n\r"), std::vector<std::string>{"<1>whole"});
  EXPECT_EQ(cut("10 <1>ab"), std::vector<std::string>{"!truncated 10 <1>ab"});
  EXPECT_EQ(cut("12 a", Framing::lines), std::vector<std::string>{"!truncated 4 12 a"});
}

// A client that streams a huge frame of either kind costs the decoder no more than its limits.
TEST(FrameDecoder, MemoryStaysBoundedWhateverTheClientSends) {
  const FrameLimits limits{.max_frame_bytes = 1024, .dead_letter_head = 64};
  FrameDecoder decoder(limits);
  Recorder sink;
  const std::string block(4096, 'q');
  ASSERT_TRUE(decoder.feed("4000000000 ", sink));
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(decoder.feed(block, sink));
    ASSERT_LE(decoder.held(), limits.max_frame_bytes + limits.dead_letter_head);
  }
  FrameDecoder lines(limits);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(lines.feed(block, sink));
    ASSERT_LE(lines.held(), limits.max_frame_bytes + limits.dead_letter_head);
  }
  EXPECT_TRUE(sink.events.empty());
}

}  // namespace
