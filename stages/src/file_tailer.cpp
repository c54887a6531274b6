// FileTailer: discovery, identity, rotation, truncation and the reading of tailed files.
#include "conveyor/stages/file_tailer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <filesystem>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "byte_stream.hpp"
#include "conveyor/framework/ack.hpp"
#include "conveyor/stages/file_source.hpp"
#include "conveyor/stages/path_glob.hpp"
#include "line_assembler.hpp"

namespace conveyor::stages {

namespace {

// Whether the file open at `fd` has no name left: deleted while open.
bool unlinked(int fd) noexcept {
  struct stat status {};
  return ::fstat(fd, &status) == 0 && status.st_nlink == 0;
}

namespace fs = std::filesystem;

constexpr std::uint64_t fnv_basis = 0xcbf29ce484222325ULL;

// FNV-1a, 64 bits: stable across builds, so that a checkpoint outlives an upgrade. `hash` goes on
// from the hash of the bytes before these.
std::uint64_t hash_of(std::string_view bytes, std::uint64_t hash = fnv_basis) noexcept {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// hashes[k] is the hash of the first k bytes of `bytes` (hashes[0] of none), in one pass.
std::vector<std::uint64_t> prefix_hashes(std::string_view bytes) {
  std::vector<std::uint64_t> hashes(bytes.size() + 1);
  std::uint64_t hash = fnv_basis;
  hashes[0] = hash;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    hash ^= static_cast<unsigned char>(bytes[i]);
    hash *= 0x100000001b3ULL;
    hashes[i + 1] = hash;
  }
  return hashes;
}

// The first `size` bytes of `fd` (fewer if it is shorter).
std::string head_of(int fd, std::size_t size) {
  std::string head(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = ::pread(fd, head.data() + got, size - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  head.resize(got);
  return head;
}

// How much of a compressed file is compared with a file it may be the compressed form of.
constexpr std::size_t compare_bytes = std::size_t{64} << 10;

// A compressed file's offset that stands for all of it (skipped by start_at_end).
constexpr std::uint64_t skip_all = std::numeric_limits<std::uint64_t>::max();

bool compressed_file(int fd) {
  return head_of(fd, 2) == "\x1f\x8b";
}

// The first `size` bytes of what a gzip file holds, inflated: fewer if it holds fewer, or if it is
// not whole yet (gzip is still writing it).
std::string inflated_head_of(int fd, std::size_t size) {
  std::string out(size, '\0');
  z_stream stream{};
  if (::inflateInit2(&stream, MAX_WBITS + 16) != Z_OK) return {};
  std::string in(std::size_t{16} << 10, '\0');
  off_t at = 0;
  std::size_t got = 0;
  int status = Z_OK;
  while (got < size && status == Z_OK) {
    if (stream.avail_in == 0) {
      const ssize_t n = ::pread(fd, in.data(), in.size(), at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      at += n;
      stream.next_in = reinterpret_cast<Bytef*>(in.data());  // NOLINT: zlib's buffer type
      stream.avail_in = static_cast<uInt>(n);
    }
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + got);  // NOLINT: as above
    stream.avail_out = static_cast<uInt>(size - got);
    status = ::inflate(&stream, Z_NO_FLUSH);
    got = size - stream.avail_out;
    // gzip files may hold several members one after the other (`cat a.gz b.gz`): read on.
    if (status == Z_STREAM_END) status = ::inflateReset(&stream);
  }
  ::inflateEnd(&stream);
  out.resize(got);
  return out;
}

// A file's size, and when its content last changed (nanoseconds); zeros if it cannot be told.
struct Extent {
  std::uint64_t size = 0;
  std::int64_t modified = 0;
};

Extent extent_of(const struct stat& status) {
  return {static_cast<std::uint64_t>(status.st_size),
          static_cast<std::int64_t>(status.st_mtim.tv_sec) * 1'000'000'000 +
              static_cast<std::int64_t>(status.st_mtim.tv_nsec)};
}

Extent extent_of(int fd) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) return {};
  return extent_of(status);
}

std::uint64_t size_of(int fd) {
  return extent_of(fd).size;
}

}  // namespace

struct FileTailer::File {
  enum class State {
    waiting,   // not identified yet: too short to say what it is
    live,      // at a path the globs name
    detached,  // its path went to another file or nowhere: read to its end, then released
    parked,    // truncated: what was not read yet may still come from its copy
    copy,      // a copy of a live file, made before that file is truncated (copytruncate)
  };

  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t fingerprint = 0;
  std::uint32_t fingerprint_length = 0;
  // A compressed file's checkpoint entry: a hash of its first fingerprint_bytes inflated bytes
  // (all of them when it holds fewer), not of its first line alone. It never grows, so a file that
  // takes its inode while the service is down, with the same header, is told apart.
  std::uint64_t entry_fingerprint = 0;
  std::uint32_t entry_fingerprint_length = 0;
  std::string path;
  int fd = -1;
  State state = State::waiting;
  bool found_first = false;        // found at the first look
  bool seen = false;               // found by the current look
  std::uint64_t position = 0;      // the next byte to read
  std::uint64_t size_seen = 0;     // its size at the last read
  std::int64_t modified_seen = 0;  // and when its content had last changed then
  std::uint64_t start = 0;         // the offset committed before any acknowledgement
  std::uint64_t unread_lost = 0;   // parked: bytes known to be there, unread, when truncated
  std::unique_ptr<detail::LineAssembler> assembler;
  // The source's assembler, when this copy lacks the end of the line it was read into the middle
  // of: that line goes out as cut off at the next read.
  std::unique_ptr<detail::LineAssembler> cut_off;
  // gzip: inflated from the start, once, through `fd` (the stream owns it then); `skip` bytes
  // were handed out before a restart.
  std::unique_ptr<detail::ByteStream> gzip;
  std::uint64_t skip = 0;
  bool complete = false;
  bool compressed = false;  // its offsets count inflated bytes; `position` is not kept up
  std::shared_ptr<AckLedger> ledger;
  // A copy shorter than what was read of its source: the source's ledger, whose lines before
  // `start` (the copy's size then) are committed as it says, and the source's start.
  std::shared_ptr<AckLedger> prior;
  std::uint64_t prior_start = 0;
  std::shared_ptr<const Input> input;
  File* copy_of = nullptr;
  // A compressed file: the file it is the compressed form of, while that one is still known. Its
  // checkpoint offset stays at that file's until that file is done with (what that one read and
  // has not delivered yet is not in this one past `start`).
  File* compressed_from = nullptr;
  // What it began with, as far as it was read (up to compare_bytes): its copies and compressed
  // form are known by it, also once it is closed or truncated.
  struct Head {
    std::uint64_t hash = 0;  // of its first `length` bytes
    std::size_t length = 0;
    // steps[k]: the hash of its first 2^k bytes, for each 2^k up to `length`.
    std::array<std::uint64_t, std::bit_width(compare_bytes)> steps{};
  } head;
  Clock::time_point found{};
  Clock::time_point last_growth{};
  Clock::time_point unseen_since{};  // detached: when a look first missed it
  bool deleted = false;              // detached and closed: it had no name left
  bool reopen = false;  // detached while closed as idle: to be opened where it was renamed to
  bool forget = false;  // let go by this poll
  bool awaiting_source = false;  // compressed: its source may not be comparable yet
  bool awaited = false;          // parked: a file that may be its copy is looked at again meanwhile

