// FileTailer: follows the files that globs name, across rotation, truncation and restarts, and
// cuts what is appended to them into chunks that carry acknowledgement tokens. Why it works as it
// does: docs/design/file-tailing.md.
//
//   FileTailer tailer(options, input, checkpoint.load().entries);
//   for (;;) {
//     tailer.poll([&](Chunk chunk) { return push(std::move(chunk)); });
//     if (due) checkpoint.save(tailer.checkpoint());
//   }
//
// Contract:
// - Files are those `include` names and `exclude` does not (PathGlob), looked for every
//   `glob_interval` or after rescan(). Found at the first look: read from the start, or the end
//   with `start_at_end` (a gzip file's end: all of it); found later: from the start. gzip files
//   are read once, whole; one that inflates to the start of a plain file it knows is that file
//   compressed, and goes on from where that file ends.
// - Every line of every file is handed out once per run, in order per file, across rotation by
//   rename, copytruncate (its copy goes on where it was) and deletion; bytes a truncation took
//   unread, with no copy within `rotate_wait`, are counted in `lost_truncated_bytes`.
// - Each chunk carries a token of its file's AckLedger; checkpoint() gives each file's
//   acknowledged (or restored) offset. Restored entries resume their files exactly, one renamed
//   out of the globs within its directory while the tailer was not running too.
// - At most `max_open_files` descriptors are open; a compressed file gives its back once read.
// - A file closed as idle is opened again by a look that finds it grown, or at once by modified().
// - One thread calls poll, rescan, modified and checkpoint; stats() may be read from any thread.
// `emit` may
//   block, and may call checkpoint() while it waits; when it returns false the tailer stops
//   reading for this poll, and the chunk's token must have been failed by whoever dropped it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "conveyor/stages/checkpoint_file.hpp"
#include "conveyor/stages/chunk.hpp"

namespace conveyor::stages {

struct TailOptions {
  std::vector<std::string> include;
  std::vector<std::string> exclude;
  bool start_at_end = false;
  std::chrono::milliseconds glob_interval{1000};
  std::chrono::milliseconds rotate_wait{5000};
  std::chrono::milliseconds partial_line_timeout{5000};
  std::size_t max_line_bytes = std::size_t{64} << 10;
  std::size_t read_bytes = std::size_t{256} << 10;
  std::size_t fingerprint_bytes = 256;
  std::size_t max_files = 10'000;     // files a look takes (the first ones in path order)
  std::size_t max_open_files = 1024;  // descriptors open at once
  std::chrono::milliseconds close_idle{std::chrono::minutes(5)};
};

struct TailStats {
  std::atomic<std::uint64_t> files{0};        // tracked now
  std::atomic<std::uint64_t> open_files{0};   // with a descriptor open now
  std::atomic<std::uint64_t> bytes{0};        // read
  std::atomic<std::uint64_t> rotations{0};    // files whose path went to another file
  std::atomic<std::uint64_t> truncations{0};  // files found shorter than what was read
  std::atomic<std::uint64_t> copies{0};       // copies that went on from a truncated file
  std::atomic<std::uint64_t> lost_truncated_bytes{0};
  std::atomic<std::uint64_t> glob_truncated{0};  // looks that found more than max_files
  std::atomic<std::uint64_t> gzip_errors{0};     // compressed files that could not all be read
};

class FileTailer {
 public:
  using Emit = std::function<bool(Chunk&&)>;
  using Clock = std::chrono::steady_clock;

  // `input`: the name and format the chunks' Input objects take (one per file, with its path).
  FileTailer(TailOptions options, const Input& input, std::vector<CheckpointEntry> restored);
  ~FileTailer();
  FileTailer(const FileTailer&) = delete;
  FileTailer& operator=(const FileTailer&) = delete;

  // Looks for files if due, then reads what is new in each. Returns the bytes read.
  std::size_t poll(const Emit& emit, Clock::time_point now = Clock::now());
  // Whether the last poll read every file to the end it found (no file left bytes for later).
  [[nodiscard]] bool caught_up() const noexcept { return caught_up_; }
  // Stopping: from now on the files still at a path are read no further (what is left of them
  // waits for the next start, from the checkpoint), also within the read in progress.
  void hold_linked() noexcept { hold_linked_ = true; }
  // Called by `emit`: whether the chunk it is given comes from a file deleted while open.
  [[nodiscard]] bool handing_out_unlinked() const noexcept;
  // Then: reads on in the files deleted while open, which nothing could read after a restart, a
  // few reads each, and hands out a last line they leave unfinished. Returns the bytes read: 0
  // once each is read to its end (or `emit` refused).
  std::size_t drain_deleted(const Emit& emit, Clock::time_point now = Clock::now());
  // The next poll looks for files whatever the interval (a directory changed).
  void rescan() noexcept { scan_due_ = true; }
  // `path` was written to (a watcher saw it): a file there that was closed as idle is opened
  // again now, so that the next poll reads it without waiting for a look.
  void modified(const std::string& path);
  // Whether some file is closed as idle: only then does modified() do anything.
  [[nodiscard]] bool closed_idle() const noexcept { return !idle_.empty(); }

