// log-ingest serve's Ingress and ChunkBuilder: messages into chunks of lines, dead letters with
// exact numbers, and the counting that the service's accounting rests on.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/framework/ack.hpp"
#include "conveyor/stages/line_splitter.hpp"
#include "ingress.hpp"

namespace {

using conveyor::log_ingest::ChunkBuilder;
using conveyor::log_ingest::Delivery;
using conveyor::log_ingest::Ingress;
using conveyor::log_ingest::InputCounters;
using conveyor::stages::FrameRejection;

std::shared_ptr<const conveyor::stages::Input> input() {
  return std::make_shared<const conveyor::stages::Input>(conveyor::stages::Input{"in"});
}

TEST(ChunkBuilder, MessagesBecomeLinesAndTheirLineFeedsAreEscaped) {
  ChunkBuilder builder(input());
  builder.frame("one");
  builder.frame("two\nlines");
  builder.frame("   ");  // blank: skipped, not counted
  builder.frame("");
  builder.seal();
  ASSERT_TRUE(builder.ready());
  EXPECT_EQ(builder.front().chunk.text, "one\ntwo#012lines\n");
  EXPECT_EQ(builder.front().messages, 2U);
  EXPECT_GE(builder.front().chunk.text.capacity(),
            builder.front().chunk.text.size() + conveyor::stages::read_ahead_padding);
  builder.pop();
  EXPECT_FALSE(builder.ready());
}

// A message that the parse stage will read as a blank line (it drops one last CR) is skipped
// here too: counted, it would be received and then written, rejected or filtered by nobody.
TEST(ChunkBuilder, AMessageBlankButForItsCarriageReturnIsSkipped) {
  ChunkBuilder builder(input());
  for (const std::string_view message : {"\r", " \r", "\t \r", "\r\r", "x\r", "\r\n", "ok"})
    builder.frame(message);
  builder.seal();
  ASSERT_TRUE(builder.ready());
  const std::string& text = builder.front().chunk.text;
  EXPECT_EQ(text, "\r\r\nx\r\n\r#012\nok\n");
  std::uint64_t lines = 0;
  conveyor::stages::for_each_line(text, [&](std::string_view line, std::uint64_t) {
    EXPECT_FALSE(conveyor::stages::blank_line(line)) << "a counted message reads as blank";
    ++lines;
  });
  EXPECT_EQ(builder.front().messages, lines);
  EXPECT_EQ(lines, 4U);
}

TEST(ChunkBuilder, ARejectedFrameKeepsTheLineNumbersExact) {
  ChunkBuilder builder(input());
  builder.frame("a");
  builder.rejected(FrameRejection::oversized, "head", 100000);
  builder.frame("c");
  builder.rejected(FrameRejection::truncated, "par", 3);
  builder.seal();
  // "a" alone; then the rejected frame before "c"; then the truncated one.
  ASSERT_TRUE(builder.ready());
  EXPECT_EQ(builder.front().chunk.text, "a\n");
  EXPECT_EQ(builder.front().chunk.first_line, 1U);
  builder.pop();
  ASSERT_TRUE(builder.ready());
  const conveyor::stages::Chunk& second = builder.front().chunk;
  ASSERT_EQ(second.overlong.size(), 1U);
  EXPECT_EQ(second.overlong[0].line, 2U);
  EXPECT_EQ(second.overlong[0].length, 100000U);
  EXPECT_EQ(second.overlong[0].head, "head");
  EXPECT_FALSE(second.overlong[0].interrupted);
  EXPECT_EQ(second.first_line, 3U);
  EXPECT_EQ(second.text, "c\n");
  EXPECT_EQ(builder.front().messages, 2U);
  builder.pop();
  ASSERT_TRUE(builder.ready());
  EXPECT_TRUE(builder.front().chunk.overlong.at(0).interrupted);
  EXPECT_EQ(builder.front().chunk.overlong.at(0).line, 4U);
}

TEST(ChunkBuilder, AChunkClosesAtItsSize) {
  ChunkBuilder builder(input(), 10);
  for (int i = 0; i < 5; ++i)
    builder.frame("12345");
  builder.seal();
  int chunks = 0;
  for (; builder.ready(); builder.pop())
    ++chunks;
  EXPECT_EQ(chunks, 3);
}

// hand_over pushes closed chunks in order until the Ingress is full, and keeps the rest.
TEST(ChunkBuilder, HandsOverUntilTheIngressIsFull) {
  ChunkBuilder builder(input(), 2);  // a chunk per message
  for (const char* message : {"a", "bb", "c"})
    builder.frame(message);
  builder.seal();
  EXPECT_EQ(builder.ready_messages(), 3U);
  Ingress ingress(2, 0);  // no joining: one chunk per pop
  InputCounters counters("in");
  EXPECT_EQ(builder.hand_over(ingress, counters), 2U);
  EXPECT_EQ(InputCounters::read(counters.received), 2U);
  ASSERT_TRUE(builder.ready());
  EXPECT_EQ(builder.front().chunk.text, "c\n");
  EXPECT_EQ(builder.hand_over(ingress, counters), 0U);  // still full
  EXPECT_EQ(ingress.pop()->text, "a\n");
  EXPECT_EQ(builder.hand_over(ingress, counters), 1U);
  EXPECT_FALSE(builder.ready());
  EXPECT_EQ(ingress.pop()->text, "bb\n");
  EXPECT_EQ(ingress.pop()->text, "c\n");
}

TEST(Ingress, CountsWhatEntersAndWhatIsDropped) {
  Ingress ingress(1);
  InputCounters counters("in");
  Delivery first{{}, 3};
  Delivery second{{}, 2};
  ASSERT_TRUE(ingress.try_push(first, counters));
  ASSERT_FALSE(ingress.try_push(second, counters));  // full: untouched, not counted
  EXPECT_EQ(InputCounters::read(counters.received), 3U);
  Ingress::drop(second, counters);
  EXPECT_EQ(InputCounters::read(counters.received), 5U);
  EXPECT_EQ(InputCounters::read(counters.dropped), 2U);
  ASSERT_TRUE(ingress.pop().has_value());
  ingress.close();
  EXPECT_FALSE(ingress.push(Delivery{{}, 1}, counters));
  EXPECT_FALSE(ingress.pop().has_value());
  EXPECT_EQ(InputCounters::read(counters.received), 5U);
}

// Pushes each builder's ready chunks into `ingress`.
void push_all(Ingress& ingress, ChunkBuilder& builder, InputCounters& counters) {
  builder.seal();
  while (builder.ready()) {
    ASSERT_TRUE(ingress.try_push(builder.front(), counters));
    builder.pop();
  }
}

TEST(Ingress, JoinsTheChunksOfOneStreamAndKeepsTheirLineNumbers) {
  Ingress ingress(8);
  InputCounters counters("in");
  ChunkBuilder builder(input(), 2);  // a chunk per message
  for (const char* message : {"a", "b", "c"})
    builder.frame(message);
  push_all(ingress, builder, counters);
  const std::optional<conveyor::stages::Chunk> chunk = ingress.pop();
  ASSERT_TRUE(chunk.has_value());
  EXPECT_EQ(chunk->text, "a\nb\nc\n");
  EXPECT_EQ(chunk->first_line, 1U);
  EXPECT_GE(chunk->text.capacity(), chunk->text.size() + conveyor::stages::read_ahead_padding);
}

// Lines of two connections of one input go on together, without positions: each connection
// numbers its own lines, and one chunk cannot say which line came from which.
TEST(Ingress, JoinsTheChunksOfSeveralStreamsWithoutPositions) {
  Ingress ingress(8);
  InputCounters counters("in");
  const auto shared = input();
  ChunkBuilder one(shared);
  ChunkBuilder two(shared);
  one.frame("a");
  push_all(ingress, one, counters);
  two.frame("x");
  push_all(ingress, two, counters);
  one.frame("b");
  push_all(ingress, one, counters);
  const std::optional<conveyor::stages::Chunk> chunk = ingress.pop();
  ASSERT_TRUE(chunk.has_value());
  EXPECT_EQ(chunk->text, "a\nx\nb\n");
  EXPECT_EQ(chunk->first_line, 0U);
  EXPECT_EQ(chunk->offset, conveyor::stages::unknown_offset);
}

TEST(Ingress, JoinsNeitherOtherInputsNorDeadLettersNorPastItsSize) {
  Ingress ingress(16, 4);
  InputCounters counters("in");
  const auto shared = input();
  ChunkBuilder first(shared, 2);
  ChunkBuilder other(input(), 2);
  first.frame("a");
  push_all(ingress, first, counters);
  other.frame("o");  // another input
  push_all(ingress, other, counters);
  first.frame("b");
  first.rejected(FrameRejection::oversized, "head", 100000);  // a dead letter before "c"
  first.frame("c");
  first.frame("d");
  first.frame("e");
  push_all(ingress, first, counters);
  std::vector<std::string> texts;
  ingress.close();
  while (std::optional<conveyor::stages::Chunk> chunk = ingress.pop()) {
    texts.push_back(chunk->text);
    if (!chunk->overlong.empty()) {
      EXPECT_EQ(chunk->overlong[0].line, 3U);
      EXPECT_EQ(chunk->first_line, 4U);
    }
  }
  // "b" joins nothing (its neighbours are another input and a dead letter); "c" and "d" fill the
  // 4 bytes.
  EXPECT_EQ(texts, (std::vector<std::string>{"a\n", "o\n", "b\n", "c\nd\n", "e\n"}));
}

// A tailed file's chunks follow each other byte for byte, without line numbers after a restart:
// joined, they keep their offset, and carry every part's token.
TEST(Ingress, JoinsAFilesChunksWithTheirOffsetsAndTokens) {
  Ingress ingress(8);
  InputCounters counters("files");
  const auto file = input();
  conveyor::AckLedger ledger;
  std::uint64_t offset = 1000;
  for (const char* text : {"a\n", "bb\n", "c\n"}) {
    Delivery delivery;
    delivery.chunk.input = file;
    delivery.chunk.text = text;
    delivery.chunk.first_line = 0;
    delivery.chunk.offset = offset;
    offset += delivery.chunk.text.size();
    delivery.chunk.ack = ledger.issue(offset);
    delivery.messages = 1;
    ASSERT_TRUE(ingress.try_push(delivery, counters));
  }
  std::optional<conveyor::stages::Chunk> chunk = ingress.pop();
  ASSERT_TRUE(chunk.has_value());
  EXPECT_EQ(chunk->text, "a\nbb\nc\n");
  EXPECT_EQ(chunk->first_line, 0U);
  EXPECT_EQ(chunk->offset, 1000U);
  EXPECT_FALSE(ledger.acknowledged().has_value());  // the joined chunk holds every token
  chunk.reset();
  EXPECT_EQ(ledger.acknowledged(), 1007U);
}

}  // namespace
