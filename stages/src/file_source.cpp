// FileSource: chunks of whole lines from files, stdin and gzip streams (read by ByteStream).
#include "conveyor/stages/file_source.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "byte_stream.hpp"
#include "conveyor/stages/detect.hpp"

namespace conveyor::stages {

namespace {

std::string describe_errno(const std::string& path, int error) {
  return "cannot open '" + path + "': " + std::generic_category().message(error);
}

}  // namespace

struct FileSource::Open {
  std::shared_ptr<Input> input;
  std::unique_ptr<detail::ByteStream> stream;
  std::string carry;                   // the start of a line whose end has not been read yet
  bool skipping = false;               // inside an overlong line, dropping its bytes
  OverlongLine pending;                // that line
  std::vector<OverlongLine> overlong;  // finished overlong lines, for the next chunk
  std::uint64_t line = 1;              // number of the line that starts at `offset`
  std::uint64_t offset = 0;            // decompressed offset of the first byte not yet handed out
  bool eof = false;
};

FileSource::FileSource(std::vector<std::string> paths, FileSourceOptions options)
    : paths_(std::move(paths)), options_(options) {
  if (paths_.empty()) paths_.emplace_back("-");
  options_.chunk_size = std::max<std::size_t>(options_.chunk_size, 4096);
  options_.max_line_length = std::max<std::size_t>(options_.max_line_length, 1);
  for (const std::string& path : paths_) {
    struct stat status {};
    if (path == "-") {
      if (::fstat(STDIN_FILENO, &status) != 0 || !S_ISREG(status.st_mode)) regular_files_ = false;
      continue;
    }
    if (::stat(path.c_str(), &status) != 0) throw InputError(describe_errno(path, errno));
    if (!S_ISREG(status.st_mode)) regular_files_ = false;
    if (S_ISDIR(status.st_mode)) throw InputError("cannot read '" + path + "': it is a directory");
    if (::access(path.c_str(), R_OK) != 0) throw InputError(describe_errno(path, errno));
    if (S_ISREG(status.st_mode)) bytes_total_ += static_cast<std::uint64_t>(status.st_size);
  }
  cancel_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (cancel_fd_ < 0) {
    throw InputError("cannot make an eventfd: " + std::generic_category().message(errno));
  }
}

FileSource::~FileSource() {
  close_current();
  ::close(cancel_fd_);
}

void FileSource::cancel() noexcept {
  // Async-signal-safe: a lock-free store and write(2). The eventfd stays readable, so every later
  // wait in a read sees it too.
  cancelled_.store(true, std::memory_order_relaxed);
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(cancel_fd_, &one, sizeof one);
}

bool FileSource::open_next() {
  if (next_path_ == paths_.size() || cancelled_.load(std::memory_order_relaxed)) return false;
  const std::string& path = paths_[next_path_];
  const int fd = path == "-" ? ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0)
                             : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(describe_errno(path, errno));
  std::unique_ptr<detail::ByteStream> stream;
  try {
    stream = std::make_unique<detail::ByteStream>(fd, path, cancel_fd_);
  } catch (...) {
    ::close(fd);
    throw;
  }
  auto open = std::make_unique<Open>();
  open->stream = std::move(stream);
  open->input = std::make_shared<Input>(Input{path, next_path_, options_.format, false});
  current_ = std::move(open);
  ++next_path_;
  return true;
}

void FileSource::close_current() noexcept {
  current_.reset();
}

