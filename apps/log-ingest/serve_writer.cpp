// ServeOutputs: records and dead letters to their outputs, with the service's accounting.
#include "serve_writer.hpp"

namespace conveyor::log_ingest {

namespace {

void add(std::atomic<std::uint64_t>& counter, std::uint64_t count) {
  counter.fetch_add(count, std::memory_order_relaxed);
}

}  // namespace

void ServeOutputs::reopen_if_asked() {
  if (!reopen_.exchange(false, std::memory_order_relaxed)) return;
  account(records_.reopen(), dead_letters_.reopen());
}

void ServeOutputs::account(const OutputResult& records, const OutputResult& dead_letters) {
  add(accounting.written, records.written);
  add(accounting.rejected, dead_letters.written);
  add(accounting.lost_on_output, records.lost + dead_letters.lost);
  if (records.failed) add(accounting.record_errors, 1);
  if (dead_letters.failed) add(accounting.dead_letter_errors, 1);
  if (records.lost != 0 || dead_letters.lost != 0) {
    for (AckToken& token : unflushed_)
      token.fail();  // some of their lines are not in the output: read them again
    unflushed_.clear();
  }
  if (records_.flushed() && dead_letters_.flushed()) unflushed_.clear();
}

void ServeOutputs::write(const stages::Batch& batch) {
  std::lock_guard lock(mutex_);
  reopen_if_asked();
  if (!batch.ack.empty()) unflushed_.push_back(batch.ack);  // settled by account()
  const OutputResult records = records_.write(batch.output, batch.counts.records);
  const OutputResult dead_letters = dead_letters_.write(batch.dead_letters, batch.counts.rejected);
  add(accounting.filtered, batch.counts.filtered);
  account(records, dead_letters);
}

void ServeOutputs::tick() {
  // The writer may be blocked in a write (a full disk, a stalled pipe): the caller's thread must
  // not wait for it, and the writer does what is due itself.
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  reopen_if_asked();
  account(records_.tick(), dead_letters_.tick());
}

void ServeOutputs::reopen() {
  reopen_.store(true, std::memory_order_relaxed);
  tick();
}

bool ServeOutputs::close() {
  std::lock_guard lock(mutex_);
  const OutputResult records = records_.close();
  const OutputResult dead_letters = dead_letters_.close();
  account(records, dead_letters);
  const bool closed = !records.failed && !dead_letters.failed;
  for (AckToken& token : unflushed_) {
    if (!closed) token.fail();
  }
  unflushed_.clear();
  return closed;
}

}  // namespace conveyor::log_ingest
