// Stress tests for conveyor::sync::MpmcBoundedQueue: millions of items through 1:1, 1:4, 4:1 and
// 4:4 producers and consumers, with every form of push and pop (timed pushes that often give up
// among blocking ones), counted and checksummed, and many
// short runs that end with close() or abort() at a random point.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <random>
#include <thread>
#include <vector>

#include "conveyor/sync/mpmc_bounded_queue.hpp"
#include "stress.hpp"
#include "tracked.hpp"
#include "watchdog.hpp"

namespace {

using conveyor::sync::MpmcBoundedQueue;
using conveyor::testing::stress_items;
using conveyor::testing::Tracked;
using conveyor::testing::Watchdog;

enum class Form {
  blocking,
  polling,
  bulk,
  mixed,
  timed,  // producers: every other one pushes with short timeouts, again until it goes in
};

// An item names its producer in the high bits and its sequence number in the low bits.
constexpr int producer_shift = 48;
std::uint64_t make_item(std::uint64_t producer, std::uint64_t sequence) {
  return (producer << producer_shift) | sequence;
}

struct Received {
  std::uint64_t count = 0;
  std::uint64_t sum = 0;
  std::uint64_t xor_all = 0;
  std::uint64_t out_of_order = 0;  // items of one producer that overtook each other at a consumer
  std::vector<std::uint64_t> last_sequence;

  explicit Received(std::size_t producers) : last_sequence(producers, 0) {}