std::optional<Chunk> FileSource::finish_input() {
  Open& in = *current_;
  Chunk chunk;
  if (in.skipping) {
    in.overlong.push_back(std::move(in.pending));
    in.skipping = false;
    ++in.line;
  } else if (in.carry.size() > options_.max_line_length) {
    in.overlong.push_back(
        OverlongLine{in.line, in.offset, in.carry.size(), in.carry.substr(0, overlong_head)});
    ++in.line;
  } else if (in.stream->cancelled() && !in.carry.empty()) {
    // Reading stopped before this line's end: it is not parsed as if it were whole.
    in.overlong.push_back(
        OverlongLine{in.line, in.offset, in.carry.size(), in.carry.substr(0, overlong_head), true});
    ++in.line;
  } else {
    chunk.text = std::move(in.carry);
  }
  if (chunk.text.empty() && in.overlong.empty()) return std::nullopt;
  chunk.text.reserve(chunk.text.size() + read_ahead_padding);
  if (in.input->format == Format::auto_detect) in.input->format = detect_format(chunk.text);
  chunk.input = in.input;
  chunk.first_line = in.line;
  chunk.offset = in.offset;
  chunk.overlong = std::move(in.overlong);
  return chunk;
}

std::optional<Chunk> FileSource::next() {
  for (;;) {
    if (!current_ && !open_next()) return std::nullopt;
    Open& in = *current_;
    if (in.eof) {
      std::optional<Chunk> last = finish_input();
      bytes_done_ += in.stream->raw_bytes();
      bytes_read_.store(bytes_done_, std::memory_order_relaxed);
      close_current();
      if (last) return last;
      continue;
    }

    std::string buffer = std::move(in.carry);
    in.carry.clear();
    const std::size_t kept = buffer.size();
    // With the padding reserved now, handing the chunk out below never moves its text.
    buffer.reserve(kept + options_.chunk_size + read_ahead_padding);
    buffer.resize(kept + options_.chunk_size);
    const std::size_t got = in.stream->read(buffer.data() + kept, options_.chunk_size);
    buffer.resize(kept + got);
    in.input->gzip = in.stream->gzip();
    bytes_read_.store(bytes_done_ + in.stream->raw_bytes(), std::memory_order_relaxed);
    if (got == 0) {
      // The end of the input, or a cancel: what was read so far is handed out either way.
      in.eof = true;
      in.carry = std::move(buffer);
      continue;
    }

    std::size_t start = 0;
    if (in.skipping) {
      const std::size_t newline = buffer.find('\n');
      const std::size_t upto = newline == std::string::npos ? buffer.size() : newline;
      // The head may still be short of overlong_head when the limit is lower than that.
      if (in.pending.head.size() < overlong_head) {
        in.pending.head.append(buffer, 0, std::min(upto, overlong_head - in.pending.head.size()));
      }
      in.pending.length += upto;
      if (newline == std::string::npos) {
        in.offset += buffer.size();
        continue;
      }
      in.overlong.push_back(std::move(in.pending));
      in.skipping = false;
      ++in.line;
      in.offset += upto + 1;
      start = upto + 1;
    }

    const std::size_t last = buffer.rfind('\n');
    const std::size_t whole_end = last == std::string::npos || last < start ? start : last + 1;
    in.carry.assign(buffer, whole_end, std::string::npos);
    buffer.resize(whole_end);
    if (start > 0) buffer.erase(0, start);

    Chunk chunk;
    chunk.first_line = in.line;
    chunk.offset = in.offset;
    in.line += static_cast<std::uint64_t>(std::count(buffer.begin(), buffer.end(), '\n'));
    in.offset += buffer.size();
    if (in.carry.size() > options_.max_line_length) {
      in.pending =
          OverlongLine{in.line, in.offset, in.carry.size(), in.carry.substr(0, overlong_head)};
      in.skipping = true;
      in.offset += in.carry.size();
      in.carry.clear();
    }
    chunk.text = std::move(buffer);
    chunk.text.reserve(chunk.text.size() + read_ahead_padding);
    chunk.overlong = std::move(in.overlong);
    in.overlong.clear();
    if (chunk.text.empty() && chunk.overlong.empty()) continue;
    if (in.input->format == Format::auto_detect && !chunk.text.empty()) {
      in.input->format = detect_format(chunk.text);
    }
    chunk.input = in.input;
    return chunk;
  }
}

}  // namespace conveyor::stages
