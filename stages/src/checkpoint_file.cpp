// CheckpointFile: the atomic save (temp, fsync, rename, fsync the directory) and a load that
// sets a damaged file aside instead of failing.
#include "conveyor/stages/checkpoint_file.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>
#include <utility>

namespace conveyor::stages {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kHeader = "conveyor-checkpoint 1\n";
constexpr std::string_view kEnd = "crc32 ";

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::system_error(errno, std::generic_category(), what + " '" + path + "'");
}

std::uint32_t crc_of(std::string_view text) {
  return static_cast<std::uint32_t>(
      ::crc32(0L, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
}

void append_escaped(std::string& out, std::string_view path) {
  for (const char c : path) {
    if (c == '%') {
      out += "%25";
    } else if (c == '\n') {
      out += "%0A";
    } else if (c == '\r') {
      out += "%0D";
    } else {
      out.push_back(c);
    }
  }
}

bool unescape(std::string_view text, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    const std::string_view code = text.substr(i + 1, 2);
    if (code == "25") {
      out.push_back('%');
    } else if (code == "0A") {
      out.push_back('\n');
    } else if (code == "0D") {
      out.push_back('\r');
    } else {
      return false;
    }
    i += 2;
  }
  return true;
}

// Reads the next space-separated number of `line` (hex when `base` is 16).
template <class Number>
bool next_number(std::string_view& line, Number& value, int base = 10) {
  const auto [end, error] = std::from_chars(line.data(), line.data() + line.size(), value, base);
  if (error != std::errc() || end == line.data() || end == line.data() + line.size() ||
      *end != ' ') {
    return false;
  }
  line.remove_prefix(static_cast<std::size_t>(end - line.data()) + 1);
  return true;
}

// Writes all of `text` to `fd`; false (errno set) if it could not.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

}  // namespace

CheckpointFile::CheckpointFile(std::string path, std::function<void(CheckpointStep)> fault)
    : path_(std::move(path)), fault_(std::move(fault)) {}

std::string CheckpointFile::format(const std::vector<CheckpointEntry>& entries) {
  std::string text(kHeader);
  char numbers[128];
  for (const CheckpointEntry& entry : entries) {
    const int length = std::snprintf(
        numbers, sizeof numbers, "%llu %llu %llx %u %llu ",
        static_cast<unsigned long long>(entry.device), static_cast<unsigned long long>(entry.inode),
        static_cast<unsigned long long>(entry.fingerprint), entry.fingerprint_length,
        static_cast<unsigned long long>(entry.offset));
    text.append(numbers, static_cast<std::size_t>(length));
    append_escaped(text, entry.path);
    text.push_back('\n');
  }
  char end[32];
  const int length = std::snprintf(end, sizeof end, "%.*s%08x\n", static_cast<int>(kEnd.size()),
                                   kEnd.data(), crc_of(text));
  text.append(end, static_cast<std::size_t>(length));
  return text;
}

bool CheckpointFile::parse(const std::string& text, std::vector<CheckpointEntry>& entries,
                           std::string& problem) {
  entries.clear();
  if (text.empty()) {
    problem = "it is empty";
    return false;
  }
  if (!text.starts_with(kHeader)) {
    problem = "it does not start with '" + std::string(kHeader.substr(0, kHeader.size() - 1)) + "'";
    return false;
  }
  // The last line: "crc32 XXXXXXXX\n", over everything before it.
  const std::size_t end_line = text.rfind(kEnd);
  if (end_line == std::string::npos || text.back() != '\n' ||
      (end_line != 0 && text[end_line - 1] != '\n')) {
    problem = "it is cut short (no checksum line)";
    return false;
  }
  std::uint32_t stored = 0;
  const char* digits = text.data() + end_line + kEnd.size();
  const auto [digits_end, error] =
      std::from_chars(digits, text.data() + text.size() - 1, stored, 16);
  if (error != std::errc() || digits_end != text.data() + text.size() - 1) {
    problem = "its checksum line is malformed";
    return false;
  }
  const std::string_view body(text.data(), end_line);
  if (crc_of(body) != stored) {
    problem = "its checksum does not match its content";
    return false;
  }
  std::string_view rest = body.substr(kHeader.size());
  for (std::size_t number = 2; !rest.empty(); ++number) {
    const std::size_t lf = rest.find('\n');
    std::string_view line = rest.substr(0, lf);
    rest.remove_prefix(lf + 1);
    CheckpointEntry entry;
    if (!next_number(line, entry.device) || !next_number(line, entry.inode) ||
        !next_number(line, entry.fingerprint, 16) || !next_number(line, entry.fingerprint_length) ||
        !next_number(line, entry.offset) || !unescape(line, entry.path) || entry.path.empty()) {
      problem = "line " + std::to_string(number) + " is malformed";
      entries.clear();
      return false;
    }
    entries.push_back(std::move(entry));
  }
  return true;
}

CheckpointLoad CheckpointFile::load() const {
  CheckpointLoad result;
  std::ifstream in(path_, std::ios::binary);
  if (!in) {
    result.status = CheckpointLoad::Status::missing;
    return result;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (parse(text, result.entries, result.problem)) {
    result.status = CheckpointLoad::Status::loaded;
    return result;
  }
  result.status = CheckpointLoad::Status::corrupt;
  const std::string aside = path_ + ".corrupt";
  std::error_code error;
  fs::rename(path_, aside, error);
  result.problem +=
      error ? "; it could not be set aside: " + error.message() : "; set aside as '" + aside + "'";
  return result;
}

void CheckpointFile::save(const std::vector<CheckpointEntry>& entries) const {
  const auto step = [this](CheckpointStep at) {
    if (fault_) fault_(at);
  };
  const std::string text = format(entries);
  const std::string temporary = path_ + ".tmp";
  step(CheckpointStep::write);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", temporary);
  const std::string_view all(text);
  const std::size_t half = all.size() / 2;
  bool good = write_all(fd, all.substr(0, half));
  if (good) {
    step(CheckpointStep::halfway);
    good = write_all(fd, all.substr(half));
  }
  if (good) {
    step(CheckpointStep::fsync_file);
    good = ::fsync(fd) == 0;
  }
  const int saved_errno = errno;
  ::close(fd);
  if (!good) {
    errno = saved_errno;
    fail("cannot write", temporary);
  }
  step(CheckpointStep::rename);
  if (::rename(temporary.c_str(), path_.c_str()) != 0) fail("cannot rename over", path_);
  step(CheckpointStep::fsync_directory);
  const fs::path directory =
      fs::path(path_).has_parent_path() ? fs::path(path_).parent_path() : fs::path(".");
  const int directory_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory_fd < 0) fail("cannot open the directory of", path_);
  const bool synced = ::fsync(directory_fd) == 0;
  ::close(directory_fd);
  if (!synced) fail("cannot fsync the directory of", path_);
}

}  // namespace conveyor::stages
