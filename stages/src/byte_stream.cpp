// ByteStream: reads with poll(2) and read(2), inflates gzip with zlib.
#include "byte_stream.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <system_error>
#include <utility>

#include "conveyor/stages/file_source.hpp"  // InputError

namespace conveyor::stages::detail {

namespace {

constexpr std::size_t raw_capacity = std::size_t{256} << 10;
constexpr unsigned char gzip_magic_0 = 0x1f;
constexpr unsigned char gzip_magic_1 = 0x8b;
constexpr int gzip_window_bits = 16 + MAX_WBITS;  // a gzip header and trailer, the largest window

}  // namespace

ByteStream::ByteStream(int fd, std::string name, int cancel_fd)
    : fd_(fd), name_(std::move(name)), cancel_fd_(cancel_fd) {}

ByteStream::~ByteStream() {
  if (inflating_) ::inflateEnd(&zlib_);
  ::close(fd_);
}

void ByteStream::fail(const std::string& why) const {
  throw InputError("cannot read '" + name_ + "': " + why);
}

std::size_t ByteStream::read_raw(unsigned char* out, std::size_t size) {
  for (;;) {
    if (cancelled_) return 0;
    pollfd waits[2] = {{.fd = fd_, .events = POLLIN, .revents = 0},
                       {.fd = cancel_fd_, .events = POLLIN, .revents = 0}};
    const nfds_t count = cancel_fd_ >= 0 ? 2 : 1;
    if (::poll(waits, count, -1) < 0) {
      if (errno == EINTR) continue;
      fail(std::generic_category().message(errno));
    }
    if (count == 2 && waits[1].revents != 0) {
      cancelled_ = true;
      return 0;
    }
    const ssize_t got = ::read(fd_, out, size);
    if (got < 0) {
      // EAGAIN: a descriptor someone made non-blocking; poll again.
      if (errno == EINTR || errno == EAGAIN) continue;
      fail(std::generic_category().message(errno));
    }
    raw_bytes_ += static_cast<std::uint64_t>(got);
    return static_cast<std::size_t>(got);
  }
}

bool ByteStream::ensure(std::size_t count) {
  if (raw_end_ - raw_begin_ >= count) return true;
  if (raw_begin_ > 0) {
    std::memmove(raw_.data(), raw_.data() + raw_begin_, raw_end_ - raw_begin_);
    raw_end_ -= raw_begin_;
    raw_begin_ = 0;
  }
  while (raw_end_ < count) {
    const std::size_t got = read_raw(raw_.data() + raw_end_, raw_.size() - raw_end_);
    if (got == 0) return false;
    raw_end_ += got;
  }
  return true;
}

void ByteStream::start() {
  started_ = true;
  raw_.resize(raw_capacity);
  // The first byte decides unless it is gzip's first; a pipe may deliver the second later (and a
  // one-byte first line must not wait for it).
  if (!ensure(1) || raw_[raw_begin_] != gzip_magic_0) return;
  if (!ensure(2) || raw_[raw_begin_ + 1] != gzip_magic_1) return;
  if (::inflateInit2(&zlib_, gzip_window_bits) != Z_OK) fail("out of memory");
  inflating_ = true;
  gzip_ = true;
  in_member_ = true;
}

std::size_t ByteStream::read(char* out, std::size_t size) {
  if (size == 0) return 0;
  if (!started_) start();
  if (gzip_) return inflate_into(out, size);
  if (raw_begin_ < raw_end_) {
    // What start() read to decide.
    const std::size_t count = std::min(size, raw_end_ - raw_begin_);
    std::memcpy(out, raw_.data() + raw_begin_, count);
    raw_begin_ += count;
    return count;
  }
  return read_raw(reinterpret_cast<unsigned char*>(out), size);
}

std::size_t ByteStream::inflate_into(char* out, std::size_t size) {
  if (!error_.empty()) fail(std::exchange(error_, {}));
  if (ended_) return 0;
  const auto wanted =
      static_cast<uInt>(std::min<std::size_t>(size, std::numeric_limits<uInt>::max()));
  zlib_.next_out = reinterpret_cast<Bytef*>(out);
  zlib_.avail_out = wanted;
  while (zlib_.avail_out == wanted) {
    if (!in_member_) {
      // Between members: another member, or the end; what follows the last member is ignored.
      if (!ensure(2) || raw_[raw_begin_] != gzip_magic_0 || raw_[raw_begin_ + 1] != gzip_magic_1) {
        ended_ = true;
        break;
      }
      ::inflateReset(&zlib_);
      in_member_ = true;
    }
    if (raw_begin_ == raw_end_ && !ensure(1)) {
      ended_ = true;
      if (!cancelled_) error_ = "the gzip stream ends early (truncated file?)";
      break;
    }
    zlib_.next_in = raw_.data() + raw_begin_;
    zlib_.avail_in = static_cast<uInt>(raw_end_ - raw_begin_);
    const int status = ::inflate(&zlib_, Z_NO_FLUSH);
    raw_begin_ = raw_end_ - zlib_.avail_in;
    if (status == Z_STREAM_END) {
      in_member_ = false;
    } else if (status != Z_OK && status != Z_BUF_ERROR) {
      ended_ = true;
      error_ = std::string("corrupt gzip data") +
               (zlib_.msg != nullptr ? std::string(" (") + zlib_.msg + ")" : std::string());
      break;
    }
  }
  // An error waits until what was inflated before it has been handed out.
  const std::size_t produced = wanted - zlib_.avail_out;
  if (produced == 0 && !error_.empty()) fail(std::exchange(error_, {}));
  return produced;
}

}  // namespace conveyor::stages::detail
