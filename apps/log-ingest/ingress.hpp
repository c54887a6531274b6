// Ingress: where `serve`'s inputs hand their messages to the pipeline. A bounded queue of chunks
// (stages::Chunk) that the pipeline's source pops, the counters of each input, and ChunkBuilder,
// which turns the frames of one connection (stages::FrameDecoder) into chunks.
//
//   ChunkBuilder builder(input, counters);
//   decoder.feed(bytes, builder);
//   while (builder.ready()) { if (!ingress.try_push(builder.front())) break; builder.pop(); }
//
// Contract:
// - Messages: a message's LF becomes `#012` (as rsyslog escapes it), so that one message stays one
//   line; an empty or all-blank message is skipped and not counted. A rejected frame becomes a
//   dead letter (stages::OverlongLine) with its head; a message that follows it starts a new chunk,
//   so that line numbers stay exact.
// - Counting: a message counts as received when its chunk enters the queue, or as received and
//   dropped when `drop` gives its chunk up (UDP, on a full queue). The identity the service
//   reports, received = written + rejected + filtered + dropped, rests on this.
// - Ingress: any thread may push (try_push; push, which waits for room; try_push_for, which waits
//   for a while); one thread pops.
//   After close(), pushes fail and pop drains what is left, then returns nullopt.
// - Joining: pop returns the next chunk joined with the chunks of the same input queued behind it,
//   up to `join_bytes` of text, in their order. Under load the queue holds one small chunk per
//   read of each connection (or of each tailed file), and each would otherwise cost the pipeline
//   a hand-off. A joined chunk keeps its line numbers, and its offsets, where its parts follow
//   each other on one stream; otherwise they are unknown (first_line 0, offset unknown_offset).
//   It carries the tokens of all its parts (AckToken::join).
// - Counters are relaxed atomics: totals for metrics, read at any time from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "conveyor/stages/chunk.hpp"
#include "conveyor/stages/frame_decoder.hpp"
#include "conveyor/sync/mpmc_bounded_queue.hpp"

namespace conveyor::log_ingest {

// The answers an HTTP input counts, by code.
inline constexpr std::array<unsigned, 7> http_codes = {200, 400, 404, 405, 413, 429, 431};

// What one input counts; its `name` is the `input` label of its metrics.
struct InputCounters {
  explicit InputCounters(std::string input_name, bool http_input = false)
      : name(std::move(input_name)), http(http_input) {}

  const std::string name;
  // The input answers, or once answered, HTTP requests: http_responses are its. Set for good once
  // a reload makes it an HTTP input (its counters go on under its name, and stay exported).
  std::atomic<bool> http;
  std::atomic<std::uint64_t> received{0};     // messages, those dropped and dead-lettered included
  std::atomic<std::uint64_t> bytes{0};        // bytes read from clients
  std::atomic<std::uint64_t> dropped{0};      // UDP: queue full (reason "udp_overflow")
  std::atomic<std::uint64_t> connections{0};  // open now
  std::atomic<std::uint64_t> connections_total{0};            // accepted
  std::atomic<std::uint64_t> connections_rejected{0};         // over max_connections
  std::atomic<std::uint64_t> client_connections_rejected{0};  // over max_connections_per_client
  std::atomic<std::uint64_t> framing_errors{0};    // a bad octet count closed a connection
  std::atomic<std::uint64_t> idle_disconnects{0};  // idle_timeout closed a connection
  std::atomic<std::uint64_t> tls_failures{0};      // TLS handshakes that failed
  // file inputs
  std::atomic<std::uint64_t> files{0};                 // followed now
  std::atomic<std::uint64_t> rotations{0};             // files whose path went elsewhere
  std::atomic<std::uint64_t> truncations{0};           // files found truncated
  std::atomic<std::uint64_t> lost_truncated_bytes{0};  // unread when truncated, no copy found
  std::atomic<std::uint64_t> checkpoint_errors{0};     // checkpoints that could not be saved
  std::array<std::atomic<std::uint64_t>, http_codes.size()> http_responses{};  // by http_codes

  void count_http(unsigned code) noexcept {
    for (std::size_t i = 0; i < http_codes.size(); ++i)
      if (http_codes[i] == code) add(http_responses[i], 1);
  }