  void add(std::uint64_t item) {
    const std::uint64_t producer = item >> producer_shift;
    const std::uint64_t sequence_plus_one = (item & ((1ull << producer_shift) - 1)) + 1;
    out_of_order += sequence_plus_one <= last_sequence[producer] ? 1 : 0;
    last_sequence[producer] = sequence_plus_one;
    ++count;
    sum += item;
    xor_all ^= item;
  }
};

Form form_of(Form form, std::size_t thread_index) {
  if (form != Form::mixed) return form;
  return static_cast<Form>(thread_index % 3);
}

// `items` in total, split evenly between the producers.
void run(std::size_t producers, std::size_t consumers, std::size_t capacity, Form form,
         std::uint64_t items) {
  Watchdog watchdog(std::chrono::seconds(180));
  MpmcBoundedQueue<std::uint64_t> queue(capacity);
  const std::uint64_t per_producer = items / producers;

  std::vector<Received> received(consumers, Received(producers));
  std::vector<std::thread> consumer_threads;
  for (std::size_t c = 0; c < consumers; ++c) {
    consumer_threads.emplace_back([&, c] {
      Received& mine = received[c];
      switch (form_of(form, c)) {
        case Form::blocking:
        case Form::mixed:
        case Form::timed:
          while (auto item = queue.pop())
            mine.add(*item);
          break;
        case Form::polling:
          for (;;) {
            if (auto item = queue.try_pop()) {
              mine.add(*item);
            } else if (queue.closed() && queue.size_approx() == 0) {
              // try_pop reports empty while a push is still writing, so finish with pop.
              while (auto rest = queue.pop())
                mine.add(*rest);
              break;
            } else {
              std::this_thread::yield();
            }
          }
          break;
        case Form::bulk: {
          std::vector<std::uint64_t> batch;
          std::mt19937 random(static_cast<unsigned>(c));
          for (;;) {
            batch.clear();
            if (queue.pop_bulk(std::back_inserter(batch), 1 + random() % 100) == 0) break;
            for (std::uint64_t item : batch)
              mine.add(item);
          }
          break;
        }
      }
    });
  }

  std::vector<std::thread> producer_threads;
  for (std::size_t p = 0; p < producers; ++p) {
    producer_threads.emplace_back([&, p] {
      switch (form_of(form, p + 1)) {
        case Form::blocking:
        case Form::mixed:
          for (std::uint64_t i = 0; i < per_producer; ++i)
            ASSERT_TRUE(queue.push(make_item(p, i)));
          break;
        case Form::polling:
          for (std::uint64_t i = 0; i < per_producer; ++i) {
            std::uint64_t item = make_item(p, i);
            while (!queue.try_push(item))
              std::this_thread::yield();
          }
          break;
        case Form::timed: {
          std::mt19937 random(static_cast<unsigned>(200 + p));
          for (std::uint64_t i = 0; i < per_producer; ++i) {
            std::uint64_t item = make_item(p, i);
            if (p % 2 == 1) {
              ASSERT_TRUE(queue.push(item));
              continue;
            }
            while (!queue.try_push_for(item, std::chrono::microseconds(random() % 50)))
              ASSERT_FALSE(queue.closed());
          }
          break;
        }
        case Form::bulk: {
          std::mt19937 random(static_cast<unsigned>(100 + p));
          std::vector<std::uint64_t> batch;
          for (std::uint64_t next = 0; next < per_producer;) {
            const std::uint64_t size =
                std::min<std::uint64_t>(1 + random() % 100, per_producer - next);
            batch.clear();
            for (std::uint64_t i = 0; i < size; ++i)
              batch.push_back(make_item(p, next + i));
            ASSERT_EQ(queue.push_bulk(batch.begin(), batch.end()), size);
            next += size;
          }
          break;
        }
      }
    });
  }
  for (auto& producer : producer_threads)
    producer.join();
  queue.close();
  for (auto& consumer : consumer_threads)
    consumer.join();

  std::uint64_t count = 0;
  std::uint64_t sum = 0;
  std::uint64_t xor_all = 0;
  std::uint64_t out_of_order = 0;
  for (const Received& mine : received) {
    count += mine.count;
    sum += mine.sum;
    xor_all ^= mine.xor_all;
    out_of_order += mine.out_of_order;
  }
  std::uint64_t expected_sum = 0;
  std::uint64_t expected_xor = 0;
  for (std::uint64_t p = 0; p < producers; ++p) {
    for (std::uint64_t i = 0; i < per_producer; ++i) {
      expected_sum += make_item(p, i);
      expected_xor ^= make_item(p, i);
    }
  }
  EXPECT_EQ(count, per_producer * producers);
  EXPECT_EQ(sum, expected_sum);
  EXPECT_EQ(xor_all, expected_xor);
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(queue.size_approx(), 0u);
}

// The item count is the same for every shape; shapes with more threads than the two cores of the
// CI machine split it between their producers, so they take longer per item but not in total.
TEST(MpmcBoundedQueueStress, OneToOne) {
  run(1, 1, 64, Form::blocking, stress_items());
}
TEST(MpmcBoundedQueueStress, OneToFour) {
  run(1, 4, 64, Form::blocking, stress_items());
}
TEST(MpmcBoundedQueueStress, FourToOne) {
  run(4, 1, 64, Form::blocking, stress_items());
}
TEST(MpmcBoundedQueueStress, FourToFour) {
  run(4, 4, 64, Form::blocking, stress_items());
}
TEST(MpmcBoundedQueueStress, CapacityOneTwoToTwo) {
  run(2, 2, 1, Form::blocking, stress_items());
}
TEST(MpmcBoundedQueueStress, TryFormsTwoToTwo) {
  run(2, 2, 64, Form::polling, stress_items());
}
TEST(MpmcBoundedQueueStress, BulkFormsTwoToTwo) {
  run(2, 2, 256, Form::bulk, stress_items());
}
TEST(MpmcBoundedQueueStress, MixedFormsFourToFour) {
  run(4, 4, 16, Form::mixed, stress_items());
}
TEST(MpmcBoundedQueueStress, TimedAndBlockingPushesFourToTwo) {
  run(4, 2, 2, Form::timed, stress_items());
}

// Many short runs with two producers and two consumers in which one producer ends the stream at a
// random point. With close(), the consumers get exactly the items whose push returned true; with
// abort(), a subset of them; either way every item is one that was pushed, each producer's items
// reach a consumer in order, and nothing leaks.
void end_races(bool abort, std::uint64_t runs) {
  Watchdog watchdog(std::chrono::seconds(180));
  std::mt19937 random(abort ? 17 : 13);
  for (std::uint64_t run_index = 0; run_index < runs; ++run_index) {
    const std::size_t capacity = 1 + random() % 6;
    const std::uint64_t end_after = random() % 40;
    std::atomic<std::uint64_t> pushed_sum{0};
    std::atomic<std::uint64_t> pushed_count{0};
    std::atomic<std::uint64_t> popped_sum{0};
    std::atomic<std::uint64_t> popped_count{0};
    std::atomic<std::uint64_t> out_of_order{0};
    {
      MpmcBoundedQueue<Tracked> queue(capacity);
      std::vector<std::thread> threads;
      for (std::uint64_t p = 0; p < 2; ++p) {
        threads.emplace_back([&, p] {
          for (std::uint64_t i = 0;; ++i) {
            if (p == 0 && i == end_after) {
              if (abort) {
                queue.abort();
              } else {
                queue.close();
              }
            }
            const std::uint64_t item = make_item(p, i);
            if (!queue.push(Tracked(item))) break;
            pushed_sum.fetch_add(item);
            pushed_count.fetch_add(1);
          }
        });
      }
      for (std::uint64_t c = 0; c < 2; ++c) {
        threads.emplace_back([&, c] {
          Received mine(2);
          if (c == 0) {
            while (auto item = queue.pop())
              mine.add(item->value());
          } else {
            std::vector<Tracked> batch;
            while (queue.pop_bulk(std::back_inserter(batch), 3) > 0) {
              for (const Tracked& item : batch)
                mine.add(item.value());
              batch.clear();
            }
          }
          popped_sum.fetch_add(mine.sum);
          popped_count.fetch_add(mine.count);
          out_of_order.fetch_add(mine.out_of_order);
        });
      }
      for (auto& thread : threads)
        thread.join();
    }
    ASSERT_EQ(Tracked::alive(), 0) << "run " << run_index << " leaked";
    ASSERT_EQ(out_of_order.load(), 0u) << "run " << run_index;
    if (abort) {
      ASSERT_LE(popped_count.load(), pushed_count.load()) << "run " << run_index;
    } else {
      ASSERT_EQ(popped_count.load(), pushed_count.load()) << "run " << run_index;
      ASSERT_EQ(popped_sum.load(), pushed_sum.load()) << "run " << run_index;
    }
  }
}

// Each run starts four threads and most of its time goes to starting and scheduling them on the
// two cores, so runs are far fewer than the item count.
TEST(MpmcBoundedQueueStress, CloseWhileDraining) {
  end_races(false, stress_items() / 20000);
}
TEST(MpmcBoundedQueueStress, AbortWhileBusy) {
  end_races(true, stress_items() / 20000);
}

}  // namespace
