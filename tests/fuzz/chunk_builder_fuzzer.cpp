// Fuzzes what `log-ingest serve` makes of a client's bytes: FrameDecoder (RFC 6587) into
// ChunkBuilder, then through the Ingress. The first input byte sets the frame limit, the chunk
// size and how the stream is cut; the rest is the stream. Every frame the decoder delivers must
// come out of the Ingress once, in order, however it joins the chunks: a non-blank message as one
// line with its LFs escaped (`#012`; blank but for a last CR counts as blank), a rejected frame as
// a dead letter with its head, numbered without gaps, and each chunk's count of messages must
// match what it holds.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/stages/frame_decoder.hpp"
#include "fuzz_support.hpp"
#include "ingress.hpp"

namespace {

using conveyor::fuzz::check;
using namespace conveyor::stages;
using conveyor::log_ingest::ChunkBuilder;
using conveyor::log_ingest::Delivery;
using conveyor::log_ingest::Ingress;
using conveyor::log_ingest::InputCounters;

// What the builder should make of each frame: "L" + the line, or "D" + a dead letter's head.
class Expected final : public FrameSink {
 public:
  void frame(std::string_view message) override {
    // Skipped: blank, or blank but for one last CR (the parse stage reads a line without it).
    std::string_view seen = message;
    if (!seen.empty() && seen.back() == '\r') seen.remove_suffix(1);
    if (seen.find_first_not_of(" \t") == std::string_view::npos) return;
    std::string line = "L";
    for (const char c : message) {
      if (c == '\n') {
        line += "#012";
      } else {
        line += c;
      }
    }
    events.push_back(std::move(line));
  }
  void rejected(FrameRejection, std::string_view head, std::uint64_t) override {
    events.push_back("D" + std::string(head));
  }
  std::vector<std::string> events;
};

// Feeds `stream` to `sink` in pieces cut by `cut` (0: whole).
void decode(std::string_view stream, const FrameLimits& limits, std::uint8_t cut, FrameSink& sink) {
  FrameDecoder decoder(limits, Framing::rfc6587);
  std::uint32_t state = cut;
  for (std::size_t at = 0; at < stream.size();) {
    std::size_t size = stream.size() - at;
    if (cut != 0) {
      state = state * 1103515245U + 12345U;
      size = std::min<std::size_t>(size, 1 + (state >> 16) % 53);
    }
    if (!decoder.feed(stream.substr(at, size), sink)) break;
    at += size;
  }
  decoder.finish(sink);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t setting = data[0];
  const FrameLimits limits{.max_frame_bytes = 1 + (setting & 31U) * 8, .dead_letter_head = 16};
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  Expected expected;
  decode(stream, limits, 0, expected);

  auto input = std::make_shared<const Input>(Input{.name = "fuzz", .index = 0});
  ChunkBuilder builder(input, 1 + static_cast<std::size_t>(setting >> 5U) * 40);
  decode(stream, limits, static_cast<std::uint8_t>(setting | 1U), builder);
  builder.seal();

  // Through the Ingress, as serve's inputs hand chunks to the pipeline.
  Ingress ingress(1024, /*join_bytes=*/1 + stream.size() % 700);  // some joins cut short
  InputCounters counters("fuzz");
  std::uint64_t messages = 0;
  std::size_t chunks = 0;
  while (builder.ready()) {
    Delivery& delivery = builder.front();
    messages += delivery.messages;
    check(ingress.try_push(delivery, counters), "the Ingress refused a chunk with room left");
    builder.pop();
    ++chunks;
  }
  ingress.close();
  check(InputCounters::read(counters.received) == messages, "received is not what was pushed");

  std::vector<std::string> got;
  std::uint64_t next_line = 1;
  // The Ingress joins queued chunks, so it may hand out fewer than were pushed, never more.
  std::size_t popped = 0;
  while (const std::optional<Chunk> chunk = ingress.pop()) {
    check(++popped <= chunks, "the Ingress made up a chunk");
    check(chunk->input == input, "a chunk names another input");
    for (const OverlongLine& dead : chunk->overlong) {
      check(dead.line == next_line++, "a dead letter is misnumbered");
      got.push_back("D" + dead.head);
    }
    check(chunk->text.empty() || chunk->text.back() == '\n', "a chunk ends inside a line");
    if (!chunk->text.empty()) check(chunk->first_line == next_line, "a chunk is misnumbered");
    for (std::size_t start = 0; start < chunk->text.size();) {
      const std::size_t end = chunk->text.find('\n', start);
      got.push_back("L" + chunk->text.substr(start, end - start));
      start = end + 1;
      ++next_line;
    }
  }
  check(got == expected.events, "the chunks do not hold the frames, once each, in order");
  check(messages == expected.events.size(), "the chunks miscount their messages");
  return 0;
}