  explicit File(std::size_t& open_files) : open_count(open_files) {}
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() { close(); }
  // Opens `at` for reading; false if it cannot. The tailer's count of descriptors follows.
  bool open_path(const std::string& at) {
    fd = ::open(at.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) ++open_count;
    return fd >= 0;
  }
  // What it begins with (up to compare_bytes), from the bytes it was read to: a file truncated
  // since, or closed, is known by them. `bytes` were read at `at`.
  void keep_head(std::uint64_t at, std::string_view bytes) {
    if (at != head.length || head.length >= compare_bytes) return;
    if (head.length == 0) head.hash = fnv_basis;
    for (const char c : bytes.substr(0, compare_bytes - head.length)) {
      head.hash = hash_of(std::string_view(&c, 1), head.hash);
      ++head.length;
      if (std::has_single_bit(head.length)) head.steps[std::countr_zero(head.length)] = head.hash;
    }
  }
  void keep_head_anew(std::string_view bytes) {
    head.length = 0;
    keep_head(0, bytes);
  }
  // The same for a file read from `from` on: what it holds before that, unless it no longer
  // begins with its first line (truncated and written again since it was identified: what it
  // began with then is kept).
  void keep_head_before(std::uint64_t from) {
    if (gzip || fd < 0 || head.length >= std::min<std::uint64_t>(from, compare_bytes)) return;
    const std::string bytes =
        head_of(fd, static_cast<std::size_t>(std::min<std::uint64_t>(from, compare_bytes)));
    if (starts_with_first_line(bytes)) keep_head_anew(bytes);
  }
  // Whether `bytes`, a file's first ones, begin with the first line it is known by.
  [[nodiscard]] bool starts_with_first_line(std::string_view bytes) const {
    return bytes.size() >= fingerprint_length &&
           hash_of(bytes.substr(0, fingerprint_length)) == fingerprint;
  }
  enum class Match { same, differs, unknown };
  // Whether another file began as this one did, as far as what this one kept goes; unknown when
  // the two go no further than the first line. `hashes` are that file's prefix_hashes() (up to
  // compare_bytes of it).
  [[nodiscard]] Match begun_as(const std::vector<std::uint64_t>& hashes) const {
    const std::size_t both = std::min(hashes.size() - 1, head.length);
    const std::size_t length = both == head.length ? both : std::bit_floor(both);
    if (length <= fingerprint_length) return Match::unknown;
    const std::uint64_t kept =
        length == head.length ? head.hash : head.steps[std::countr_zero(length)];
    return hashes[length] == kept ? Match::same : Match::differs;
  }
  // Whether it still begins with the bytes it was known by: its first line, and as much of what
  // was read of it as a read of up to 1 KiB covers (files may share a header line): all of it
  // when that is no more, since a power of two below it may end inside a long header. Not, once
  // truncated and written again.
  [[nodiscard]] bool begins_as_read() const {
    constexpr std::size_t reach = 1024;
    const bool whole = head.length <= reach;
    const std::size_t length = whole ? head.length : std::bit_floor(reach);
    if (length <= fingerprint_length)
      return starts_with_first_line(head_of(fd, fingerprint_length));
    const std::string read = head_of(fd, length);
    const std::string_view bytes(read);
    if (!starts_with_first_line(bytes) || bytes.size() < length) return false;
    return hash_of(bytes.substr(0, length)) ==
           (whole ? head.hash : head.steps[std::countr_zero(length)]);
  }
  // Closed once read to its end: what it begins with is kept.
  void close_read() {
    // Only a truncation changes what it begins with once that is whole (truncated() forgets it).
    if (fd >= 0 && !gzip && head.length < compare_bytes) keep_head_anew(head_of(fd, compare_bytes));
    close();
  }
  void close() {
    if (fd < 0) return;
    if (gzip) {
      gzip.reset();  // closes the descriptor
    } else {
      ::close(fd);
    }
    fd = -1;
    --open_count;
  }

  std::size_t& open_count;  // the tailer's count of open descriptors
  [[nodiscard]] std::uint64_t committed() const {
    const std::uint64_t own = ledger ? ledger->acknowledged().value_or(start) : start;
    if (!prior) return own;
    // Its own lines count once the source's before them are delivered.
    const std::uint64_t before = std::min(start, prior->acknowledged().value_or(prior_start));
    return before < start ? before : own;
  }
  // Every line handed out was delivered.
  [[nodiscard]] bool delivered() const {
    const auto done = [](const std::shared_ptr<AckLedger>& of) {
      return !of || (of->outstanding() == 0 && !of->failed());
    };
    return done(ledger) && done(prior);
  }
};

FileTailer::FileTailer(TailOptions options, const Input& input,
                       std::vector<CheckpointEntry> restored)
    : options_(std::move(options)), input_(input) {
  options_.fingerprint_bytes = std::max<std::size_t>(options_.fingerprint_bytes, 1);
  // A line that a read holds whole is as long as one cut across reads (the assembler's).
  input_.max_line_length = options_.max_line_bytes;
  restore(std::move(restored));
}

void FileTailer::restore(std::vector<CheckpointEntry> entries) {
  restored_ = std::move(entries);
  claimed_.assign(restored_.size(), false);
  restored_by_inode_.clear();
  restored_by_fingerprint_.clear();
  longest_restored_ = 0;
  for (std::size_t i = 0; i < restored_.size(); ++i) {
    restored_by_inode_.emplace(InodeKey{restored_[i].device, restored_[i].inode}, i);
    restored_by_fingerprint_.emplace(restored_[i].fingerprint, i);
    longest_restored_ = std::max<std::size_t>(longest_restored_, restored_[i].fingerprint_length);
  }
}

FileTailer::~FileTailer() = default;

void FileTailer::track(const std::string& path, Clock::time_point now, std::vector<File*>& found) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode)) return;
  const auto device = static_cast<std::uint64_t>(status.st_dev);
  const auto inode = static_cast<std::uint64_t>(status.st_ino);
  if (!restored_.empty()) listed_.insert(InodeKey{device, inode});
  if (const auto known = by_inode_.find(InodeKey{device, inode}); known != by_inode_.end()) {
    File* const file = known->second;
    file->seen = true;
    if (file->path != path) file->path = path;   // renamed to another name the globs take
    if (file->state == File::State::detached) {  // back under the globs
      file->state = file->assembler ? File::State::live : File::State::waiting;
      file->reopen = false;
    }
    // Closed while idle (or detached): opened again once it has something to read, or changed at
    // the size it had (truncated and written again: the read finds out which); a compressed
    // file, read once, never is.
    const Extent extent = extent_of(status);
    if (file->fd < 0 && !file->complete &&
        (extent.size != file->size_seen || extent.modified != file->modified_seen) &&
        open_files_ < options_.max_open_files) {
      (void)file->open_path(path);
    }
    if (file->state == File::State::waiting) (void)identify(*file, now);
    return;
  }
  if (open_files_ >= options_.max_open_files) return;  // found again at a later look
  std::unique_ptr<File> file = open_file(path, InodeKey{device, inode}, now);
  if (!file) return;
  file->seen = true;
  by_inode_[InodeKey{device, inode}] = file.get();
  found.push_back(file.get());
  files_.push_back(std::move(file));
}

