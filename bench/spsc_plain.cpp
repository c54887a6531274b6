// The blocking SPSC queues as a user would time them: one thread pushes 5 M integers through
// 1024 slots, another pops them, no warm-up, no pinning, one run per process. Prints the
// queue, the items per second and a checksum. bench/spsc_plain.sh runs each queue 6 times,
// alternately, and reports the ratios.
//
//   spsc_plain conveyor|moodycamel|tbb|mailbox [items] [slots]
// `mailbox` is conveyor's single-slot Mailbox (slots is ignored): the producer retries a full
// slot after a yield, the consumer blocks in take().
#include <oneapi/tbb/concurrent_queue.h>
#include <readerwriterqueue/readerwritercircularbuffer.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "conveyor/sync/bounded_queue.hpp"
#include "conveyor/sync/mailbox.hpp"

namespace {

template <class Push, class Pop>
double run(std::uint64_t items, Push&& push, Pop&& pop, std::uint64_t& checksum) {
  const auto start = std::chrono::steady_clock::now();
  std::thread consumer([&] {
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < items; ++i)
      sum += pop();
    checksum = sum;
  });
  for (std::uint64_t i = 1; i <= items; ++i)
    push(i);
  consumer.join();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return static_cast<double>(items) / elapsed.count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: spsc_plain conveyor|moodycamel|tbb|mailbox [items] [slots]\n");
    return 2;
  }
  const std::string queue = argv[1];
  const std::uint64_t items = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 5'000'000;
  const std::size_t slots = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1024;
  std::uint64_t checksum = 0;
  double rate = 0;
  if (queue == "conveyor") {
    conveyor::sync::BoundedQueue<std::uint64_t> q(slots);
    rate = run(
        items, [&](std::uint64_t v) { q.push(v); }, [&] { return *q.pop(); }, checksum);
  } else if (queue == "moodycamel") {
    moodycamel::BlockingReaderWriterCircularBuffer<std::uint64_t> q(slots);
    rate = run(
        items, [&](std::uint64_t v) { q.wait_enqueue(v); },
        [&] {
          std::uint64_t v = 0;
          q.wait_dequeue(v);
          return v;
        },
        checksum);
  } else if (queue == "tbb") {
    tbb::concurrent_bounded_queue<std::uint64_t> q;
    q.set_capacity(static_cast<std::ptrdiff_t>(slots));
    rate = run(
        items, [&](std::uint64_t v) { q.push(v); },
        [&] {
          std::uint64_t v = 0;
          q.pop(v);
          return v;
        },
        checksum);
  } else if (queue == "mailbox") {
    conveyor::sync::Mailbox<std::uint64_t> box;
    rate = run(
        items,
        [&](std::uint64_t v) {
          while (!box.try_put(v))
            std::this_thread::yield();
        },
        [&] { return *box.take(); }, checksum);
  } else {
    std::fprintf(stderr, "spsc_plain: unknown queue '%s'\n", queue.c_str());
    return 2;
  }
  const bool correct = checksum == items * (items + 1) / 2;
  std::printf("%s %.0f items/s %s\n", queue.c_str(), rate, correct ? "ok" : "WRONG CHECKSUM");
  return correct ? 0 : 1;
}
