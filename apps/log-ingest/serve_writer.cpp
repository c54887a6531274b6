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
  if (!records_.reopen()) add(accounting.record_errors, 1);
  if (!dead_letters_.reopen()) add(accounting.dead_letter_errors, 1);
}

void ServeOutputs::settle_if_flushed() {
  if (records_.flushed() && dead_letters_.flushed()) unflushed_.clear();
}

void ServeOutputs::write(const stages::Batch& batch) {
  std::lock_guard lock(mutex_);
  reopen_if_asked();
  bool good = true;
  if (records_.write(batch.output, batch.counts.records)) {
    add(accounting.written, batch.counts.records);
  } else {
    good = false;
    add(accounting.record_errors, 1);
    add(accounting.lost_on_output, batch.counts.records);
  }
  if (!dead_letters_.write(batch.dead_letters, batch.counts.rejected)) {
    good = false;
    add(accounting.dead_letter_errors, 1);
  }
  add(accounting.rejected, batch.counts.rejected);
  add(accounting.filtered, batch.counts.filtered);
  if (!batch.ack.empty()) {
    AckToken token = batch.ack;
    if (!good) {
      token.fail();
    } else if (!records_.flushed() || !dead_letters_.flushed()) {
      unflushed_.push_back(std::move(token));
    }
  }
  settle_if_flushed();
}

void ServeOutputs::tick() {
  // The writer may be blocked in a write (a full disk, a stalled pipe): the caller's thread must
  // not wait for it, and the writer does what is due itself.
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  reopen_if_asked();
  const bool records_ticked = records_.tick();
  const bool dead_letters_ticked = dead_letters_.tick();
  if (!records_ticked) add(accounting.record_errors, 1);
  if (!dead_letters_ticked) add(accounting.dead_letter_errors, 1);
  if (!records_ticked || !dead_letters_ticked) {
    for (AckToken& token : unflushed_)
      token.fail();  // a flush that failed: not known to be written
    unflushed_.clear();
  }
  settle_if_flushed();
}

void ServeOutputs::reopen() {
  reopen_.store(true, std::memory_order_relaxed);
  tick();
}

bool ServeOutputs::close() {
  std::lock_guard lock(mutex_);
  const bool records_closed = records_.close();
  const bool closed = dead_letters_.close() && records_closed;
  for (AckToken& token : unflushed_) {
    if (!closed) token.fail();
  }
  unflushed_.clear();
  return closed;
}

}  // namespace conveyor::log_ingest