std::unique_ptr<FileTailer::File> FileTailer::open_file(const std::string& path, InodeKey key,
                                                        Clock::time_point now) {
  auto file = std::make_unique<File>(open_files_);
  if (!file->open_path(path)) return nullptr;
  file->device = key.device;
  file->inode = key.inode;
  file->path = path;
  file->found = now;
  file->last_growth = now;
  file->found_first = first_scan_;
  return file;
}

bool FileTailer::identify(File& file, Clock::time_point now, bool by_inode_only) {
  if (file.fd < 0) return false;
  const std::uint64_t size = size_of(file.fd);
  // A compressed file is known by what it holds: the compressed form of a file read already has
  // its first bytes.
  const bool compressed = compressed_file(file.fd);
  const std::size_t head_bytes = std::max(options_.fingerprint_bytes, longest_restored_);
  const std::string head =
      compressed ? inflated_head_of(file.fd, head_bytes) : head_of(file.fd, head_bytes);
  const std::string_view first(head.data(), std::min(head.size(), options_.fingerprint_bytes));
  const std::size_t newline = first.find('\n');
  std::size_t length = 0;
  if (newline != std::string_view::npos) {
    length = newline + 1;
  } else if (first.size() == options_.fingerprint_bytes ||
             (size > 0 && now - file.found >= options_.partial_line_timeout)) {
    // A long first line, or a short file whose first line never ends: what it has.
    length = first.size();
  } else {
    return false;
  }
  const std::vector<std::uint64_t> hashes = prefix_hashes(head);
  file.fingerprint_length = static_cast<std::uint32_t>(length);
  file.fingerprint = hashes[length];
  if (compressed) {
    const std::size_t whole = std::min(head.size(), options_.fingerprint_bytes);
    file.entry_fingerprint_length = static_cast<std::uint32_t>(std::max(whole, length));
    file.entry_fingerprint = hashes[file.entry_fingerprint_length];
  }
  const auto matches = [&](std::uint64_t fingerprint, std::uint32_t over) {
    return over < hashes.size() && hashes[over] == fingerprint;
  };

  // Where it starts: a restored entry of this inode, then one of its first bytes (renamed or
  // copied while the service was down), then a truncated file it is the copy of.
  std::optional<std::size_t> entry;
  const auto [same_inode, same_inode_end] =
      restored_by_inode_.equal_range(InodeKey{file.device, file.inode});
  // A compressed file's entry saved by an earlier version holds its compressed bytes' hash.
  const std::vector<std::uint64_t> raw_hashes = compressed && same_inode != same_inode_end
                                                    ? prefix_hashes(head_of(file.fd, head_bytes))
                                                    : std::vector<std::uint64_t>{};
  for (auto it = same_inode; it != same_inode_end && !entry; ++it) {
    const CheckpointEntry& e = restored_[it->second];
    if (claimed_[it->second]) continue;
    if (matches(e.fingerprint, e.fingerprint_length) ||
        (e.fingerprint_length < raw_hashes.size() &&
         raw_hashes[e.fingerprint_length] == e.fingerprint)) {
      entry = it->second;
    }
  }
  if (same_inode != same_inode_end && !entry)
    inode_changed_.insert(InodeKey{file.device, file.inode});
  if (by_inode_only && !entry) return false;
  for (std::size_t over = 1; over < hashes.size() && !entry; ++over) {
    const auto [begin, end] = restored_by_fingerprint_.equal_range(hashes[over]);
    for (auto it = begin; it != end && !entry; ++it) {
      const CheckpointEntry& e = restored_[it->second];
      const InodeKey key{e.device, e.inode};
      // Not one whose file is still listed and may be the one it was saved for (not opened yet,
      // past max_open_files): that one takes it, and a file that only shares its first line (a
      // header) would skip lines of its own. Once that file, opened, no longer began as the entry
      // says (truncated while the service was down), a copy of it may take it; a compressed file
      // never does. Nor one that skips a whole compressed file: another that begins with the same
      // line is not that file.
      const bool still_there =
          listed_.contains(key) && (compressed || !inode_changed_.contains(key));
      if (!claimed_[it->second] && e.fingerprint_length == over && e.offset != skip_all &&
          (e.device != file.device || e.inode != file.inode) && !still_there) {
        entry = it->second;
      }
    }
  }
  // The compressed form of a file read already (logrotate's compress), or about to be: it goes on
  // from where that one ends, so that no line is read twice. Only when what it holds begins as
  // that file does for up to 64 KiB, not just its first line: files that share a header line are
  // not each other's compressed form. A file closed as idle is compared by what it began with
  // when it was closed. (An open one: as much of it as the compressed file holds, when that file
  // grew on after it was compressed, or gzip is still writing: 4 KiB of it at least.)
  enum class Source { none, wait, found };
  // Whether `other` may be what `file` is a copy or the compressed form of: a compressed file is
  // never the source of another.
  const auto may_be_source = [&](const File& other) {
    return &other != &file && (other.device != file.device || other.inode != file.inode) &&
           other.fingerprint_length == file.fingerprint_length && !other.compressed;
  };
  File* source = nullptr;
  std::uint64_t resume = 0;
  std::optional<std::string> inflated;  // its first bytes, once (inflated, when compressed)
  const auto own_head = [&]() -> const std::string& {
    if (!inflated) {
      inflated =
          compressed ? inflated_head_of(file.fd, compare_bytes) : head_of(file.fd, compare_bytes);
    }
    return *inflated;
  };
  std::optional<std::vector<std::uint64_t>> own_hashes;  // of those bytes, once
  const auto own_prefix = [&]() -> const std::vector<std::uint64_t>& {
    if (!own_hashes) own_hashes = prefix_hashes(own_head());
    return *own_hashes;
  };
  // A truncated file's copies are known by what it began with; by their first line only once
  // rotate_wait has passed since the truncation, when that cannot tell: gzip or cp may still be
  // writing them until then.
  const auto undecided = [&](File& parked) {
    const bool young = now - parked.found < options_.rotate_wait;
    parked.awaited = parked.awaited || young;  // kept until the file looked at again decides
    return young;
  };
  // A truncated file's compressed copy goes on from the start of the line it was read into the
  // middle of.
  const auto line_start = [](const File& parked) {
    return parked.position - (parked.assembler ? parked.assembler->carried() : 0);
  };
  const auto compressed_source = [&](File*& from, std::uint64_t& at) {
    const bool young = now - file.found < options_.rotate_wait;
    bool wait = false;
    File* parked = nullptr;  // known by its first line only: taken when no file matches by content
    const auto [twins, twins_end] = by_fingerprint_.equal_range(file.fingerprint);
    for (auto it = twins; it != twins_end; ++it) {
      File* const other = it->second;
      if (!may_be_source(*other)) continue;
      if (other->state == File::State::parked) {
        // Truncated, its copy compressed before the tailer saw it (copytruncate with compress).
        switch (other->begun_as(own_prefix())) {
          case File::Match::same:
            from = other;
            at = line_start(*other);
            return Source::found;
          case File::Match::differs:
            continue;
          case File::Match::unknown:
            wait = undecided(*other) || wait;
            if (parked == nullptr) parked = other;
            continue;
        }
      }
      if (other->fd < 0 && other->head.length == 0) continue;
      const std::uint64_t other_size = other->fd >= 0 ? size_of(other->fd) : other->position;
      if (other_size < other->position) {
        wait = wait || young;  // truncated: its copy takes over once a read sees it
        continue;
      }
      const std::size_t compare =
          other->fd >= 0
              ? static_cast<std::size_t>(std::min<std::uint64_t>(other_size, compare_bytes))
              : other->head.length;
      const std::string_view held(own_head().data(), std::min(own_head().size(), compare));
      if (held.size() < compare && young) {
        wait = true;  // gzip may still be writing it
        continue;
      }
      const bool same = other->fd >= 0
                            ? held.size() >= std::min<std::size_t>(compare, 4096) &&
                                  held == head_of(other->fd, held.size())
                            : held.size() == compare && hash_of(held) == other->head.hash;
      if (!same) continue;
      from = other;
      at = std::max(other->position, other_size);
      return Source::found;
    }
    if (wait) return Source::wait;
    if (parked == nullptr) return Source::none;
    from = parked;  // by its first line only
    at = line_start(*parked);
    return Source::found;
  };
  // Found: it goes on after where its source ends, and the source's unread bytes are not lost.
  const auto go_on_after = [&](File& from, std::uint64_t at) {
    file.start = std::max(file.start, at);
    file.compressed_from = &from;
    if (from.state == File::State::parked) {
      from.unread_lost = 0;  // not lost: in this file
      unindex(from);
    }
  };

  file.ledger = std::make_shared<AckLedger>();
  if (entry) {
    // The file keeps the fingerprint of its own first line, by which its copies and compressed
    // form are known: the entry's may cover less (a first line that was partial when it was
    // saved) or more (a compressed file's, for a file gunzipped while the service was down).
    const CheckpointEntry& e = restored_[*entry];
    file.start = e.offset;
    // Shorter than the offset (a gzip file's counts inflated bytes): truncated while the service
    // was down, and read from its start. Another inode, taken by its first line, may be a copy
    // that cp or logrotate is still writing: it is looked at again until rotate_wait has passed
    // since it was found, rather than read again from its start at once.
    if (size < file.start && !compressed) {
      if ((e.device != file.device || e.inode != file.inode) &&
          now - file.found < options_.rotate_wait) {
        file.start = 0;
        return false;
      }
      stats_.truncations.fetch_add(1, std::memory_order_relaxed);
      file.start = 0;
    }
    // What it begins with, as read here: copytruncate may empty it and write it again before
    // adopt() reads more of it, and its copy must still be known by it.
    if (!compressed) {
      file.keep_head_anew(std::string_view(head).substr(
          0, static_cast<std::size_t>(std::min<std::uint64_t>(head.size(), file.start))));
    }
    // Its source still there too (the service stopped between gzip and the deletion): that one
    // resumes from its own entry, and this one goes on after it.
    if (compressed && compressed_source(source, resume) == Source::found) {
      go_on_after(*source, resume);
    }
    claimed_[*entry] = true;
    adopt(file);
    return true;
  }
  if (compressed) {
    switch (compressed_source(source, resume)) {
      case Source::wait:
        file.awaiting_source = true;
        return false;
      case Source::found:
        go_on_after(*source, resume);
        stats_.copies.fetch_add(1, std::memory_order_relaxed);
        adopt(file);
        return true;
      case Source::none:
        break;
    }
  } else {
    // The file it begins as, or else one it begins as as far as can be told yet (its first line):
    // a file that only begins with the same line (a header) is not a copy.
    File* same = nullptr;
    File* maybe = nullptr;
    const auto [twins, twins_end] = by_fingerprint_.equal_range(file.fingerprint);
    for (auto it = twins; it != twins_end && same == nullptr; ++it) {
      File* const other = it->second;
      if (!may_be_source(*other) ||
          (other->state != File::State::parked && other->state != File::State::live &&
           other->state != File::State::detached)) {
        continue;
      }
      const File::Match match = other->begun_as(own_prefix());
      if (match == File::Match::same) same = other;
      if (match == File::Match::unknown && maybe == nullptr) maybe = other;
    }
    File* const other = same != nullptr ? same : maybe;
    if (other != nullptr && other->state == File::State::parked) {
      if (other == maybe && undecided(*other)) return false;  // looked at again
      // The copy of a file truncated before it was found: it goes on where that one was.
      go_on_in(file, *other, now);
      other->ledger = nullptr;
      other->state = File::State::detached;  // released at the next look (nothing left)
      other->position = 0;
      other->unread_lost = 0;
      unindex(*other);
      index(file);
      return true;
    }
    if (other != nullptr) {
      file.state = File::State::copy;  // a copy made before its source is truncated
      file.copy_of = other;
      return true;
    }
  }
  // A compressed file's end is where it ends inflated: all of it is skipped.
  file.start = !file.found_first || !options_.start_at_end ? 0 : compressed ? skip_all : size;
  adopt(file);
  return true;
}

