// Fuzzes the checkpoint file's reader, CheckpointFile::parse, with what a damaged or foreign file
// could hold: it reads entries or refuses with a reason, never crashes, and what it reads, written
// again by format(), reads back the same. The first input byte chooses how the rest is used:
//   0: as the whole file (the checksum almost never matches: the checks before it);
//   1: as the body, under a checksum that matches (the line reader behind the checksum);
//   2: cut into entries whose paths hold any bytes, which format() writes and parse() must read
//      back; then one byte of the body is changed, and parse() must refuse the file.
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/stages/checkpoint_file.hpp"
#include "fuzz_support.hpp"

namespace {

using conveyor::fuzz::check;
using conveyor::stages::CheckpointEntry;
using conveyor::stages::CheckpointFile;

constexpr std::string_view header = "conveyor-checkpoint 1\n";

// What parse() made of `text`: when it read entries, format() and parse() give them back.
void read_back(const std::string& text) {
  std::vector<CheckpointEntry> entries;
  std::string problem;
  if (!CheckpointFile::parse(text, entries, problem)) {
    check(!problem.empty(), "a file refused without a reason");
    check(entries.empty(), "a file refused, but entries were left");
    return;
  }
  for (const CheckpointEntry& entry : entries)
    check(!entry.path.empty(), "an entry read without a path");
  std::vector<CheckpointEntry> again;
  check(CheckpointFile::parse(CheckpointFile::format(entries), again, problem),
        "what was read, written again, is refused");
  check(again == entries, "what was read, written again, reads back otherwise");
}

// Takes `size` bytes off the front of `data` as a number (fewer, with zeros, at its end).
template <typename Number>
Number take(std::string_view& data, std::size_t size = sizeof(Number)) {
  Number value = 0;
  const std::size_t n = std::min(size, data.size());
  std::memcpy(&value, data.data(), n);
  data.remove_prefix(n);
  return value;
}

void round_trip(std::string_view data) {
  std::vector<CheckpointEntry> entries;
  while (data.size() >= 2 && entries.size() < 64) {
    CheckpointEntry entry;
    entry.device = take<std::uint64_t>(data, 2);
    entry.inode = take<std::uint64_t>(data, 4);
    entry.fingerprint = take<std::uint64_t>(data);
    entry.fingerprint_length = take<std::uint32_t>(data, 2);
    entry.offset = take<std::uint64_t>(data, 5);
    const std::size_t length = 1 + take<std::size_t>(data, 1) % 32;
    entry.path = std::string(data.substr(0, length));
    data.remove_prefix(std::min(length, data.size()));
    if (entry.path.empty()) entry.path = "/";
    entries.push_back(std::move(entry));
  }
  const std::string text = CheckpointFile::format(entries);
  std::vector<CheckpointEntry> read;
  std::string problem;
  check(CheckpointFile::parse(text, read, problem), "a file format() wrote is refused");
  check(read == entries, "a file format() wrote reads back otherwise");
  // Any one byte changed in what the checksum covers (up to its line) is found.
  const std::size_t body = text.rfind("crc32 ");
  const std::size_t at = entries.empty() ? 0 : entries[0].offset % body;
  std::string damaged = text;
  damaged[at] = static_cast<char>(damaged[at] ^ (1 + entries.size() % 255));
  check(!CheckpointFile::parse(damaged, read, problem), "a damaged file is read");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view data(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  switch (bytes[0] % 3) {
    case 0:
      read_back(std::string(data));
      break;
    case 1: {
      std::string text(header);
      text += data;
      if (!text.ends_with('\n')) text += '\n';
      char end[32];
      const auto crc = static_cast<unsigned>(
          ::crc32(0L, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
      const int length = std::snprintf(end, sizeof end, "crc32 %08x\n", crc);
      text.append(end, static_cast<std::size_t>(length));
      read_back(text);
      break;
    }
    default:
      round_trip(data);
      break;
  }
  return 0;
}
