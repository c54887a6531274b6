// Fuzzes FrameDecoder, both framings (RFC 6587 and plain lines). The first input byte sets the
// limits and how the rest is cut into pieces; the rest is the stream. Fed whole and fed in
// pieces, the decoder must deliver the same frames and rejections, and break (or not) the same
// way, plain lines never; no delivered message may exceed the frame limit, and the bytes it holds
// never exceed its bound. A stream cut off ends as a finished one does, except that a final
// message without its end is rejected as truncated.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/stages/frame_decoder.hpp"
#include "fuzz_support.hpp"

namespace {

using conveyor::fuzz::check;
using namespace conveyor::stages;

class Recorder final : public FrameSink {
 public:
  explicit Recorder(std::size_t max) : max_(max) {}
  void frame(std::string_view message) override {
    check(!message.empty(), "an empty message delivered");
    check(message.size() <= max_, "a message over the frame limit delivered");
    events.push_back("F" + std::string(message));
  }
  void rejected(FrameRejection why, std::string_view head, std::uint64_t length) override {
    events.push_back((why == FrameRejection::oversized ? "O" : "T") + std::to_string(length) + " " +
                     std::string(head));
  }
  std::vector<std::string> events;

 private:
  std::size_t max_;
};

struct Outcome {
  std::vector<std::string> events;
  bool broken = false;
  std::string error;
};

Outcome decode(std::string_view stream, const FrameLimits& limits, Framing framing,
               std::uint8_t cut, bool cut_off = false) {
  FrameDecoder decoder(limits, framing);
  Recorder sink(limits.max_frame_bytes);
  std::uint32_t state = cut;
  std::size_t at = 0;
  while (at < stream.size()) {
    std::size_t size = stream.size() - at;
    if (cut != 0) {
      state = state * 1103515245U + 12345U;
      size = std::min<std::size_t>(size, 1 + (state >> 16) % 37);
    }
    decoder.feed(stream.substr(at, size), sink);
    check(decoder.held() <= limits.max_frame_bytes + limits.dead_letter_head,
          "the decoder holds more than its bound");
    at += size;
  }
  if (cut_off) {
    decoder.cut(sink);
  } else {
    decoder.finish(sink);
  }
  return {std::move(sink.events), decoder.broken(), decoder.error()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t setting = data[0];
  const FrameLimits limits{.max_frame_bytes = 1 + (setting & 63U) * 4,
                           .dead_letter_head = static_cast<std::size_t>(setting >> 6) * 5};
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
  for (const Framing framing : {Framing::rfc6587, Framing::lines}) {
    const Outcome whole = decode(stream, limits, framing, 0);
    const Outcome pieces = decode(stream, limits, framing, static_cast<std::uint8_t>(setting | 1U));
    check(whole.events == pieces.events, "pieces decode differently from the whole");
    check(whole.broken == pieces.broken && whole.error == pieces.error,
          "pieces break differently from the whole");
    check(framing == Framing::rfc6587 || !whole.broken, "plain lines broke the stream");
    const Outcome cut_off = decode(stream, limits, framing, 0, true);
    check(cut_off.events.size() == whole.events.size(), "a cut stream ends with other events");
    for (std::size_t i = 0; i < whole.events.size(); ++i) {
      const bool same = cut_off.events[i] == whole.events[i];
      const bool last_message_cut =
          i + 1 == whole.events.size() && whole.events[i][0] == 'F' && cut_off.events[i][0] == 'T';
      check(same || last_message_cut, "a cut stream differs before its last event");
    }
  }
  return 0;
}