void FileTailer::index(File& file) {
  by_fingerprint_.emplace(file.fingerprint, &file);
}

void FileTailer::unindex(File& file) {
  const auto [begin, end] = by_fingerprint_.equal_range(file.fingerprint);
  for (auto it = begin; it != end; ++it) {
    if (it->second == &file) {
      by_fingerprint_.erase(it);
      return;
    }
  }
}

void FileTailer::adopt(File& file) {
  file.position = file.start;
  if (compressed_file(file.fd)) {
    // A compressed file (a rotated *.gz): read once, from its start, never followed. The stream
    // reads the file's one descriptor (its other readers use pread, at no offset).
    file.gzip = std::make_unique<detail::ByteStream>(file.fd, file.path, -1);
    file.compressed = true;
    file.skip = file.start;
    file.complete = file.start == skip_all;
  }
  file.keep_head_before(file.start);
  // Line numbers are known only when reading from the beginning.
  file.assembler = std::make_unique<detail::LineAssembler>(options_.max_line_bytes,
                                                           file.start == 0 ? 1 : 0, file.start);
  Input input = input_;
  input.file = file.path;
  file.input = std::make_shared<const Input>(std::move(input));
  file.state = File::State::live;
  index(file);
}

void FileTailer::adopt_anew(File& copy) {
  copy.copy_of = nullptr;
  copy.start = 0;
  copy.ledger = std::make_shared<AckLedger>();
  adopt(copy);
}

