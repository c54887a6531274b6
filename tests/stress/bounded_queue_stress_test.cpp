// Stress tests for conveyor::sync::BoundedQueue: millions of items through one producer and one
// consumer at several capacities and with every form of push and pop, counted and checksummed, and
// many short runs that end with close() or abort() at a random point.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <random>
#include <thread>
#include <vector>

#include "conveyor/sync/bounded_queue.hpp"
#include "stress.hpp"
#include "tracked.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::BoundedQueue;
using conveyor::testing::stress_items;
using conveyor::testing::Tracked;
using conveyor::testing::Watchdog;

enum class Form { blocking, polling, bulk };

// What the consumer saw: a count, two checksums, and how many items came out of order.
struct Received {
  std::uint64_t count = 0;
  std::uint64_t sum = 0;
  std::uint64_t xor_all = 0;
  std::uint64_t out_of_order = 0;

  void add(std::uint64_t value) {
    out_of_order += value != count ? 1 : 0;
    ++count;
    sum += value;
    xor_all ^= value;
  }
};

void expect_every_item_once(const Received& received, std::uint64_t items) {
  std::uint64_t xor_all = 0;
  for (std::uint64_t i = 0; i < items; ++i)
    xor_all ^= i;
  EXPECT_EQ(received.count, items);
  EXPECT_EQ(received.sum, items * (items - 1) / 2);
  EXPECT_EQ(received.xor_all, xor_all);
  EXPECT_EQ(received.out_of_order, 0u);
}

void run(std::size_t capacity, Form form, std::uint64_t items) {
  Watchdog watchdog(std::chrono::seconds(120));
  BoundedQueue<std::uint64_t> queue(capacity);
  std::thread producer([&] {
    if (form == Form::blocking) {
      for (std::uint64_t i = 0; i < items; ++i)
        ASSERT_TRUE(queue.push(i));
    } else if (form == Form::polling) {
      for (std::uint64_t i = 0; i < items; ++i) {
        std::uint64_t value = i;
        while (!queue.try_push(value))
          std::this_thread::yield();
      }
    } else {
      std::mt19937 random(1);
      std::vector<std::uint64_t> batch;
      for (std::uint64_t next = 0; next < items;) {
        const std::uint64_t size = std::min<std::uint64_t>(1 + random() % 200, items - next);
        batch.clear();
        for (std::uint64_t i = 0; i < size; ++i)
          batch.push_back(next + i);
        ASSERT_EQ(queue.push_bulk(batch.begin(), batch.end()), size);
        next += size;
      }
    }
    queue.close();
  });
  Received received;
  if (form == Form::blocking) {
    while (auto value = queue.pop())
      received.add(*value);
  } else if (form == Form::polling) {
    for (;;) {
      if (auto value = queue.try_pop()) {
        received.add(*value);
      } else if (queue.closed()) {
        // The close may have overtaken our last look: drain what is left, then stop.
        while (auto rest = queue.try_pop())
          received.add(*rest);
        break;
      } else {
        std::this_thread::yield();
      }
    }
  } else {
    std::vector<std::uint64_t> batch;
    std::mt19937 random(2);
    for (;;) {
      batch.clear();
      if (queue.pop_bulk(std::back_inserter(batch), 1 + random() % 300) == 0) break;
      for (std::uint64_t value : batch)
        received.add(value);
    }
  }
  producer.join();
  expect_every_item_once(received, items);
}

TEST(BoundedQueueStress, BlockingCapacityOne) {
  run(1, Form::blocking, stress_items());
}
TEST(BoundedQueueStress, BlockingCapacityTwo) {
  run(2, Form::blocking, stress_items());
}
TEST(BoundedQueueStress, BlockingCapacitySixtyFour) {
  run(64, Form::blocking, stress_items());
}
TEST(BoundedQueueStress, BlockingCapacity4096) {
  run(4096, Form::blocking, stress_items());
}
TEST(BoundedQueueStress, TryFormsCapacitySixtyFour) {
  run(64, Form::polling, stress_items());
}
TEST(BoundedQueueStress, TryFormsCapacityOne) {
  run(1, Form::polling, stress_items());
}
TEST(BoundedQueueStress, BulkFormsCapacity1000) {
  run(1000, Form::bulk, stress_items());
}
TEST(BoundedQueueStress, BulkFormsCapacityThree) {
  run(3, Form::bulk, stress_items());
}