  static void add(std::atomic<std::uint64_t>& counter, std::uint64_t count) noexcept {
    counter.fetch_add(count, std::memory_order_relaxed);
  }
  [[nodiscard]] static std::uint64_t read(const std::atomic<std::uint64_t>& counter) noexcept {
    return counter.load(std::memory_order_relaxed);
  }
};

// A chunk, the messages in it, and the stream (connection) it came from.
struct Delivery {
  stages::Chunk chunk;
  std::uint64_t messages = 0;  // its lines, the dead-lettered ones included
  std::uint64_t blank = 0;     // of those, blank lines the parse stage skips (a file's)
  std::uint64_t stream = 0;

  // What counts as received: blank lines are skipped and not counted, from a file as from a
  // connection (where the chunk's text never holds them).
  [[nodiscard]] std::uint64_t counted() const noexcept { return messages - blank; }
};

class Ingress {
 public:
  explicit Ingress(std::size_t capacity, std::size_t join_bytes = 256U << 10U)
      : queue_(capacity), join_bytes_(join_bytes) {}

  // Into the queue if it has room: true, and `parcel` counted as received; false, untouched.
  [[nodiscard]] bool try_push(Delivery& parcel, InputCounters& counters);
  // Waits for room; false once closed.
  bool push(Delivery&& parcel, InputCounters& counters);
  // Waits at most about `timeout` for room: true, and `parcel` counted as received; false (timed
  // out, or closed: see closed()), untouched.
  [[nodiscard]] bool try_push_for(Delivery& parcel, InputCounters& counters,
                                  std::chrono::milliseconds timeout);
  [[nodiscard]] bool closed() const noexcept { return queue_.closed(); }
  // The pipeline failed, and drops what it holds: inputs that checkpoint (file inputs) save no
  // position from now on, since the chunks it dropped settle their tokens too. Any thread.
  void fail() noexcept { failed_.store(true, std::memory_order_release); }
  [[nodiscard]] bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  // Gives `parcel` up: its messages count as received and dropped.
  static void drop(const Delivery& parcel, InputCounters& counters) noexcept;

  std::optional<stages::Chunk> pop();
  void close() { queue_.close(); }
  [[nodiscard]] std::size_t size_approx() const noexcept { return queue_.size_approx(); }

 private:
  sync::MpmcBoundedQueue<Delivery> queue_;
  std::size_t join_bytes_;
  std::optional<Delivery> next_;  // popped, not joined: the next pop starts with it
  std::atomic<bool> failed_{false};
};

class ChunkBuilder final : public stages::FrameSink {
 public:
  // `max_chunk`: a chunk is closed once its text reaches this size.
  ChunkBuilder(std::shared_ptr<const stages::Input> input, std::size_t max_chunk = 256U << 10U);

  void frame(std::string_view message) override;
  void rejected(stages::FrameRejection why, std::string_view head, std::uint64_t length) override;

  // Closes the chunk being built, if it holds anything.
  void seal();
  [[nodiscard]] bool ready() const noexcept { return !ready_.empty(); }
  [[nodiscard]] Delivery& front() noexcept { return ready_.front(); }
  void pop() { ready_.pop_front(); }
  // Pushes the closed chunks into `ingress`, in order, until it is full; how many it pushed.
  // Those it could not push stay ready, for the caller to try again (or to give up: clear()).
  std::size_t hand_over(Ingress& ingress, InputCounters& counters);
  // The same; true once none is left ready (the caller may go on), false while some wait.
  bool hand_over_all(Ingress& ingress, InputCounters& counters) {
    (void)hand_over(ingress, counters);
    return !ready();
  }
  // The messages in the closed chunks.
  [[nodiscard]] std::uint64_t ready_messages() const noexcept;
  void clear() noexcept { ready_.clear(); }

 private:
  Delivery& open();

  std::shared_ptr<const stages::Input> input_;
  std::size_t max_chunk_;
  std::uint64_t stream_;         // this builder's, unique in the process
  std::uint64_t next_line_ = 1;  // the next message's number on this connection
  std::uint64_t offset_ = 0;     // bytes of messages before it
  std::optional<Delivery> building_;
  std::deque<Delivery> ready_;
};

}  // namespace conveyor::log_ingest
