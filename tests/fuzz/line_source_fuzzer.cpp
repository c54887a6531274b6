// Fuzzes line splitting as the sources do it: FileSource (through a memory file, with small limits
// so that lines span chunks and some are too long) and MemorySource. Against a plain split of the
// whole input, every line must come out exactly once, in order, with its number and offset:
// either as a line of a chunk, or, for FileSource, as an overlong line with its true length.
// The first input byte sets the limits; the rest is the file. Gzip input is inflated, and a
// corrupt stream must end in InputError, nothing worse.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/stages/file_source.hpp"
#include "conveyor/stages/line_splitter.hpp"
#include "conveyor/stages/memory_source.hpp"
#include "fuzz_support.hpp"

namespace {

using conveyor::fuzz::check;
using namespace conveyor::stages;

struct Line {
  std::uint64_t number;
  std::uint64_t offset;
  std::string_view raw;  // without its '\n'
};

std::vector<Line> split(std::string_view text) {
  std::vector<Line> lines;
  std::uint64_t number = 1;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back({number++, at, text.substr(at, end - at)});
    at = end + 1;
  }
  return lines;
}

std::string_view without_cr(std::string_view raw) {
  if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  return raw;
}

// Walks the chunks of a source and checks them against the expected lines.
template <class Source>
void check_source(Source& source, const std::vector<Line>& expected, std::size_t max_line_length,
                  bool may_drop) {
  std::size_t next = 0;
  while (std::optional<Chunk> chunk = source.next()) {
    check(chunk->input != nullptr, "a chunk without its input");
    check(may_drop || chunk->overlong.empty(), "an overlong line from a source that keeps them");
    for (const OverlongLine& dropped : chunk->overlong) {
      check(next < expected.size(), "an overlong line that is not in the input");
      const Line& line = expected[next++];
      check(dropped.line == line.number, "overlong line: wrong number");
      check(dropped.offset == line.offset, "overlong line: wrong offset");
      check(dropped.length == line.raw.size(), "overlong line: wrong length");
      check(dropped.length > max_line_length, "a line within the limit was dropped");
      check(dropped.head == line.raw.substr(0, dropped.head.size()), "overlong line: wrong head");
      check(
          dropped.head.size() == std::min<std::size_t>(line.raw.size(), FileSource::overlong_head),
          "overlong line: head too short");
    }
    if (chunk->text.capacity() < chunk->text.size() + read_ahead_padding) {
      std::fprintf(stderr, "%s: chunk of %zu bytes, capacity %zu\n", may_drop ? "file" : "memory",
                   chunk->text.size(), chunk->text.capacity());
      check(false, "a chunk without read-ahead padding");
    }
    for_each_line(chunk->text, [&](std::string_view text, std::uint64_t index) {
      check(next < expected.size(), "a line that is not in the input");
      const Line& line = expected[next++];
      check(chunk->first_line + index == line.number, "wrong line number");
      const auto offset =
          chunk->offset + static_cast<std::uint64_t>(text.data() - chunk->text.data());
      check(offset == line.offset, "wrong line offset");
      check(text == without_cr(line.raw), "a line's text changed");
    });
    // Only an input's last line may lack its newline.
    if (!chunk->text.empty() && chunk->text.back() != '\n') {
      check(next == expected.size(), "a line split between chunks");
    }
  }
  check(next == expected.size(), "lines were lost");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t limit = 1 + data[0];  // 1..256 bytes
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const bool gzip = text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f &&
                    static_cast<unsigned char>(text[1]) == 0x8b;
  const std::vector<Line> expected = split(text);

  // MemorySource: the chunk size is the limit; a longer line makes a chunk of its own.
  {
    MemorySource source("memory", text, {.chunk_size = limit, .max_line_length = limit});
    check_source(source, expected, limit, false);
  }

  // FileSource: chunks of 4096 bytes (its smallest), lines longer than the limit dropped.
  const int fd = ::memfd_create("line_source_fuzzer", MFD_CLOEXEC);
  check(fd >= 0, "memfd_create failed");
  check(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()),
        "write to the memory file failed");
  try {
    FileSource source({"/proc/self/fd/" + std::to_string(fd)},
                      {.chunk_size = 4096, .max_line_length = limit});
    if (gzip) {
      while (source.next()) {
      }
    } else {
      check_source(source, expected, limit, true);
    }
  } catch (const InputError&) {
    check(gzip, "InputError on plain input");
  }
  ::close(fd);
  return 0;
}