  [[nodiscard]] std::vector<CheckpointEntry> checkpoint() const;
  // Whether every chunk handed out was acknowledged.
  [[nodiscard]] bool acknowledged() const;
  // The directories of the files tracked and of the globs' bases, for a watcher.
  [[nodiscard]] std::vector<std::string> directories() const;
  [[nodiscard]] const TailStats& stats() const noexcept { return stats_; }

 private:
  struct File;
  void scan(Clock::time_point now);
  // Files new to the tailer go into `found`, for scan() to identify once every path is tracked.
  void track(const std::string& path, Clock::time_point now, std::vector<File*>& found);
  // With `by_inode_only`, a file that no restored entry of its own inode matches stays waiting.
  bool identify(File& file, Clock::time_point now, bool by_inode_only = false);
  void adopt(File& file);
  // Detached files that were closed as idle: opened again where they were renamed to.
  void reopen_renamed(const std::vector<File*>& files);
  // At the first look, restored entries whose inode no listed path has: found where they were
  // renamed to in their directory, and read from their offset to their end (at a later look,
  // those that max_open_files held back then).
  void recover_renamed(Clock::time_point now);
  // The restored entries, none taken yet, and their indexes.
  void restore(std::vector<CheckpointEntry> entries);
  std::size_t read(File& file, const Emit& emit, Clock::time_point now, bool& stopped);
  // Hands `emit` a chunk of `file`, which handing_out_unlinked() then asks about.
  bool emit_from(const File& file, const Emit& emit, Chunk&& chunk);
  // After hold_linked(): whether `file` still has a name, and so is read no further.
  [[nodiscard]] bool held_back(const File& file) const noexcept;
  std::size_t read_gzip(File& file, const Emit& emit, Clock::time_point now, bool& stopped);
  void truncated(File& file, Clock::time_point now);
  // A file taken for a copy that is none: read as a file of its own, from its start.
  void adopt_anew(File& copy);
  // `copy` of a truncated file goes on where `source` was: its position, ledger and partial line.
  void go_on_in(File& copy, File& source, Clock::time_point now);
  static bool source_unchanged(const File& file);
  void release_idle(Clock::time_point now);

  struct InodeKey {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    bool operator==(const InodeKey&) const = default;
  };
  struct InodeHash {
    std::size_t operator()(const InodeKey& key) const noexcept {
      return std::hash<std::uint64_t>{}(key.inode * 0x9e3779b97f4a7c15ULL ^ key.device);
    }
  };
  // A file new to the tailer, opened at `path`; null if it cannot be.
  std::unique_ptr<File> open_file(const std::string& path, InodeKey key, Clock::time_point now);
  // The regular files of `directory`, by inode; `listings` keeps each directory's for the others.
  using Listing = std::unordered_map<InodeKey, std::string, InodeHash>;
  static const Listing& listing(std::unordered_map<std::string, Listing>& listings,
                                const std::string& directory);
  void index(File& file);  // by its fingerprint, for copies to find it
  void unindex(File& file);

  TailOptions options_;
  Input input_;
  std::vector<CheckpointEntry> restored_;  // from the checkpoint; `claimed_` once matched
  std::vector<bool> claimed_;
  std::unordered_multimap<InodeKey, std::size_t, InodeHash> restored_by_inode_;
  std::unordered_multimap<std::uint64_t, std::size_t> restored_by_fingerprint_;
  std::size_t longest_restored_ = 0;  // the longest fingerprint among them
  // While restored entries are left: the inodes at the paths the last look listed, and those
  // whose file, opened, no longer began as their entries say (truncated, or a reused inode).
  std::unordered_set<InodeKey, InodeHash> listed_;
  std::unordered_set<InodeKey, InodeHash> inode_changed_;
  // Restored entries found renamed in their directory while max_open_files were open.
  std::unordered_set<InodeKey, InodeHash> waiting_recovery_;
  std::size_t open_files_ = 0;  // descriptors the files hold; declared before them
  std::vector<std::unique_ptr<File>> files_;
  std::unordered_map<InodeKey, File*, InodeHash> by_inode_;  // every file but parked ones
  std::unordered_multimap<std::uint64_t, File*> by_fingerprint_;
  // Live files closed as idle, by the path they were at then; checked against by_inode_ at use.
  std::unordered_map<std::string, InodeKey> idle_;
  bool first_scan_ = true;
  bool scan_due_ = true;
  bool caught_up_ = true;
  bool hold_linked_ = false;  // hold_linked(): only files deleted while open are read
  int handing_out_fd_ = -1;   // the file whose chunk `emit` is given now
  Clock::time_point last_scan_{};
  Clock::time_point first_scan_at_{};
  TailStats stats_;
};

}  // namespace conveyor::stages