void FileTailer::go_on_in(File& copy, File& source, Clock::time_point now) {
  const std::uint64_t size = size_of(copy.fd);
  if (size >= source.position) {
    copy.position = source.position;
    copy.start = source.start;
    copy.assembler = std::move(source.assembler);
    copy.ledger = std::move(source.ledger);
    copy.prior = std::move(source.prior);
    copy.prior_start = source.prior_start;
  } else {
    // The copy holds less than was read of the source: lines written to the source after the copy
    // was made and read before its truncation are not in it, or it is another file that so far
    // only begins as the source did (a header). It has nothing of that left to read, and goes on
    // at its end, at offsets of its own, with a ledger of its own whose lines count once the
    // source's are delivered. (Going on with the source's assembler and ledger gave its lines the
    // source's offsets, and committed them before their delivery.)
    copy.position = size;
    copy.start = size;
    copy.prior = std::move(source.ledger);
    copy.prior_start = source.start;
    if (source.assembler && (source.assembler->carried() > 0 || source.assembler->skipping())) {
      copy.cut_off = std::move(source.assembler);
    }
    copy.assembler = std::make_unique<detail::LineAssembler>(options_.max_line_bytes, 0, size);
    copy.ledger = std::make_shared<AckLedger>();
  }
  copy.keep_head_before(copy.position);
  Input input = input_;
  input.file = copy.path;
  copy.input = std::make_shared<const Input>(std::move(input));
  copy.state = File::State::live;
  copy.copy_of = nullptr;
  copy.last_growth = now;
  stats_.copies.fetch_add(1, std::memory_order_relaxed);
}

void FileTailer::truncated(File& file, Clock::time_point now) {
  stats_.truncations.fetch_add(1, std::memory_order_relaxed);
  unindex(file);  // its first bytes are gone
  // What was read so far goes on in a copy of the file, if one was made (copytruncate) or will be.
  // One taken for a copy while it held no more than the same first line (a header), and that began
  // otherwise, is a file of its own: read from its start.
  // The copy it begins as goes before one that only shares its first line so far.
  File* same = nullptr;
  File* maybe = nullptr;
  for (auto& other : files_) {
    if (other->state != File::State::copy || other->copy_of != &file || other->fd < 0) continue;
    switch (file.begun_as(prefix_hashes(head_of(other->fd, compare_bytes)))) {
      case File::Match::differs:
        adopt_anew(*other);
        break;
      case File::Match::same:
        if (same == nullptr) same = other.get();
        break;
      case File::Match::unknown:
        if (maybe == nullptr) maybe = other.get();
        break;
    }
  }
  File* const copy = same != nullptr ? same : maybe;
  if (copy != nullptr) {
    go_on_in(*copy, file, now);
    index(*copy);
  } else {
    auto parked = std::make_unique<File>(open_files_);
    parked->device = file.device;
    parked->inode = file.inode;
    parked->fingerprint = file.fingerprint;
    parked->fingerprint_length = file.fingerprint_length;
    parked->path = file.path;
    parked->state = File::State::parked;
    parked->position = file.position;
    parked->start = file.start;
    // What it held unread, and the unfinished line it had read part of: without a copy, both
    // are gone.
    parked->unread_lost = (file.size_seen > file.position ? file.size_seen - file.position : 0) +
                          (file.assembler ? file.assembler->carried() : 0);
    parked->head = file.head;
    parked->assembler = std::move(file.assembler);
    parked->ledger = std::move(file.ledger);
    parked->prior = std::move(file.prior);
    parked->prior_start = file.prior_start;
    parked->input = file.input;
    parked->found = now;
    index(*parked);
    files_.push_back(std::move(parked));
  }
  // The file itself starts again, as a new one.
  file.state = File::State::waiting;
  file.found = now;
  file.found_first = false;
  file.position = 0;
  file.start = 0;
  file.size_seen = 0;
  file.head = {};
  file.ledger = nullptr;
  file.prior = nullptr;
  file.assembler = nullptr;
  file.cut_off = nullptr;
  for (auto& other : files_) {
    if (other->copy_of == &file && other->state == File::State::copy) other->copy_of = nullptr;
    if (other->compressed_from == &file) other->compressed_from = nullptr;  // its ledger went
  }
}

