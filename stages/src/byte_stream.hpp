// ByteStream: the bytes of one input (a file, stdin or a pipe), inflated when it is gzip.
//
// Each read() is one read(2) of what the input has (a pipe's reader gets lines as soon as they are
// written, not once a buffer fills), and it waits in poll(2) together with a cancel descriptor:
// once that descriptor is readable, the stream ends as if at the end of the input, even while it
// waited on a quiet pipe. Gzip is recognised by its magic number at the start and inflated with
// zlib's inflate; concatenated members are read through, and what follows the last member is
// ignored (as gzip(1) and zlib's gzread do).
//
// Contract: one thread uses a ByteStream. It owns `fd` and closes it. read() throws InputError
// naming the input on a read error, on corrupt gzip data, and when a gzip stream ends early; the
// content before a gzip error is returned first.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace conveyor::stages::detail {

class ByteStream {
 public:
  // `cancel_fd`: readable once reading should stop (an eventfd), or -1 for none.
  ByteStream(int fd, std::string name, int cancel_fd);
  ~ByteStream();
  ByteStream(const ByteStream&) = delete;
  ByteStream& operator=(const ByteStream&) = delete;

  // Up to `size` bytes of content into `out`; 0 at the end of the input or once cancelled.
  std::size_t read(char* out, std::size_t size);

  [[nodiscard]] bool gzip() const noexcept { return gzip_; }
  [[nodiscard]] bool cancelled() const noexcept { return cancelled_; }
  // Bytes taken from the input so far (compressed bytes for gzip).
  [[nodiscard]] std::uint64_t raw_bytes() const noexcept { return raw_bytes_; }

 private:
  // One read(2) of at most `size` bytes into `out`, after waiting for input or the cancel
  // descriptor; 0 at the end or once cancelled.
  std::size_t read_raw(unsigned char* out, std::size_t size);
  // Reads until `count` bytes wait in the raw buffer; false if the input ended (or was cancelled)
  // first.
  bool ensure(std::size_t count);
  // Decides plain or gzip from the first two bytes.
  void start();
  std::size_t inflate_into(char* out, std::size_t size);
  [[noreturn]] void fail(const std::string& why) const;

  int fd_;
  std::string name_;
  int cancel_fd_;
  bool started_ = false;
  bool gzip_ = false;
  bool cancelled_ = false;
  bool ended_ = false;      // gzip: no more members
  bool in_member_ = false;  // gzip: inside a member, so its end is still due
  bool inflating_ = false;  // inflateInit2 succeeded, inflateEnd is owed
  std::string error_;       // gzip: an error found after some output, due on the next read
  std::uint64_t raw_bytes_ = 0;
  std::vector<unsigned char> raw_;  // bytes read but not yet consumed: [raw_begin_, raw_end_)
  std::size_t raw_begin_ = 0;
  std::size_t raw_end_ = 0;
  z_stream zlib_{};
};

}  // namespace conveyor::stages::detail
