// log-ingest serve's Ingress and ChunkBuilder: messages into chunks of lines, dead letters with
// exact numbers, and the counting that the service's accounting rests on.
#include <gtest/gtest.h>

#include <memory>
#include <string>

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
  Ingress ingress(2);
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

}  // namespace