void FileTailer::scan(Clock::time_point now) {
  std::vector<PathGlob> include;
  std::vector<PathGlob> exclude;
  for (const std::string& pattern : options_.include)
    include.emplace_back(pattern);
  for (const std::string& pattern : options_.exclude)
    exclude.emplace_back(pattern);
  for (auto& file : files_)
    file->seen = false;
  std::unordered_set<InodeKey, InodeHash> listed_before;
  listed_before.swap(listed_);
  const FoundFiles found = find_files(include, exclude, options_.max_files);
  if (found.truncated) stats_.glob_truncated.fetch_add(1, std::memory_order_relaxed);
  std::vector<File*> fresh;
  for (const std::string& path : found.paths)
    track(path, now, fresh);
  // Every file new to this look takes the restored entry of its own inode before any takes one by
  // its first bytes: rotated while the service was down, the file now at the old path may begin
  // with the same line as the one renamed, and would take that one's entry.
  // So does a file renamed out of the globs while the service was down, found by its inode in its
  // directory: the new file at its path, beginning with the same header, would take its entry.
  if (!restored_.empty()) {
    // Compressed files last, after the files renamed away too: one whose source is here goes on
    // after where that one resumes.
    const auto by_inode = [&](bool compressed) {
      for (File* file : fresh)
        if (file->fd >= 0 && compressed_file(file->fd) == compressed)
          (void)identify(*file, now, true);
    };
    by_inode(false);
    // A restored entry whose file the last look listed but could not open (past max_open_files),
    // and this one does not: renamed out of the globs meanwhile, looked for in its directory.
    for (std::size_t i = 0; i < restored_.size(); ++i) {
      const InodeKey key{restored_[i].device, restored_[i].inode};
      if (!claimed_[i] && listed_before.contains(key) && !listed_.contains(key) &&
          !by_inode_.contains(key)) {
        waiting_recovery_.insert(key);
      }
    }
    if (first_scan_ || !waiting_recovery_.empty()) recover_renamed(now);
    by_inode(true);
  }
  for (File* file : fresh) {
    if (file->state == File::State::waiting) (void)identify(*file, now);
  }
  // Too short at the first look to know (empty, or its first line unfinished), a file held no
  // whole line for `start_at_end` to skip: whatever comes later is read, from its beginning.
  if (first_scan_) {
    for (File* file : fresh)
      if (file->state == File::State::waiting && !file->awaiting_source) file->found_first = false;
  }
  // A live file that no look found at its path any more was renamed away or deleted: it is read
  // to its end. One that was never read from is let go at once.
  std::vector<File*> closed_away;
  for (auto& file : files_) {
    if (file->seen) continue;
    if (file->state == File::State::live) {
      stats_.rotations.fetch_add(1, std::memory_order_relaxed);
      file->state = File::State::detached;
      file->unseen_since = now;
      if (file->fd < 0 && !file->complete) file->reopen = true;
    } else if (file->state == File::State::waiting || file->state == File::State::copy) {
      file->state = File::State::detached;
      file->ledger = nullptr;
      file->close();
    }
    // Renamed away while closed as idle: at this look, or at one where max_open_files was reached.
    if (file->reopen && file->state == File::State::detached) closed_away.push_back(file.get());
  }
  reopen_renamed(closed_away);
  // Files opened again, renamed or let go since they were closed are no longer idle there.
  std::erase_if(idle_, [&](const auto& entry) {
    const auto known = by_inode_.find(entry.second);
    return known == by_inode_.end() || known->second->fd >= 0 ||
           known->second->path != entry.first || known->second->state != File::State::live;
  });
  if (first_scan_) first_scan_at_ = now;
  first_scan_ = false;
  last_scan_ = now;
  scan_due_ = false;
}

const FileTailer::Listing& FileTailer::listing(std::unordered_map<std::string, Listing>& listings,
                                               const std::string& directory) {
  auto [entry, fresh] = listings.try_emplace(directory);
  if (fresh) {
    std::error_code error;
    for (fs::directory_iterator it(directory, error), end; !error && it != end;
         it.increment(error)) {
      struct stat status {};
      if (::stat(it->path().c_str(), &status) != 0 || !S_ISREG(status.st_mode)) continue;
      entry->second.emplace(InodeKey{static_cast<std::uint64_t>(status.st_dev),
                                     static_cast<std::uint64_t>(status.st_ino)},
                            it->path().string());
    }
  }
  return entry->second;
}

void FileTailer::reopen_renamed(const std::vector<File*>& files) {
  // Closed while idle, a file may have been renamed out of the globs with lines written to it
  // since (logrotate renames within the directory, and the program writes on until it reopens).
  // Found by its inode in its directory, it is opened again and read to its end. One directory
  // listing serves every such file in it.
  // Past max_open_files, it waits for a later look, and is not let go meanwhile.
  std::unordered_map<std::string, Listing> listings;
  for (File* file : files) {
    const Listing& files_there = listing(listings, fs::path(file->path).parent_path().string());
    const auto found = files_there.find(InodeKey{file->device, file->inode});
    if (found != files_there.end() && open_files_ >= options_.max_open_files) continue;
    // Deleted, or moved out of its directory, it has nothing left to read.
    file->reopen = false;
    if (found != files_there.end() && file->open_path(found->second)) file->path = found->second;
  }
}

void FileTailer::recover_renamed(Clock::time_point now) {
  // Renamed out of the globs while the service was down (logrotate with a name the globs do not
  // take, `access.log` to `access.log-20240601`), a file may hold lines written after the
  // checkpoint. It is looked for by its inode in the directory it was in, taken only if it still
  // begins as it did (an inode can be reused), and read on from its offset as a detached file:
  // to its end, then let go.
  // One found while max_open_files descriptors are open waits, kept, for a look that finds one
  // free.
  const bool again = !first_scan_;
  std::unordered_map<std::string, Listing> listings;
  for (std::size_t i = 0; i < restored_.size(); ++i) {
    const CheckpointEntry& entry = restored_[i];
    const InodeKey key{entry.device, entry.inode};
    if (claimed_[i] || listed_.contains(key) || by_inode_.contains(key)) continue;
    if (again && !waiting_recovery_.contains(key)) continue;
    const Listing& files_there = listing(listings, fs::path(entry.path).parent_path().string());
    const auto found = files_there.find(key);
    if (found == files_there.end()) {
      waiting_recovery_.erase(key);
      continue;
    }
    if (open_files_ >= options_.max_open_files) {
      waiting_recovery_.insert(key);
      continue;
    }
    waiting_recovery_.erase(key);
    std::unique_ptr<File> file = open_file(found->second, key, now);
    if (!file || !identify(*file, now, true)) continue;  // not the file it was: left alone
    by_inode_[key] = file.get();
    files_.push_back(std::move(file));  // unseen by this look: detached below
  }
}

std::size_t FileTailer::read_gzip(File& file, const Emit& emit, Clock::time_point now,
                                  bool& stopped) {
  std::size_t total = 0;
  for (int reads = 0; reads < 4 && !file.complete && !held_back(file); ++reads) {
    std::size_t kept = 0;
    std::string buffer = file.assembler->buffer(options_.read_bytes, kept);
    std::size_t got = 0;
    try {
      got = file.gzip->read(buffer.data() + kept, options_.read_bytes);
    } catch (const InputError&) {
      stats_.gzip_errors.fetch_add(1, std::memory_order_relaxed);
      got = 0;  // what could be inflated was handed out; the rest cannot be
    }
    // What a run before a restart handed out already.
    const auto skipped = static_cast<std::size_t>(std::min<std::uint64_t>(file.skip, got));
    file.skip -= skipped;
    buffer.erase(kept, skipped);
    buffer.resize(kept + got - skipped);
    total += got - skipped;
    file.last_growth = now;
    std::optional<detail::Cut> cut;
    if (got == 0) {
      (void)file.assembler->cut(std::move(buffer));
      cut = file.assembler->finish(false);
      file.complete = true;
    } else {
      cut = file.assembler->cut(std::move(buffer));
    }
    if (cut) {
      cut->chunk.input = file.input;
      cut->chunk.ack = file.ledger->issue(cut->end);
      if (!emit_from(file, emit, std::move(cut->chunk))) {
        stopped = true;
        break;
      }
    }
  }
  if (!file.complete) caught_up_ = false;
  stats_.bytes.fetch_add(total, std::memory_order_relaxed);
  return total;
}

