// ServeWriter: records and dead letters to their files, with the service's accounting.
#include "serve_writer.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace conveyor::log_ingest {

namespace {

// fsync, where the file can be synced: a pipe, a socket or a terminal cannot (EINVAL), and has
// nothing to sync.
bool sync_file(std::FILE* file) {
  return ::fsync(::fileno(file)) == 0 || errno == EINVAL;
}

// Writes and flushes `text` (fsyncs it too when asked); false if any of it failed.
// An output whose reopening failed (its name kept, no file) is tried again each time.
bool write(stages::OutputFile& output, const std::string& text, bool sync) {
  if (text.empty()) return true;
  if (output.file == nullptr && !output.name.empty()) {
    output.file = std::fopen(output.name.c_str(), "ab");
  }
  if (output.file == nullptr) return output.name.empty();
  bool good = std::fwrite(text.data(), 1, text.size(), output.file) == text.size();
  good = std::fflush(output.file) == 0 && good;
  if (sync && output.file != stdout) good = sync_file(output.file) && good;
  if (good) output.bytes += text.size();
  std::clearerr(output.file);
  return good;
}

bool close_one(stages::OutputFile& output) {
  if (output.file == nullptr) return true;
  bool good = std::fflush(output.file) == 0;
  if (output.file != stdout) {
    good = sync_file(output.file) && good;
    good = std::fclose(output.file) == 0 && good;
  }
  output.file = nullptr;
  return good;
}

// Closes `output` and opens its path again for appending (stdout and none stay as they are).
bool reopen_one(stages::OutputFile& output) {
  if (output.file == nullptr || output.file == stdout) return true;
  bool good = std::fflush(output.file) == 0;
  good = std::fclose(output.file) == 0 && good;
  output.file = std::fopen(output.name.c_str(), "ab");
  return output.file != nullptr && good;
}

void add(std::atomic<std::uint64_t>& counter, std::uint64_t count) {
  counter.fetch_add(count, std::memory_order_relaxed);
}

}  // namespace

bool ServeOutputs::close() {
  const bool records_closed = close_one(records);
  return close_one(dead_letters) && records_closed;
}

void ServeWriter::operator()(const stages::Batch& batch) {
  ServeOutputs& out = *outputs_;
  Accounting& accounting = out.accounting;
  if (out.reopen.exchange(false, std::memory_order_relaxed)) {
    if (!reopen_one(out.records)) add(accounting.record_errors, 1);
    if (!reopen_one(out.dead_letters)) add(accounting.dead_letter_errors, 1);
  }
  if (write(out.records, batch.output, out.fsync)) {
    add(accounting.written, batch.counts.records);
  } else {
    add(accounting.record_errors, 1);
    add(accounting.lost_on_output, batch.counts.records);
  }
  if (!write(out.dead_letters, batch.dead_letters, out.fsync)) {
    add(accounting.dead_letter_errors, 1);
  }
  add(accounting.rejected, batch.counts.rejected);
  add(accounting.filtered, batch.counts.filtered);
}

}  // namespace conveyor::log_ingest