// Many short runs in which the producer ends the stream at a random point, while the consumer is
// blocked or busy. With close(), the consumer gets exactly what was pushed, in order; with abort(),
// a prefix of it, in order; either way nothing leaks.
void end_races(bool abort, std::uint64_t runs) {
  Watchdog watchdog(std::chrono::seconds(120));
  std::mt19937 random(abort ? 7 : 3);
  for (std::uint64_t run_index = 0; run_index < runs; ++run_index) {
    const std::size_t capacity = 1 + random() % 8;
    const std::uint64_t to_push = random() % 40;
    const bool bulk_consumer = random() % 2 == 0;
    std::uint64_t pushed = 0;
    std::vector<std::uint64_t> popped;
    {
      BoundedQueue<Tracked> queue(capacity);
      std::thread producer([&] {
        for (std::uint64_t i = 0; i < to_push; ++i) {
          if (!queue.push(Tracked(i))) break;
          ++pushed;
        }
        if (abort) {
          queue.abort();
        } else {
          queue.close();
        }
      });
      if (bulk_consumer) {
        std::vector<Tracked> batch;
        while (queue.pop_bulk(std::back_inserter(batch), 3) > 0) {
          for (const Tracked& item : batch)
            popped.push_back(item.value());
          batch.clear();
        }
      } else {
        while (auto item = queue.pop())
          popped.push_back(item->value());
      }
      producer.join();
      EXPECT_EQ(pushed, to_push);
    }
    ASSERT_EQ(Tracked::alive(), 0) << "run " << run_index << " leaked";
    if (!abort) {
      ASSERT_EQ(popped.size(), pushed) << "run " << run_index;
    }
    ASSERT_LE(popped.size(), pushed);
    for (std::size_t i = 0; i < popped.size(); ++i)
      ASSERT_EQ(popped[i], i) << "run " << run_index;
  }
}

// Each run is a few dozen items plus a thread start, so they are far fewer than the item count.
TEST(BoundedQueueStress, CloseWhileDraining) {
  end_races(false, stress_items() / 2000);
}
TEST(BoundedQueueStress, AbortWhileBusy) {
  end_races(true, stress_items() / 2000);
}

// abort() from a third thread while both sides are busy: every popped item was pushed, in order,
// and nothing leaks.
TEST(BoundedQueueStress, AbortFromAnotherThread) {
  Watchdog watchdog(std::chrono::seconds(120));
  std::mt19937 random(11);
  const std::uint64_t runs = stress_items() / 5000;
  for (std::uint64_t run_index = 0; run_index < runs; ++run_index) {
    std::vector<std::uint64_t> popped;
    std::uint64_t pushed = 0;
    {
      BoundedQueue<Tracked> queue(1 + random() % 4);
      const auto delay = std::chrono::microseconds(random() % 200);
      std::thread producer([&] {
        for (std::uint64_t i = 0; queue.push(Tracked(i)); ++i)
          ++pushed;
      });
      std::thread aborter([&] {
        std::this_thread::sleep_for(delay);
        queue.abort();
      });
      while (auto item = queue.pop())
        popped.push_back(item->value());
      producer.join();
      aborter.join();
    }
    ASSERT_EQ(Tracked::alive(), 0) << "run " << run_index << " leaked";
    ASSERT_LE(popped.size(), pushed);
    for (std::size_t i = 0; i < popped.size(); ++i)
      ASSERT_EQ(popped[i], i) << "run " << run_index;
  }
}

}  // namespace