std::size_t FileTailer::read(File& file, const Emit& emit, Clock::time_point now, bool& stopped) {
  if (file.fd < 0 || (file.state != File::State::live && file.state != File::State::detached)) {
    return 0;
  }
  if (held_back(file)) return 0;
  if (file.gzip) return read_gzip(file, emit, now, stopped);
  const Extent extent = extent_of(file.fd);
  const std::uint64_t size = extent.size;
  if (size < file.position) {
    truncated(file, now);
    return 0;
  }
  // Grown, or changed at the same size: truncated and written again since the last look, its
  // first bytes are not the same.
  if ((size != file.size_seen || extent.modified != file.modified_seen) && file.position > 0 &&
      file.state == File::State::live) {
    if (!file.begins_as_read()) {
      truncated(file, now);
      return 0;
    }
  }
  file.size_seen = size;
  file.modified_seen = extent.modified;
  const auto hand_out = [&](std::optional<detail::Cut> cut) {
    if (!cut) return true;
    cut->chunk.input = file.input;
    cut->chunk.ack = file.ledger->issue(cut->end);
    return emit_from(file, emit, std::move(cut->chunk));
  };
  if (file.cut_off) {
    std::optional<detail::Cut> cut = file.cut_off->finish(true);
    file.cut_off = nullptr;
    if (cut) cut->end = file.start;  // commits nothing of the copy's own
    if (!hand_out(std::move(cut))) {
      stopped = true;
      return 0;
    }
  }
  std::size_t total = 0;
  // A few reads per file and poll, so that one busy file does not starve the others.
  for (int reads = 0; reads < 4 && file.position < size && !held_back(file); ++reads) {
    const std::size_t want = static_cast<std::size_t>(
        std::min<std::uint64_t>(options_.read_bytes, size - file.position));
    std::size_t kept = 0;
    std::string buffer = file.assembler->buffer(want, kept);
    const ssize_t got =
        ::pread(file.fd, buffer.data() + kept, want, static_cast<off_t>(file.position));
    if (got <= 0) {
      buffer.resize(kept);
      (void)file.assembler->cut(std::move(buffer));  // carries the carry again
      break;
    }
    buffer.resize(kept + static_cast<std::size_t>(got));
    file.keep_head(file.position, std::string_view(buffer).substr(kept));
    file.position += static_cast<std::uint64_t>(got);
    total += static_cast<std::size_t>(got);
    file.last_growth = now;
    if (!hand_out(file.assembler->cut(std::move(buffer)))) {
      stopped = true;
      break;
    }
  }
  if (file.position < size) caught_up_ = false;
  if (!stopped && (file.assembler->carried() > 0 || file.assembler->skipping()) &&
      now - file.last_growth >= options_.partial_line_timeout) {
    if (!hand_out(file.assembler->flush())) stopped = true;
  }
  stats_.bytes.fetch_add(total, std::memory_order_relaxed);
  return total;
}

// Whether `file` still begins with the bytes it was known by, and is no shorter than what was
// read of it.
bool FileTailer::source_unchanged(const File& file) {
  return file.begins_as_read() && size_of(file.fd) >= file.position;
}

void FileTailer::release_idle(Clock::time_point now) {
  // A parked file waits rotate_wait for its copy; one that a new file is being looked at again
  // for as its copy waits as long again, so that the new file decides before it goes.
  const auto parked_for = [&](const File& parked) {
    return parked.awaited ? 2 * options_.rotate_wait : options_.rotate_wait;
  };
  std::vector<File*> missed;  // truncated sources found through their copies
  for (auto& file : files_) {
    switch (file->state) {
      case File::State::detached:
        if (file->fd >= 0 && (file->gzip ? file->complete : file->position >= size_of(file->fd)) &&
            file->assembler->carried() == 0 && !file->assembler->skipping() &&
            now - file->last_growth >= options_.rotate_wait) {
          struct stat status {};
          file->deleted = ::fstat(file->fd, &status) == 0 && status.st_nlink == 0;
          file->close_read();
        }
        break;
      case File::State::parked:
        if (file->unread_lost != 0 && now - file->found >= parked_for(*file)) {
          stats_.lost_truncated_bytes.fetch_add(file->unread_lost, std::memory_order_relaxed);
          file->unread_lost = 0;
        }
        break;
      case File::State::copy:
        if (now - file->found >= options_.rotate_wait) {
          // Its source was truncated without the tailer seeing it (written again to the size it
          // had): that truncation is dealt with below. Otherwise it is a file of its own after all.
          File* const source = file->copy_of;
          if (source != nullptr && source->fd >= 0 && !source_unchanged(*source)) {
            if (std::find(missed.begin(), missed.end(), source) == missed.end()) {
              missed.push_back(source);
            }
            break;
          }
          adopt_anew(*file);
        }
        break;
      case File::State::live:
        // Idle and read to its end: closed, and opened again by a look that finds it grown. A
        // compressed file is closed once read: it is never followed.
        if (file->fd >= 0 && file->gzip) {
          if (file->complete) file->close();
        } else if (file->fd >= 0 && file->assembler && file->assembler->carried() == 0 &&
                   now - file->last_growth >= options_.close_idle &&
                   file->position >= size_of(file->fd)) {
          file->close_read();
          idle_.insert_or_assign(file->path, InodeKey{file->device, file->inode});
        }
        break;
      case File::State::waiting:
        break;
    }
  }
  for (File* source : missed)
    truncated(*source, now);  // hands its state to its copy
  // Forgotten once closed and acknowledged: a detached file read to its end, a parked one whose
  // copy never came.
  const auto forgotten = [&](const std::unique_ptr<File>& file) {
    const bool done = !file->ledger || file->ledger->outstanding() == 0;
    // A detached file that still exists may only have been missed by a look (renamed between
    // the listing and the stat): it is remembered until it has been gone for a while, so that
    // finding it again does not read it again.
    const bool gone = file->deleted || !file->ledger ||
                      now - file->unseen_since >= options_.rotate_wait + 2 * options_.glob_interval;
    return done &&
           ((file->state == File::State::detached && file->fd < 0 && gone && !file->reopen) ||
            (file->state == File::State::parked && now - file->found >= parked_for(*file)));
  };
  // Decided once per file: the outputs settle tokens meanwhile, and a file erased that was not
  // unindexed would leave the indexes pointing at it.
  bool any = false;
  for (const auto& file : files_) {
    if (!forgotten(file)) continue;
    any = true;
    file->forget = true;
    unindex(*file);
    const auto known = by_inode_.find(InodeKey{file->device, file->inode});
    if (known != by_inode_.end() && known->second == file.get()) by_inode_.erase(known);
    for (auto& other : files_) {
      if (other->copy_of == file.get()) other->copy_of = nullptr;
      if (other->compressed_from == file.get()) other->compressed_from = nullptr;
    }
  }
  if (any) std::erase_if(files_, [](const std::unique_ptr<File>& file) { return file->forget; });
  if (!first_scan_ && !restored_.empty() && now - first_scan_at_ >= options_.rotate_wait) {
    // rotate_wait after the first look, a restored entry is let go once a file took it or no
    // path the globs list has its inode. One whose file is listed but not taken in yet (past
    // max_open_files, or its first line unfinished), or renamed away and waiting for a descriptor,
    // stays, and is saved, until it is.
    const auto keeps = [&](std::size_t i) {
      const InodeKey key{restored_[i].device, restored_[i].inode};
      return !claimed_[i] && (listed_.contains(key) || waiting_recovery_.contains(key));
    };
    std::size_t kept = 0;
    for (std::size_t i = 0; i < restored_.size(); ++i)
      kept += keeps(i) ? 1 : 0;
    if (kept != restored_.size()) {  // at each poll: copied only when one goes
      std::vector<CheckpointEntry> entries;
      entries.reserve(kept);
      for (std::size_t i = 0; i < restored_.size(); ++i)
        if (keeps(i)) entries.push_back(restored_[i]);
      restore(std::move(entries));
    }
    if (restored_.empty()) {
      listed_.clear();
      inode_changed_.clear();
      waiting_recovery_.clear();
    }
  }
}

