// Ingress and ChunkBuilder: messages in, chunks of lines out.
#include "ingress.hpp"

#include <algorithm>
#include <atomic>
#include <utility>

#include "conveyor/stages/line_splitter.hpp"

namespace conveyor::log_ingest {

bool Ingress::try_push(Delivery& delivery, InputCounters& counters) {
  const std::uint64_t messages = delivery.counted();
  if (!queue_.try_push(delivery)) return false;
  InputCounters::add(counters.received, messages);
  return true;
}

bool Ingress::push(Delivery&& delivery, InputCounters& counters) {
  const std::uint64_t messages = delivery.counted();
  if (!queue_.push(std::move(delivery))) return false;
  InputCounters::add(counters.received, messages);
  return true;
}

bool Ingress::try_push_for(Delivery& delivery, InputCounters& counters,
                           std::chrono::milliseconds timeout) {
  const std::uint64_t messages = delivery.counted();
  if (!queue_.try_push_for(delivery, timeout)) return false;
  InputCounters::add(counters.received, messages);
  return true;
}

void Ingress::drop(const Delivery& delivery, InputCounters& counters) noexcept {
  InputCounters::add(counters.received, delivery.counted());
  InputCounters::add(counters.dropped, delivery.counted());
}

std::optional<stages::Chunk> Ingress::pop() {
  std::optional<Delivery> first = next_ ? std::exchange(next_, std::nullopt) : queue_.pop();
  if (!first) return std::nullopt;
  stages::Chunk chunk = std::move(first->chunk);
  std::uint64_t stream = first->stream;
  // Where the next part must start for the lines' numbers, and for their offsets, to go on.
  std::uint64_t next_line = chunk.first_line + first->messages - chunk.overlong.size();
  std::uint64_t next_offset = chunk.offset == stages::unknown_offset
                                  ? stages::unknown_offset
                                  : chunk.offset + chunk.text.size();
  bool lines_known = chunk.first_line != 0;
  bool offsets_known = chunk.offset != stages::unknown_offset;
  while (chunk.text.size() < join_bytes_) {
    std::optional<Delivery> more = queue_.try_pop();
    if (!more) break;
    // Dead letters come before a chunk's text, so a chunk that has some starts a new one.
    if (more->chunk.input != chunk.input || !more->chunk.overlong.empty() ||
        chunk.text.size() + more->chunk.text.size() > join_bytes_) {
      next_ = std::move(more);
      break;
    }
    const bool same_stream = more->stream == stream;
    lines_known = lines_known && same_stream && more->chunk.first_line == next_line;
    offsets_known = offsets_known && same_stream && more->chunk.offset == next_offset;
    stream = more->stream;
    next_line = more->chunk.first_line + more->messages;
    next_offset = more->chunk.offset == stages::unknown_offset
                      ? stages::unknown_offset
                      : more->chunk.offset + more->chunk.text.size();
    // Room for it all at once, with the padding parsers read ahead into (stages::Chunk).
    if (chunk.text.capacity() < join_bytes_ + stages::read_ahead_padding) {
      chunk.text.reserve(join_bytes_ + stages::read_ahead_padding);
    }
    chunk.text.append(more->chunk.text);
    chunk.ack.join(std::move(more->chunk.ack));  // settled once the joined text is done with
  }
  if (!lines_known) chunk.first_line = 0;
  if (!offsets_known) chunk.offset = stages::unknown_offset;
  return chunk;
}

namespace {

std::atomic<std::uint64_t> streams{0};

}  // namespace

ChunkBuilder::ChunkBuilder(std::shared_ptr<const stages::Input> input, std::size_t max_chunk)
    : input_(std::move(input)),
      max_chunk_(max_chunk),
      stream_(streams.fetch_add(1, std::memory_order_relaxed) + 1) {}

Delivery& ChunkBuilder::open() {
  if (!building_) {
    building_.emplace();
    building_->stream = stream_;
    building_->chunk.input = input_;
    building_->chunk.first_line = next_line_;
    building_->chunk.offset = offset_;
  }
  return *building_;
}

void ChunkBuilder::frame(std::string_view message) {
  // Skipped when its line will be blank to the parse stage, which reads it without one last CR:
  // counted here, it would be received and then in none of the counts the drain adds up.
  std::string_view line = message;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (stages::blank_line(line)) return;
  Delivery& delivery = open();
  std::string& text = delivery.chunk.text;
  for (std::size_t start = 0;;) {
    const std::size_t lf = message.find('\n', start);
    if (lf == std::string_view::npos) {
      text.append(message.substr(start));
      break;
    }
    text.append(message.substr(start, lf - start));
    text.append("#012");
    start = lf + 1;
  }
  text.push_back('\n');
  ++delivery.messages;
  ++next_line_;
  offset_ += message.size() + 1;
  if (text.size() >= max_chunk_) seal();
}

void ChunkBuilder::rejected(stages::FrameRejection why, std::string_view head,
                            std::uint64_t length) {
  // Dead letters come before a chunk's text: one that follows text starts the next chunk.
  if (building_ && !building_->chunk.text.empty()) seal();
  Delivery& delivery = open();
  delivery.chunk.overlong.push_back({.line = next_line_,
                                     .offset = offset_,
                                     .length = length,
                                     .head = std::string(head),
                                     .interrupted = why == stages::FrameRejection::truncated});
  ++delivery.messages;
  ++next_line_;
  offset_ += length;
  delivery.chunk.first_line = next_line_;
  delivery.chunk.offset = offset_;
}

std::size_t ChunkBuilder::hand_over(Ingress& ingress, InputCounters& counters) {
  std::size_t pushed = 0;
  while (!ready_.empty() && ingress.try_push(ready_.front(), counters)) {
    ready_.pop_front();
    ++pushed;
  }
  return pushed;
}

std::uint64_t ChunkBuilder::ready_messages() const noexcept {
  std::uint64_t messages = 0;
  for (const Delivery& delivery : ready_)
    messages += delivery.messages;
  return messages;
}

void ChunkBuilder::seal() {
  if (!building_) return;
  stages::Chunk& chunk = building_->chunk;
  // Room for the parsers that read ahead (simdjson).
  chunk.text.reserve(chunk.text.size() + stages::read_ahead_padding);
  ready_.push_back(std::move(*building_));
  building_.reset();
}

}  // namespace conveyor::log_ingest
