// serve's ServeOutputs: a write that fails holds the writer, retrying, until the output takes what
// it held; nothing is lost, and the accounting, the gauges and the batches' tokens follow.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>

#include "conveyor/framework/ack.hpp"
#include "conveyor/stages/batch.hpp"
#include "file_size_limit.hpp"
#include "scratch_dir.hpp"
#include "serve_writer.hpp"
#include "watchdog.hpp"
#include "within.hpp"

namespace {

using conveyor::AckLedger;
using conveyor::log_ingest::ServeOutputs;
using conveyor::stages::Batch;
using conveyor::testing::FileSizeLimit;
using conveyor::testing::within;
using namespace std::chrono_literals;

Batch batch_of(std::string text, std::uint64_t records, AckLedger& ledger, std::uint64_t offset) {
  Batch batch;
  batch.output = std::move(text);
  batch.counts.records = records;
  batch.ack = ledger.issue(offset);
  return batch;
}

TEST(ServeOutputsTest, AWriterWaitsOutAFullDiskAndLosesNothing) {
  const conveyor::testing::Watchdog watchdog(30s);
  const conveyor::testing::ScratchDir dir{"serve-outputs"};
  const std::filesystem::path records = dir / "records.jsonl";
  ServeOutputs outputs(records.string(), "none", {});
  AckLedger ledger;
  const std::string a = "a\n";
  const std::string b = std::string(199, 'b') + "\n";
  {
    const Batch first = batch_of(a, 1, ledger, 10);
    outputs.write(first);
  }
  std::optional<FileSizeLimit> full(std::in_place, 100);  // as a full disk
  Batch second = batch_of(b, 2, ledger, 20);
  std::atomic<bool> returned{false};
  std::thread writer([&] {
    outputs.write(second);
    returned.store(true, std::memory_order_release);
  });
  // It failed, and failed again at its retries: the writer waits, holding the batch's records.
  ASSERT_TRUE(within(
      10s, [&] { return outputs.accounting.record_errors.load(std::memory_order_relaxed) >= 3; }));
  EXPECT_FALSE(returned.load(std::memory_order_acquire));
  EXPECT_EQ(outputs.accounting.records_held.load(std::memory_order_relaxed), 2U);
  EXPECT_EQ(ledger.acknowledged(), std::optional<std::uint64_t>(10));
  full.reset();  // room again
  writer.join();
  second.ack = {};
  EXPECT_EQ(outputs.accounting.written.load(std::memory_order_relaxed), 3U);
  EXPECT_EQ(outputs.accounting.lost_on_output.load(std::memory_order_relaxed), 0U);
  EXPECT_EQ(outputs.accounting.records_held.load(std::memory_order_relaxed), 0U);
  EXPECT_EQ(ledger.acknowledged(), std::optional<std::uint64_t>(20));
  EXPECT_FALSE(ledger.failed());
  std::ifstream in(records, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), a + b);
  EXPECT_TRUE(outputs.close());
}

// A flush that time made due fails on the service's timer, with no batch coming: the timer's
// ticks write the records again once the wait is over, and never block meanwhile.
TEST(ServeOutputsTest, TheTimerWritesAgainWhatAFailedTimedFlushHeld) {
  const conveyor::testing::Watchdog watchdog(30s);
  const conveyor::testing::ScratchDir dir{"serve-outputs"};
  ServeOutputs outputs((dir / "records.jsonl").string(), "none", {.flush_interval = 20ms});
  AckLedger ledger;
  {
    const Batch kept = batch_of(std::string(199, 'a') + "\n", 4, ledger, 10);
    outputs.write(kept);  // kept for the flush by time
  }
  {
    const FileSizeLimit full(100);
    ASSERT_TRUE(within(10s, [&] {
      outputs.tick();
      return outputs.accounting.records_held.load(std::memory_order_relaxed) == 4;
    }));
    EXPECT_EQ(outputs.accounting.written.load(std::memory_order_relaxed), 0U);
  }
  ASSERT_TRUE(within(10s, [&] {
    outputs.tick();
    return outputs.accounting.written.load(std::memory_order_relaxed) == 4;
  }));
  EXPECT_EQ(outputs.accounting.records_held.load(std::memory_order_relaxed), 0U);
  EXPECT_EQ(ledger.acknowledged(), std::optional<std::uint64_t>(10));
  EXPECT_TRUE(outputs.close());
}

