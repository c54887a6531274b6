// FileInput: `log-ingest serve` following files (stages::FileTailer) on a thread of its own, with
// its checkpoint in STATE_DIR/NAME.checkpoint (stages::CheckpointFile), one file per input.
//
// - It waits for room in the Ingress, so a full pipeline slows reading and loses nothing.
// - inotify on the files' directories wakes it when they change, and opens again at once a file
//   closed as idle that is written to; without inotify (or for changes it does not report) it
//   looks every 100 ms, and for new files every glob_interval.
// - The checkpoint holds, for each file, the offset up to which every line was written by the
//   outputs (the chunks' ack tokens); it is saved every checkpoint_interval when it changed (also
//   in the middle of a read, and while it waits for room), and once more after a clean stop, when
//   everything read was written. So after SIGTERM a restart repeats nothing; after a kill, at most
//   what was written since the last save comes again.
// - A checkpoint that is empty or damaged at startup is set aside as `.corrupt`, and the input
//   starts as if it had none (every file from its beginning: lines may repeat, none is lost).
//
// Contract: ServiceInput's, except that `finished()` may be called from any thread. After
// stop_accepting it hands over nothing more of the files still at their paths (what it read and
// had not handed over is left to the next start), reads the files deleted while open to their
// end (nothing could after a restart; until the Ingress closes), and finishes; its thread then
// waits for the outputs to write what it handed over and saves the last checkpoint, until the
// input is destroyed. `abandon()`
// (the pipeline failed: what was dropped must be read again) saves nothing more.
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "serve_config.hpp"
#include "service_input.hpp"

namespace conveyor::log_ingest {

class FileInput final : public ServiceInput {
 public:
  FileInput(const InputConfig& config, const LimitsConfig& limits, Ingress& ingress,
            InputCounters& counters, std::string state_dir);
  ~FileInput() override;

  void start() override;
  void stop_accepting() override { stop_.store(true, std::memory_order_relaxed); }
  void close_all() override { stop_accepting(); }
  void abandon() override { abandoned_.store(true, std::memory_order_relaxed); }
  [[nodiscard]] bool finished() const override { return finished_.load(std::memory_order_acquire); }
  [[nodiscard]] bool settled() const override { return settled_.load(std::memory_order_acquire); }
  [[nodiscard]] std::string where() const override;

  [[nodiscard]] std::string checkpoint_path() const;

 private:
  void follow();

  std::string state_dir_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> closing_{false};  // destroyed: stop waiting for the outputs
  std::atomic<bool> abandoned_{false};
  std::atomic<bool> finished_{false};  // release: after its last push
  std::atomic<bool> settled_{false};   // release: after its last checkpoint
  std::thread follower_;
};

}  // namespace conveyor::log_ingest
