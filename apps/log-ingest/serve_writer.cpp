// ServeOutputs: records and dead letters to their outputs, with the service's accounting, and the
// retries of what a failure left.
#include "serve_writer.hpp"

#include <algorithm>
#include <cstdio>
#include <system_error>
#include <thread>

namespace conveyor::log_ingest {

namespace {

using namespace std::chrono_literals;
using Wait = OutputFile::Wait;

constexpr std::chrono::milliseconds first_wait = 50ms;  // before the first retry
constexpr std::chrono::milliseconds longest_wait = 1s;  // between retries, at most

void add(std::atomic<std::uint64_t>& counter, std::uint64_t count) {
  counter.fetch_add(count, std::memory_order_relaxed);
}

void report_holding(const OutputFile& output, const char* what) {
  if (!output.holding()) return;
  std::fprintf(stderr,
               "log-ingest: cannot write %s to '%s' (%s): holding %llu, to be written again "
               "until it takes them\n",
               what, output.path().c_str(), std::generic_category().message(output.error()).c_str(),
               static_cast<unsigned long long>(output.held_records()));
}

void report_lost(const OutputFile& output, const char* what, std::uint64_t lost) {
  if (lost == 0) return;
  std::fprintf(stderr, "log-ingest: lost %llu %s that '%s' did not take (%s)\n",
               static_cast<unsigned long long>(lost), what, output.path().c_str(),
               std::generic_category().message(output.error()).c_str());
}

}  // namespace

bool ServeOutputs::reopen_if_asked(Wait wait) {
  if (!reopen_.exchange(false, std::memory_order_relaxed)) return false;
  const bool was_holding = holding();
  account(records_.reopen(wait), dead_letters_.reopen(wait));
  if (!was_holding) note_holding(false);  // an open that failed holds, and is retried
  return true;
}

void ServeOutputs::account(const OutputResult& records, const OutputResult& dead_letters) {
  add(accounting.written, records.written);
  add(accounting.rejected, dead_letters.written);
  add(accounting.lost_on_output, records.lost + dead_letters.lost);
  if (records.failed) add(accounting.record_errors, 1);
  if (dead_letters.failed) add(accounting.dead_letter_errors, 1);
  report_lost(records_, "records", records.lost);
  report_lost(dead_letters_, "dead letters", dead_letters.lost);
  if (records.lost != 0 || dead_letters.lost != 0) {
    for (AckToken& token : unflushed_)
      token.fail();  // some of their lines are not in the output: read them again
    unflushed_.clear();
  }
  if (records_.flushed() && dead_letters_.flushed()) unflushed_.clear();
  accounting.records_held.store(records_.held_records(), std::memory_order_relaxed);
  accounting.dead_letters_held.store(dead_letters_.held_records(), std::memory_order_relaxed);
}

void ServeOutputs::flush_together(Wait wait, std::uint64_t records_flushes,
                                  std::uint64_t dead_letter_flushes) {
  // The tokens wait for both files: when one flushed, the other follows, or a few dead letters
  // short of their count would hold every batch's token (and the checkpoint) back.
  if (holding()) return;
  const bool records_flushed = records_.flushes() != records_flushes;
  const bool dead_letters_flushed = dead_letters_.flushes() != dead_letter_flushes;
  if (records_flushed && !dead_letters_.flushed()) account({}, dead_letters_.flush_now(wait));
  if (dead_letters_flushed && !records_.flushed()) account(records_.flush_now(wait), {});
}

void ServeOutputs::note_holding(bool was_holding) {
  const bool now_holding = holding();
  // Each output that starts holding says so once.
  if (records_.holding() && !records_reported_) report_holding(records_, "records");
  if (dead_letters_.holding() && !dead_letters_reported_) {
    report_holding(dead_letters_, "dead letters");
  }
  records_reported_ = records_.holding();
  dead_letters_reported_ = dead_letters_.holding();
  if (now_holding && !was_holding) {
    attempts_ = 1;
    backoff_ = first_wait;
  } else if (now_holding) {
    ++attempts_;
    backoff_ = std::min<Clock::duration>(2 * backoff_, longest_wait);
  } else if (was_holding) {
    std::fprintf(stderr, "log-ingest: the outputs took what they held, after %llu failed writes\n",
                 static_cast<unsigned long long>(attempts_));
    attempts_ = 0;
  }
  if (now_holding) retry_at_ = Clock::now() + backoff_;
}

void ServeOutputs::retry(Wait wait) {
  account(records_.retry(wait), dead_letters_.retry(wait));
  note_holding(true);
}

void ServeOutputs::write(const stages::Batch& batch) {
  std::lock_guard lock(mutex_);
  (void)reopen_if_asked(Wait::may);
  const bool was_holding = holding();
  if (!batch.ack.empty()) unflushed_.push_back(batch.ack);  // settled by account()
  const std::uint64_t records_flushes = records_.flushes();
  const std::uint64_t dead_letter_flushes = dead_letters_.flushes();
  const OutputResult records = records_.write(batch.output, batch.counts.records);
  const OutputResult dead_letters = dead_letters_.write(batch.dead_letters, batch.counts.rejected);
  add(accounting.filtered, batch.counts.filtered);
  account(records, dead_letters);
  flush_together(Wait::may, records_flushes, dead_letter_flushes);
  if (!was_holding) note_holding(false);
  // An output that holds what a failure left takes nothing more until it has written it: the
  // writer waits here, and the pipeline behind it. A reopen asked for meanwhile (logrotate made a
  // new file) is done at once, and what is held goes to the new file.
  while (holding() && !abandoned_.load(std::memory_order_relaxed)) {
    const Clock::duration wait = retry_at_ - Clock::now();
    if (wait > Clock::duration::zero()) {
      std::this_thread::sleep_for(std::min<Clock::duration>(wait, 20ms));
    }
    if (reopen_if_asked(Wait::may) || Clock::now() >= retry_at_) retry(Wait::may);
  }
  if (holding()) {  // abandoned: what is held is lost, and counted
    account(records_.give_up(), dead_letters_.give_up());
    attempts_ = 0;
  }
}

void ServeOutputs::tick() {
  // The writer may be blocked in a write (a full disk, a stalled pipe), or waiting to write again
  // what an output holds: the caller's thread must not wait for it, and the writer does what is
  // due itself. Nor does the timer wait on a stalled pipe (Wait::never).
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  if (reopen_if_asked(Wait::never) && holding()) {
    retry(Wait::never);
  } else if (holding()) {
    if (Clock::now() >= retry_at_) retry(Wait::never);
  } else {
    const std::uint64_t records_flushes = records_.flushes();
    const std::uint64_t dead_letter_flushes = dead_letters_.flushes();
    account(records_.tick(), dead_letters_.tick());
    flush_together(Wait::never, records_flushes, dead_letter_flushes);
    note_holding(false);
  }
}

void ServeOutputs::reopen() {
  reopen_.store(true, std::memory_order_relaxed);
  tick();
}

void ServeOutputs::abandon() {
  abandoned_.store(true, std::memory_order_relaxed);
}

bool ServeOutputs::close() {
  std::lock_guard lock(mutex_);
  const OutputResult records = records_.close();
  const OutputResult dead_letters = dead_letters_.close();
  const bool closed = !records.failed && !dead_letters.failed;
  if (!closed) {
    // The last fsync failed: what it covered may not be on disk, so its lines are read again.
    for (AckToken& token : unflushed_)
      token.fail();
  }
  unflushed_.clear();
  account(records, dead_letters);
  return closed;
}

}  // namespace conveyor::log_ingest