// The drain's deadline passes while the output still fails: the writer gives up what it holds,
// counted as lost on output, and its tokens fail, so that a tailed file reads those lines again.
TEST(ServeOutputsTest, AbandonedTheWriterGivesUpWhatItHoldsAndCountsIt) {
  const conveyor::testing::Watchdog watchdog(30s);
  const conveyor::testing::ScratchDir dir{"serve-outputs"};
  ServeOutputs outputs((dir / "records.jsonl").string(), "none", {});
  AckLedger ledger;
  const FileSizeLimit full(100);
  {
    const Batch batch = batch_of(std::string(199, 'b') + "\n", 3, ledger, 10);
    std::thread writer([&] { outputs.write(batch); });
    ASSERT_TRUE(within(
        10s, [&] { return outputs.accounting.records_held.load(std::memory_order_relaxed) == 3; }));
    outputs.abandon();
    writer.join();
  }
  EXPECT_EQ(outputs.accounting.lost_on_output.load(std::memory_order_relaxed), 3U);
  EXPECT_EQ(outputs.accounting.records_held.load(std::memory_order_relaxed), 0U);
  EXPECT_TRUE(ledger.failed());
}

// Abandoned while only the dead letters fail: what the records file keeps for its next flush is
// not given up with them; it is written at the close.
TEST(ServeOutputsTest, AbandonGivesUpOnlyTheOutputThatHolds) {
  const conveyor::testing::Watchdog watchdog(30s);
  const conveyor::testing::ScratchDir dir{"serve-outputs"};
  ServeOutputs outputs((dir / "records.jsonl").string(), (dir / "dead.jsonl").string(),
                       {.flush_records = 100});
  AckLedger ledger;
  std::optional<FileSizeLimit> full(std::in_place, 1000);
  {
    Batch batch = batch_of("r\n", 1, ledger, 10);          // kept for the records' next flush
    batch.dead_letters = std::string(70'000, 'd') + "\n";  // sent at once, and cut short
    batch.counts.rejected = 2;
    std::thread writer([&] { outputs.write(batch); });
    ASSERT_TRUE(within(10s, [&] {
      return outputs.accounting.dead_letters_held.load(std::memory_order_relaxed) == 2;
    }));
    outputs.abandon();
    writer.join();
  }
  full.reset();
  EXPECT_EQ(outputs.accounting.lost_on_output.load(std::memory_order_relaxed), 2U);
  EXPECT_EQ(outputs.accounting.record_errors.load(std::memory_order_relaxed), 0U);
  EXPECT_TRUE(outputs.close());
  EXPECT_EQ(outputs.accounting.written.load(std::memory_order_relaxed), 1U);
  EXPECT_TRUE(ledger.failed());  // its dead letters were lost: the batch is read again
}

// Under a flush by count, a batch whose records reach the count flushes its dead letters too:
// otherwise a few dead letters short of their count would hold every token, and a tailed file's
// checkpoint, back.
TEST(ServeOutputsTest, TheTwoOutputsFlushTogether) {
  const conveyor::testing::ScratchDir dir{"serve-outputs"};
  ServeOutputs outputs((dir / "records.jsonl").string(), (dir / "dead.jsonl").string(),
                       {.flush_records = 2});
  AckLedger ledger;
  {
    Batch batch = batch_of("a\nb\n", 2, ledger, 10);  // the records' count: flushed
    batch.dead_letters = "x\n";                       // one of two: flushed with them
    batch.counts.rejected = 1;
    outputs.write(batch);
  }
  EXPECT_EQ(outputs.accounting.written.load(std::memory_order_relaxed), 2U);
  EXPECT_EQ(outputs.accounting.rejected.load(std::memory_order_relaxed), 1U);
  EXPECT_EQ(ledger.acknowledged(), std::optional<std::uint64_t>(10));
  EXPECT_TRUE(outputs.close());
}

// Still held when the service closes its outputs (the drain ends): lost on output,
// counted, and the tokens failed, so that a tailed file reads those lines again after a restart.
TEST(ServeOutputsTest, WhatIsStillHeldAtCloseIsCountedLostAndItsTokensFail) {
  const conveyor::testing::Watchdog watchdog(30s);
  const conveyor::testing::ScratchDir dir{"serve-outputs"};
  ServeOutputs outputs((dir / "records.jsonl").string(), "none", {.flush_records = 10});
  AckLedger ledger;
  {
    const Batch kept = batch_of("a\n", 1, ledger, 10);  // kept for the deferred flush
    outputs.write(kept);
  }
  const FileSizeLimit full(1);
  EXPECT_FALSE(outputs.close());
  EXPECT_EQ(outputs.accounting.lost_on_output.load(std::memory_order_relaxed), 1U);
  EXPECT_TRUE(ledger.failed());
}

}  // namespace
