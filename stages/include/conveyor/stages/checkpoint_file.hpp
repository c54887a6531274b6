// CheckpointFile: where a tailing input keeps how far it got in each file, saved so that a crash
// at any moment leaves the old checkpoint or the new one, never a mix or an empty file.
//
//   CheckpointFile checkpoint("/var/lib/log-ingest/web.checkpoint");
//   CheckpointLoad loaded = checkpoint.load();  // entries; or none, and why
//   checkpoint.save(entries);                   // temp file, fsync, rename, fsync the directory
//
// Contract:
// - `save` writes `PATH.tmp`, fsyncs it, renames it over PATH and fsyncs the directory. It
//   throws std::system_error naming the path if a step fails; PATH is then the previous one.
// - `load` returns the entries of a whole, valid file. A file that is missing is `missing`; one
//   that is empty, cut short, or fails its checksum is `corrupt`: it is renamed `PATH.corrupt`
//   (replacing an older one), so that the next save does not destroy the evidence, and the
//   caller starts from its safe position. `load` never throws on bad content.
// - The format is text: a header line, one line per file (device, inode, fingerprint, its length,
//   offset, path with `%`, LF and CR escaped as %25, %0A, %0D), and a last line with the CRC-32 of
//   everything before it.
// - `fault` (tests) is called before each step of a save, and once halfway through writing the
//   temporary file; a test makes it kill the process there.
// - Not thread-safe: one owner saves and loads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace conveyor::stages {

struct CheckpointEntry {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t fingerprint = 0;         // a hash of the file's first bytes
  std::uint32_t fingerprint_length = 0;  // how many bytes it covers
  std::uint64_t offset = 0;              // everything before it is delivered
  std::string path;                      // where the file was last seen

  friend bool operator==(const CheckpointEntry&, const CheckpointEntry&) = default;
};

struct CheckpointLoad {
  enum class Status { loaded, missing, corrupt };
  Status status = Status::missing;
  std::vector<CheckpointEntry> entries;
  std::string problem;  // for corrupt: what was wrong, and where the file was set aside
};

enum class CheckpointStep { write, halfway, fsync_file, rename, fsync_directory };

class CheckpointFile {
 public:
  explicit CheckpointFile(std::string path, std::function<void(CheckpointStep)> fault = {});

  [[nodiscard]] CheckpointLoad load() const;
  void save(const std::vector<CheckpointEntry>& entries) const;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  // The text `save` writes; what `parse` reads back (or nullopt-like false with `problem` set).
  static std::string format(const std::vector<CheckpointEntry>& entries);
  static bool parse(const std::string& text, std::vector<CheckpointEntry>& entries,
                    std::string& problem);

 private:
  std::string path_;
  std::function<void(CheckpointStep)> fault_;
};

}  // namespace conveyor::stages
