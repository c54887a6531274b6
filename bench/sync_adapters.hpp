// Adapters that give conveyor's primitives and their peers the same few calls, so that each
// benchmark scenario is written once and runs the same work against every library.
//
// Semaphores: construct with an initial count; acquire(), release(), try_acquire().
// Queues of std::uint64_t: construct with a capacity; then whichever of these the library has:
// - blocking:  bool push(value), bool pop(value&)      (false only if the queue refused: a bug
// here)
// - spinning:  bool try_push(value), bool try_pop(value&)
// - bulk:      bool push_bulk(first, count), std::size_t pop_bulk(out, max)
//   push_bulk waits until it has taken all `count` (false: refused); pop_bulk waits for at least
//   one item (0: refused). Each waits the way its library does: ours blocks, Boost spins
//   (with back_off).
#pragma once

// lightweightsemaphore.h relies on macros that concurrentqueue.h defines, so this order matters.
#include <concurrentqueue/concurrentqueue.h>

#include <concurrentqueue/lightweightsemaphore.h>

#include <oneapi/tbb/concurrent_queue.h>
#include <readerwriterqueue/readerwritercircularbuffer.h>
#include <readerwriterqueue/readerwriterqueue.h>
#include <boost/lockfree/spsc_queue.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <semaphore>
#include <stdexcept>
#include <thread>

#include "conveyor/sync/bounded_queue.hpp"
#include "conveyor/sync/detail/cpu_relax.hpp"
#include "conveyor/sync/mpmc_bounded_queue.hpp"
#include "conveyor/sync/semaphore.hpp"

namespace conveyor::bench {

using Item = std::uint64_t;

// The wait between two failed attempts of a caller that spins (round counts from 0). After a while
// it yields: with more runnable threads than cores, a pure spin would wait out the whole time slice
// of a partner that is not running, and measure the scheduler instead of the queue. Every library
// that spins gets this same policy.
inline void back_off(int round) {
  constexpr int spins_before_yield = 256;
  if (round < spins_before_yield) {
    sync::detail::cpu_relax();
  } else {
    std::this_thread::yield();
  }
}

// ---- semaphores ----

struct ConveyorSemaphore {
  explicit ConveyorSemaphore(std::int32_t initial) : semaphore(initial) {}
  void acquire() { semaphore.acquire(); }
  void release() { semaphore.release(); }
  bool try_acquire() { return semaphore.try_acquire(); }
  sync::Semaphore semaphore;
};

struct MoodycamelSemaphore {
  explicit MoodycamelSemaphore(std::int32_t initial) : semaphore(initial) {}
  void acquire() { semaphore.wait(); }
  void release() { semaphore.signal(); }
  bool try_acquire() { return semaphore.tryWait(); }
  moodycamel::LightweightSemaphore semaphore;
};

struct StdSemaphore {
  explicit StdSemaphore(std::int32_t initial) : semaphore(initial) {}
  void acquire() { semaphore.acquire(); }
  void release() { semaphore.release(); }
  bool try_acquire() { return semaphore.try_acquire(); }
  std::counting_semaphore<> semaphore;
};

// ---- queues ----

template <template <class> class Queue>
struct ConveyorQueue {
  explicit ConveyorQueue(std::size_t capacity) : queue(capacity) {}
  bool push(Item value) { return queue.push(value); }
  bool pop(Item& value) {
    std::optional<Item> popped = queue.pop();
    if (!popped) return false;
    value = *popped;
    return true;
  }
  bool try_push(Item value) { return queue.try_push(value); }
  bool try_pop(Item& value) {
    std::optional<Item> popped = queue.try_pop();
    if (!popped) return false;
    value = *popped;
    return true;
  }
  bool push_bulk(const Item* first, std::size_t count) {
    const Item* const last = first + count;
    while (first != last) {
      const std::size_t taken = queue.push_bulk(first, last);
      if (taken == 0) return false;
      first += taken;
    }
    return true;
  }
  std::size_t pop_bulk(Item* out, std::size_t max) { return queue.pop_bulk(out, max); }
  Queue<Item> queue;
};

using ConveyorSpscQueue = ConveyorQueue<sync::BoundedQueue>;
using ConveyorMpmcQueue = ConveyorQueue<sync::MpmcBoundedQueue>;

struct MoodycamelCircularBuffer {
  explicit MoodycamelCircularBuffer(std::size_t capacity) : queue(capacity) {}
  bool push(Item value) {
    queue.wait_enqueue(value);
    return true;
  }
  bool pop(Item& value) {
    queue.wait_dequeue(value);
    return true;
  }
  moodycamel::BlockingReaderWriterCircularBuffer<Item> queue;
};

// Grows only on enqueue(); try_enqueue() keeps it within the slots it was built with.
struct MoodycamelReaderWriterQueue {
  explicit MoodycamelReaderWriterQueue(std::size_t capacity) : queue(capacity) {}
  bool try_push(Item value) { return queue.try_enqueue(value); }
  bool try_pop(Item& value) { return queue.try_dequeue(value); }
  moodycamel::ReaderWriterQueue<Item> queue;
};

struct TbbBoundedQueue {
  explicit TbbBoundedQueue(std::size_t capacity) {
    queue.set_capacity(static_cast<std::ptrdiff_t>(capacity));
  }
  bool push(Item value) {
    queue.push(value);
    return true;
  }
  bool pop(Item& value) {
    queue.pop(value);
    return true;
  }
  tbb::concurrent_bounded_queue<Item> queue;
};

// The capacity is a template argument of the queue; the constructor's argument only checks it.
template <std::size_t Capacity>
struct BoostSpscQueue {
  explicit BoostSpscQueue(std::size_t capacity) {
    if (capacity != Capacity) throw std::invalid_argument("BoostSpscQueue: capacity mismatch");
  }
  bool try_push(Item value) { return queue.push(value); }
  bool try_pop(Item& value) { return queue.pop(value); }
  bool push_bulk(const Item* first, std::size_t count) {
    for (int round = 0; count > 0; ++round) {
      const std::size_t taken = queue.push(first, count);
      if (taken == 0) back_off(round);
      first += taken;
      count -= taken;
    }
    return true;
  }
  std::size_t pop_bulk(Item* out, std::size_t max) {
    for (int round = 0;; ++round) {
      if (const std::size_t popped = queue.pop(out, max); popped > 0) return popped;
      back_off(round);
    }
  }
  boost::lockfree::spsc_queue<Item, boost::lockfree::capacity<Capacity>> queue;
};

}  // namespace conveyor::bench
