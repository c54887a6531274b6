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
#include "line_assembler.hpp"

namespace conveyor::stages {

namespace {

std::string describe_errno(const std::string& path, int error) {
  return "cannot open '" + path + "': " + std::generic_category().message(error);
}

}  // namespace

struct FileSource::Open {
  Open(std::size_t max_line_length) : assembler(max_line_length) {}

  std::shared_ptr<Input> input;
  std::unique_ptr<detail::ByteStream> stream;
  detail::LineAssembler assembler;
  bool eof = false;
};

static_assert(FileSource::overlong_head == detail::LineAssembler::overlong_head);

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
  auto open = std::make_unique<Open>(options_.max_line_length);
  open->stream = std::move(stream);
  open->input = std::make_shared<Input>(Input{path, next_path_, options_.format, false});
  current_ = std::move(open);
  ++next_path_;
  return true;
}

void FileSource::close_current() noexcept {
  current_.reset();
}

Chunk FileSource::hand_out(Chunk chunk) {
  Open& in = *current_;
  if (in.input->format == Format::auto_detect && !chunk.text.empty()) {
    in.input->format = detect_format(chunk.text);
  }
  chunk.input = in.input;
  return chunk;
}

std::optional<Chunk> FileSource::next() {
  for (;;) {
    if (!current_ && !open_next()) return std::nullopt;
    Open& in = *current_;
    if (in.eof) {
      std::optional<detail::Cut> last = in.assembler.finish(in.stream->cancelled());
      std::optional<Chunk> chunk;
      if (last) chunk = hand_out(std::move(last->chunk));
      bytes_done_ += in.stream->raw_bytes();
      bytes_read_.store(bytes_done_, std::memory_order_relaxed);
      close_current();
      if (chunk) return chunk;
      continue;
    }

    std::size_t kept = 0;
    std::string buffer = in.assembler.buffer(options_.chunk_size, kept);
    const std::size_t got = in.stream->read(buffer.data() + kept, options_.chunk_size);
    buffer.resize(kept + got);
    in.input->gzip = in.stream->gzip();
    bytes_read_.store(bytes_done_ + in.stream->raw_bytes(), std::memory_order_relaxed);
    // At the end of the input (or a cancel) this only carries the last line again: finish()
    // hands it out next.
    std::optional<detail::Cut> cut = in.assembler.cut(std::move(buffer));
    if (got == 0) in.eof = true;
    if (cut) return hand_out(std::move(cut->chunk));
  }
}

}  // namespace conveyor::stages