void FileTailer::modified(const std::string& path) {
  const auto entry = idle_.find(path);
  if (entry == idle_.end()) return;
  const auto known = by_inode_.find(entry->second);
  if (known == by_inode_.end()) return;  // let go since: the next look tidies the entry
  File& file = *known->second;
  if (file.fd >= 0 || file.complete || file.path != path || file.state != File::State::live ||
      open_files_ >= options_.max_open_files || !file.open_path(path)) {
    return;
  }
  struct stat status {};
  if (::fstat(file.fd, &status) != 0 || static_cast<std::uint64_t>(status.st_dev) != file.device ||
      static_cast<std::uint64_t>(status.st_ino) != file.inode) {
    file.close();  // another file is at its path now: a look sees to both
    scan_due_ = true;
    return;
  }
  idle_.erase(entry);
}

std::size_t FileTailer::poll(const Emit& emit, Clock::time_point now) {
  if (scan_due_ || now - last_scan_ >= options_.glob_interval) scan(now);
  std::size_t total = 0;
  bool stopped = false;
  caught_up_ = true;
  for (std::size_t i = 0; i < files_.size() && !stopped; ++i) {
    File& file = *files_[i];
    if (file.state == File::State::waiting) (void)identify(file, now);
    total += read(file, emit, now, stopped);
  }
  if (stopped) caught_up_ = false;
  release_idle(now);
  stats_.files.store(files_.size(), std::memory_order_relaxed);
  stats_.open_files.store(open_files_, std::memory_order_relaxed);
  return total;
}

bool FileTailer::emit_from(const File& file, const Emit& emit, Chunk&& chunk) {
  handing_out_fd_ = file.fd;
  const bool taken = emit(std::move(chunk));
  handing_out_fd_ = -1;
  return taken;
}

bool FileTailer::held_back(const File& file) const noexcept {
  return hold_linked_ && !unlinked(file.fd);
}

bool FileTailer::handing_out_unlinked() const noexcept {
  return handing_out_fd_ >= 0 && unlinked(handing_out_fd_);
}

std::size_t FileTailer::drain_deleted(const Emit& emit, Clock::time_point now) {
  std::size_t total = 0;
  bool stopped = false;
  for (std::size_t i = 0; i < files_.size() && !stopped; ++i) {
    File& file = *files_[i];
    if (file.fd < 0 || !unlinked(file.fd)) continue;
    const std::size_t got = read(file, emit, now, stopped);
    total += got;
    // Read to its end: a last line without its newline will not get one.
    if (got == 0 && !stopped && file.assembler &&
        (file.assembler->carried() > 0 || file.assembler->skipping())) {
      (void)read(file, emit, now + options_.partial_line_timeout, stopped);
    }
  }
  return total;
}

std::vector<CheckpointEntry> FileTailer::checkpoint() const {
  // A compressed file goes no further than the file it is the compressed form of, while that one
  // is known: what that one read and has not delivered is there again after a restart.
  const auto compressed_offset = [](const File& file) {
    const std::uint64_t own = file.committed();
    return file.compressed_from != nullptr ? std::min(own, file.compressed_from->committed()) : own;
  };
  std::vector<CheckpointEntry> entries;
  for (std::size_t i = 0; i < restored_.size(); ++i) {
    if (!claimed_[i]) entries.push_back(restored_[i]);
  }
  for (const auto& file : files_) {
    if (file->state == File::State::waiting || file->state == File::State::copy || !file->ledger) {
      continue;
    }
    // A truncated file's, which waits for a copy, has no inode: its inode is the live file's now,
    // which must not find this entry by it after a restart. A copy takes it by its first bytes.
    const bool parked = file->state == File::State::parked;
    entries.push_back(
        {.device = parked ? 0 : file->device,
         .inode = parked ? 0 : file->inode,
         .fingerprint = file->compressed ? file->entry_fingerprint : file->fingerprint,
         .fingerprint_length =
             file->compressed ? file->entry_fingerprint_length : file->fingerprint_length,
         // Not past its end: a copy may be shorter than what its source had read.
         .offset = file->compressed ? compressed_offset(*file)
                                    : std::min(file->committed(), file->position),
         .path = file->path});
  }
  return entries;
}

bool FileTailer::acknowledged() const {
  return std::all_of(files_.begin(), files_.end(),
                     [](const std::unique_ptr<File>& file) { return file->delivered(); });
}

std::vector<std::string> FileTailer::directories() const {
  std::vector<std::string> directories;
  for (const std::string& pattern : options_.include)
    directories.push_back(PathGlob(pattern).base());
  for (const auto& file : files_)
    directories.push_back(fs::path(file->path).parent_path().string());
  std::sort(directories.begin(), directories.end());
  directories.erase(std::unique(directories.begin(), directories.end()), directories.end());
  return directories;
}

}  // namespace conveyor::stages
