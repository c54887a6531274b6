// FileTailer: each way other shippers lose or repeat lines of tailed files, as a test named after
// what it checks; and PathGlob, the globs that name the files.
#include "conveyor/stages/file_tailer.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/stages/path_glob.hpp"

#include "scratch_dir.hpp"
#include "stress.hpp"

namespace {

namespace fs = std::filesystem;
using conveyor::stages::CheckpointEntry;
using conveyor::stages::Chunk;
using conveyor::stages::FileTailer;
using conveyor::stages::Input;
using conveyor::stages::PathGlob;
using conveyor::stages::TailOptions;
using namespace std::chrono_literals;
using Clock = FileTailer::Clock;

struct Collected;

// W3C's first line: files that begin with it share their fingerprint.
const std::string header = "#Fields: date time uri\n";

class FileTailerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // poll runs on the test's one thread, so ThreadSanitizer has nothing to watch here; the
    // 10,000-file test alone took it 19.5 s. The other builds run every test.
    if (conveyor::testing::thread_sanitizer) GTEST_SKIP() << "one thread: nothing for TSan";
  }

  [[nodiscard]] std::string path(const std::string& name) const { return (dir_ / name).string(); }

  void append(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::app | std::ios::binary) << text;
  }
  // Lines "NAME-FROM" .. "NAME-(TO-1)".
  void append_lines(const std::string& name, const std::string& prefix, int from, int to) const {
    std::string text;
    for (int i = from; i < to; ++i)
      text += prefix + std::to_string(i) + "\n";
    append(name, text);
  }

  // `name`: the header, then lines "PREFIX-FROM" .. "PREFIX-(TO-1)".
  void append_with_header(const std::string& name, const std::string& prefix, int from,
                          int to) const {
    append(name, header);
    append_lines(name, prefix, from, to);
  }
  // app.log and zz.log begin with the header; both are read, then app.log is truncated with no
  // copy (the tailer keeps it parked) and written again: the header, new-0 and new-1.
  Clock::time_point truncate_one_of_two_twins(FileTailer& tailer, Collected& out) const;
  // app.log, `first` then old-0 .. old-(OLD-1), read by a tailer; then, after `pause`, truncated
  // and written again with `first` and new-0 .. new-(FRESH-1), and read: what came, each of old-
  // and new- once, and the truncations it saw.
  void expect_rewrite_found(const std::string& first, int old, int fresh,
                            std::chrono::milliseconds pause = 0ms) const;
  // What is read of a new .gz that takes the inode of a deleted one holding `old_text`.
  Collected read_at_the_inode_of_one_skipped(const std::string& old_text) const;
  // old.gz (the header, old-0 .. old-99) and what else the globs of `tail` name, read by a
  // tailer that then stops: its checkpoint; `first`, what it read.
  std::vector<CheckpointEntry> checkpoint_with_old_gz(const TailOptions& tail,
                                                      Collected& first) const;

  [[nodiscard]] TailOptions options(const std::vector<std::string>& include = {}) const {
    TailOptions options;
    options.include = include.empty() ? std::vector<std::string>{path("*.log")} : include;
    options.glob_interval = 0ms;  // look every poll
    options.rotate_wait = 1s;
    options.partial_line_timeout = 1s;
    return options;
  }

  // The same, read from the end of each file found at the first look.
  [[nodiscard]] TailOptions at_end_options(const std::vector<std::string>& include) const {
    TailOptions at_end = options(include);
    at_end.start_at_end = true;
    return at_end;
  }

  // Writes a.log (a-0 to a-9); options that close a file idle for 1 s and look for files once an
  // hour.
  [[nodiscard]] TailOptions with_idle_a_log() const {
    append_lines("a.log", "a-", 0, 10);
    TailOptions tail = options();
    tail.close_idle = 1s;
    tail.glob_interval = std::chrono::hours(1);
    return tail;
  }

  conveyor::testing::ScratchDir dir_{"tail"};
};

// What a tailer handed out: every line with how often it came, and the chunks, whose tokens
// stay held until released.
struct Collected {
  std::map<std::string, int> lines;
  std::vector<Chunk> held;
  std::vector<std::string> files;  // the file of each chunk
  std::size_t overlong = 0;

  FileTailer::Emit emit() {
    return [this](Chunk&& chunk) {
      std::size_t start = 0;
      for (std::size_t end; (end = chunk.text.find('\n', start)) != std::string::npos;
           start = end + 1)
        ++lines[chunk.text.substr(start, end - start)];
      overlong += chunk.overlong.size();
      files.push_back(chunk.input->file);
      held.push_back(std::move(chunk));
      return true;
    };
  }
  void release() { held.clear(); }
  [[nodiscard]] bool each_once(const std::string& prefix, int from, int to) const {
    for (int i = from; i < to; ++i) {
      const auto it = lines.find(prefix + std::to_string(i));
      if (it == lines.end() || it->second != 1) return false;
    }
    return true;
  }
};

// The descriptors the process has open now.
std::uint64_t descriptors() {
  std::uint64_t count = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd"))
    ++count;
  return count;
}

// Polls until a poll reads nothing (at most `rounds`), moving the clock on by `step` each time.
Clock::time_point settle(FileTailer& tailer, Collected& out, Clock::time_point now,
                         std::chrono::milliseconds step = 10ms, int rounds = 100) {
  for (int i = 0; i < rounds; ++i) {
    now += step;
    if (tailer.poll(out.emit(), now) == 0 && i > 2) break;
  }
  return now;
}

// Every file read, then idle for close_idle and closed (with close_idle 1 s, as in
// FileTailerTest::with_idle_a_log(), whose a.log holds a-0..a-9).
Clock::time_point read_until_closed_idle(FileTailer& tailer, Collected& out) {
  const Clock::time_point now = settle(tailer, out, Clock::now());
  return settle(tailer, out, now + 2s);
}

// A tailer run until it has read everything, which is then delivered; its checkpoint.
std::vector<CheckpointEntry> checkpoint_after_reading(const TailOptions& tail, Collected& out) {
  FileTailer tailer(tail, Input{"files"}, {});
  (void)settle(tailer, out, Clock::now());
  out.release();
  return tailer.checkpoint();
}

std::uint64_t offset_of(const std::vector<CheckpointEntry>& entries, const std::string& path) {
  for (const CheckpointEntry& entry : entries)
    if (entry.path == path) return entry.offset;
  return UINT64_MAX;
}

// Lines "PREFIX-0" .. "PREFIX-(COUNT-1)" each came once, for each (PREFIX, COUNT).
void expect_each_once(const Collected& out,
                      std::initializer_list<std::pair<std::string, int>> prefixes) {
  for (const auto& [prefix, count] : prefixes)
    EXPECT_TRUE(out.each_once(prefix, 0, count)) << prefix;
}

TEST_F(FileTailerTest, ReadsEveryLineOnceAndNamesItsFile) {
  append_lines("a.log", "a-", 0, 1000);
  FileTailer tailer(options(), Input{"files"}, {});
  Collected out;
  (void)settle(tailer, out, Clock::now());
  EXPECT_TRUE(out.each_once("a-", 0, 1000));
  EXPECT_EQ(out.files.front(), path("a.log"));
  EXPECT_EQ(out.held.front().first_line, 1U);
  EXPECT_EQ(out.held.front().offset, 0U);
}

// caught_up says whether a poll left bytes for a later one: the service lets appends gather
// only when none were left.
TEST_F(FileTailerTest, CaughtUpOnlyOnceEveryFileIsReadToItsEnd) {
  TailOptions tail = options();
  tail.read_bytes = 64;                 // four reads a poll: 256 bytes
  append_lines("a.log", "a-", 0, 100);  // 490 bytes
  append_lines("b.log", "b-", 0, 5);
  FileTailer tailer(tail, Input{"files"}, {});
  Collected out;
  Clock::time_point now = Clock::now();
  EXPECT_GT(tailer.poll(out.emit(), now), 0U);
  EXPECT_FALSE(tailer.caught_up());
  for (int i = 0; i < 10 && !tailer.caught_up(); ++i)
    (void)tailer.poll(out.emit(), now += 10ms);
  EXPECT_TRUE(tailer.caught_up());
  EXPECT_TRUE(out.each_once("a-", 0, 100));
  EXPECT_TRUE(out.each_once("b-", 0, 5));
  append_lines("b.log", "b-", 5, 6);
  EXPECT_GT(tailer.poll(out.emit(), now += 10ms), 0U);
  EXPECT_TRUE(tailer.caught_up());
}

// The offset is saved once a line is delivered, not once it is read: a hard kill between the
// two must not lose it.
TEST_F(FileTailerTest, TheOffsetIsCommittedWhenDeliveredNotWhenRead) {
  append_lines("a.log", "a-", 0, 100);
  FileTailer tailer(options(), Input{"files"}, {});
  Collected out;
  (void)settle(tailer, out, Clock::now());
  ASSERT_TRUE(out.each_once("a-", 0, 100));
  EXPECT_EQ(offset_of(tailer.checkpoint(), path("a.log")), 0U);  // read, not delivered
  EXPECT_FALSE(tailer.acknowledged());
  out.release();
  EXPECT_EQ(offset_of(tailer.checkpoint(), path("a.log")), fs::file_size(path("a.log")));
  EXPECT_TRUE(tailer.acknowledged());
}

// A restart from the checkpoint reads neither a line twice nor misses one.
TEST_F(FileTailerTest, ResumesFromItsCheckpointWithoutRepeats) {
  append_lines("a.log", "a-", 0, 100);
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(options(), first);
  append_lines("a.log", "a-", 100, 150);
  FileTailer again(options(), Input{"files"}, saved);
  Collected out;
  (void)settle(again, out, Clock::now());
  EXPECT_TRUE(out.each_once("a-", 100, 150));
  EXPECT_EQ(out.lines.count("a-99"), 0U);
  EXPECT_EQ(out.held.front().first_line, 0U);  // line numbers are not known after a restart
  EXPECT_EQ(out.held.front().offset, offset_of(saved, path("a.log")));
}

// Rotated while the service was down, and the new file begins with the same line as the old
// one (a header): each file takes the checkpoint entry of its own inode, although the new file's
// path comes first. Taking the old file's entry by its first line, the new file would skip that
// many bytes of its own, and the old file would be read again from its beginning.
TEST_F(FileTailerTest, AfterARotationWhileDownEachFileTakesItsOwnInodesEntry) {
  const std::vector<std::string> globs{path("a.log*")};
  append("a.log", "# a header line\n");
  append_lines("a.log", "old-", 0, 50);
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(options(globs), first);
  append_lines("a.log", "old-", 50, 60);  // written after the checkpoint, before the rotation
  fs::rename(path("a.log"), path("a.log.1"));
  append("a.log", "# a header line\n");
  append_lines("a.log", "new-", 0, 200);  // longer than the old file's offset
  FileTailer again(options(globs), Input{"files"}, saved);
  Collected out;
  const Clock::time_point now = settle(again, out, Clock::now());
  // Beginning as a file it follows does, the new one is held as a possible copy (copytruncate)
  // for rotate_wait, then read as a file of its own.
  (void)settle(again, out, now + options().rotate_wait + 10ms);
  EXPECT_TRUE(out.each_once("old-", 50, 60));
  EXPECT_EQ(out.lines.count("old-0"), 0U);
  EXPECT_EQ(out.lines.count("old-49"), 0U);
  EXPECT_TRUE(out.each_once("new-", 0, 200));
  EXPECT_EQ(out.lines["# a header line"], 1);  // the new file's
}

// Renamed out of the globs while the service was down (a dated name that `*.log` does not take),
// a file is found by its inode in its directory: the lines written to it after the checkpoint are
// read, and then it is let go. The file now at its path is read from its beginning.
TEST_F(FileTailerTest, AFileRenamedOutOfTheGlobsWhileDownIsReadOnFromItsCheckpoint) {
  append_lines("a.log", "old-", 0, 50);
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(options(), first);
  append_lines("a.log", "old-", 50, 60);
  fs::rename(path("a.log"), path("a.log-20240601"));
  append_lines("a.log", "new-", 0, 20);
  FileTailer again(options(), Input{"files"}, saved);
  Collected out;
  Clock::time_point now = settle(again, out, Clock::now());
  EXPECT_TRUE(out.each_once("old-", 50, 60));
  EXPECT_EQ(out.lines.count("old-0"), 0U);
  EXPECT_TRUE(out.each_once("new-", 0, 20));
  EXPECT_NE(std::find(out.files.begin(), out.files.end(), path("a.log-20240601")), out.files.end());
  out.release();
  now = settle(again, out, now + 2s);  // closed after rotate_wait
  (void)settle(again, out, now + 2s);  // and forgotten
  EXPECT_EQ(again.stats().files.load(), 1U);
  EXPECT_EQ(again.stats().open_files.load(), 1U);
  const std::vector<CheckpointEntry> entries = again.checkpoint();
  ASSERT_EQ(entries.size(), 1U);
  EXPECT_EQ(entries.front().path, path("a.log"));
}

// Two files renamed out of the globs while the service was down, and one descriptor allowed: the
// second waits, remembered, until the first is read and closed, and is then read on too.
TEST_F(FileTailerTest, FilesRenamedAwayWhileDownPastTheDescriptorCapAreAllReadOn) {
  append_lines("a.log", "a-", 0, 50);
  append_lines("b.log", "b-", 0, 50);
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(options(), first);
  ASSERT_EQ(saved.size(), 2U);
  append_lines("a.log", "a-", 50, 60);
  append_lines("b.log", "b-", 50, 60);
  fs::rename(path("a.log"), path("a.log-20240601"));
  fs::rename(path("b.log"), path("b.log-20240601"));
  TailOptions capped = options();
  capped.max_open_files = 1;
  FileTailer again(capped, Input{"files"}, saved);
  Collected out;
  Clock::time_point now = settle(again, out, Clock::now());
  out.release();
  now = settle(again, out, now + 2s);  // the first read to its end: closed after rotate_wait
  out.release();
  now = settle(again, out, now + 2s);
  (void)settle(again, out, now + 2s);
  EXPECT_TRUE(out.each_once("a-", 50, 60));
  EXPECT_TRUE(out.each_once("b-", 50, 60));
  EXPECT_EQ(out.lines.count("a-0") + out.lines.count("b-0"), 0U);
}

// The same, for files that begin with a header line: the new file at the path begins as the
// renamed one did, and must not take its checkpoint entry (it would start at the renamed file's
// offset, and the renamed file's last lines would not be read).
TEST_F(FileTailerTest, ARenamedFileWithAHeaderKeepsItsEntryFromTheNewFileAtItsPath) {
  append("a.log", "#Version: 1.0\n");
  append_lines("a.log", "old-", 0, 50);
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(options(), first);
  append_lines("a.log", "old-", 50, 60);
  fs::rename(path("a.log"), path("a.log-20240601"));
  append("a.log", "#Version: 1.0\n");
  append_lines("a.log", "new-", 0, 200);  // longer than the offset the entry holds
  FileTailer again(options(), Input{"files"}, saved);
  Collected out;
  const Clock::time_point now = settle(again, out, Clock::now());
  EXPECT_TRUE(out.each_once("old-", 50, 60));
  EXPECT_EQ(out.lines.count("old-0"), 0U);
  // Beginning as a file it follows does, the new one may be a copy: it is read once rotate_wait
  // has shown that no truncation came.
  (void)settle(again, out, now + 2s);
  EXPECT_TRUE(out.each_once("new-", 0, 200));
  EXPECT_EQ(out.lines.count("#Version: 1.0"), 1U);
}

// The same inode, found there with other first bytes (rewritten, or a reused inode), is not the
// file the checkpoint names: nothing is read from it.
TEST_F(FileTailerTest, ARenamedFileThatNoLongerBeginsAsItDidIsLeftAlone) {
  append_lines("a.log", "old-", 0, 50);
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(options(), first);
  fs::rename(path("a.log"), path("a.log-20240601"));
  fs::resize_file(path("a.log-20240601"), 0);
  append_lines("a.log-20240601", "other-", 0, 100);
  FileTailer again(options(), Input{"files"}, saved);
  Collected out;
  (void)settle(again, out, Clock::now());
  EXPECT_TRUE(out.lines.empty());
  EXPECT_EQ(again.stats().files.load(), 0U);
  EXPECT_EQ(again.stats().open_files.load(), 0U);
}

// A file the globs list but that could not be opened yet (here: past max_open_files, until the
// other file is closed as idle) keeps its checkpoint past rotate_wait, and goes on from it.
TEST_F(FileTailerTest, AFileOpenedLateStillGoesOnFromItsCheckpoint) {
  append_lines("a.log", "a-", 0, 50);
  append_lines("b.log", "b-", 0, 50);
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(options(), first);
  append_lines("b.log", "b-", 50, 60);
  TailOptions late = options();
  late.max_open_files = 1;
  late.close_idle = 2s;  // after rotate_wait (1 s)
  FileTailer again(late, Input{"files"}, saved);
  Collected out;
  Clock::time_point now = settle(again, out, Clock::now());
  now = settle(again, out, now + 3s);  // a.log closed as idle, b.log opened
  (void)settle(again, out, now + 3s);
  EXPECT_TRUE(out.each_once("b-", 50, 60));
  EXPECT_EQ(out.lines.count("b-0"), 0U) << "b.log was read again from its beginning";
  EXPECT_EQ(out.lines.count("a-0"), 0U);
}

// A file the globs list but that could not be opened yet (past max_open_files) keeps its entry
// from a new file that begins with the same header: the new one is read from its start, not from
// the listed file's offset, and the listed one goes on from its own once it is opened.
TEST_F(FileTailerTest, AListedFileNotOpenedYetKeepsItsEntryFromANewFileWithItsHeader) {
  append_with_header("z.log", "z-", 0, 50);
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(options(), first);
  append_with_header("a.log", "a-", 0, 100);  // written while the service was down
  append_lines("z.log", "z-", 50, 60);
  TailOptions late = options();
  late.max_open_files = 1;
  late.close_idle = 2s;  // after rotate_wait (1 s)
  FileTailer again(late, Input{"files"}, saved);
  Collected out;
  Clock::time_point now = settle(again, out, Clock::now());
  now = settle(again, out, now + 3s);  // a.log closed as idle, z.log opened
  (void)settle(again, out, now + 3s);
  EXPECT_TRUE(out.each_once("a-", 0, 100)) << "a.log went on from z.log's offset";
  EXPECT_TRUE(out.each_once("z-", 50, 60));
  EXPECT_EQ(out.lines.count("z-0"), 0U) << "z.log was read again from its beginning";
}

// The same, when the file that could not be opened yet is renamed out of the globs before it is
// (rotated): its entry is not dropped with its path, but found by its inode in its directory, and
// the file read on from its checkpoint once a descriptor is free.
TEST_F(FileTailerTest, AFileNotOpenedYetAndRenamedAwayStillGoesOnFromItsCheckpoint) {
  append_lines("a.log", "a-", 0, 50);
  append_lines("b.log", "b-", 0, 50);
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(options(), first);
  append_lines("b.log", "b-", 50, 60);
  TailOptions late = options();
  late.max_open_files = 1;
  late.close_idle = 2s;  // after rotate_wait (1 s)
  FileTailer again(late, Input{"files"}, saved);
  Collected out;
  Clock::time_point now = settle(again, out, Clock::now());
  fs::rename(path("b.log"), path("b.log.1"));  // out of *.log, before it was opened
  now = settle(again, out, now + 3s);          // a.log closed as idle: a descriptor is free
  (void)settle(again, out, now + 3s);
  EXPECT_TRUE(out.each_once("b-", 50, 60)) << "what was written to b.log after the checkpoint";
  EXPECT_EQ(out.lines.count("b-0"), 0U);
}

// Closed while idle, then written to and renamed out of the globs before a look saw it grow (as
// logrotate renames a quiet log, and its program writes on until it reopens): found again by its
// inode in its directory, and read to its end.
TEST_F(FileTailerTest, AFileClosedAsIdleAndRenamedAwayIsReadToItsEnd) {
  append_lines("a.log", "a-", 0, 10);
  TailOptions tail = options();
  tail.close_idle = 1s;
  FileTailer tailer(tail, Input{"files"}, {});
  Collected out;
  Clock::time_point now = read_until_closed_idle(tailer, out);
  append_lines("a.log", "a-", 10, 20);
  fs::rename(path("a.log"), path("a.log.1"));
  now = settle(tailer, out, now);
  (void)settle(tailer, out, now + 2s);
  EXPECT_TRUE(out.each_once("a-", 0, 20));
}

// Closed while idle, then written to: a watcher's word that its path was written to opens it
// again at once, and the next poll reads on, long before the next look.
TEST_F(FileTailerTest, AFileClosedAsIdleIsReadOnOnceItIsWrittenTo) {
  FileTailer tailer(with_idle_a_log(), Input{"files"}, {});
  Collected out;
  const Clock::time_point now = read_until_closed_idle(tailer, out);
  ASSERT_TRUE(tailer.closed_idle());
  EXPECT_EQ(tailer.stats().open_files.load(), 0U);
  append_lines("a.log", "a-", 10, 20);
  tailer.modified(path("b.log"));  // not a file it has: nothing
  EXPECT_TRUE(tailer.closed_idle());
  tailer.modified(path("a.log"));
  EXPECT_FALSE(tailer.closed_idle());
  (void)settle(tailer, out, now);
  EXPECT_TRUE(out.each_once("a-", 0, 20));
  EXPECT_EQ(tailer.stats().open_files.load(), 1U);
}

// Closed while idle, and another file put at its path since: modified() leaves both to a look.
TEST_F(FileTailerTest, AWriteToAnotherFileAtAnIdleFilesPathIsLeftToALook) {
  FileTailer tailer(with_idle_a_log(), Input{"files"}, {});
  Collected out;
  const Clock::time_point now = read_until_closed_idle(tailer, out);
  ASSERT_TRUE(tailer.closed_idle());
  fs::rename(path("a.log"), path("a.log.1"));
  append_lines("a.log", "new-", 0, 5);
  tailer.modified(path("a.log"));
  EXPECT_EQ(tailer.stats().open_files.load(), 0U) << "the new file was taken for the old one";
  (void)settle(tailer, out, now);  // the look modified() asked for
  EXPECT_TRUE(out.each_once("a-", 0, 10));
  EXPECT_TRUE(out.each_once("new-", 0, 5));
}

// Closed as idle, then truncated and written again to exactly the size it had, with no watcher
// to say so: a look tells by its change time that it changed, opens it again, and the new lines
// are read from the start.
TEST_F(FileTailerTest, AFileClosedAsIdleAndRewrittenToTheSameSizeIsReadAgain) {
  append("app.log", header);
  append_lines("app.log", "old-", 0, 10);
  TailOptions tail = options();
  tail.close_idle = 1s;
  FileTailer tailer(tail, Input{"files"}, {});
  Collected out;
  Clock::time_point now = read_until_closed_idle(tailer, out);
  ASSERT_TRUE(tailer.closed_idle());
  std::this_thread::sleep_for(20ms);  // a change time the file system tells apart
  { std::ofstream(path("app.log"), std::ios::trunc | std::ios::binary) << header; }
  append_lines("app.log", "new-", 0, 10);
  now = settle(tailer, out, now + 2s);  // the next look
  (void)settle(tailer, out, now + 2s);
  expect_each_once(out, {{"old-", 10}, {"new-", 10}});
  EXPECT_EQ(tailer.stats().truncations.load(), 1U);
}

// Closed as idle and renamed away while another file holds the last descriptor max_open_files
// allows: it waits, remembered, until a descriptor is free, and is then read to its end.
TEST_F(FileTailerTest, AnIdleFileRenamedAwayAtTheDescriptorCapIsReadOnceOneIsFree) {
  append_lines("a.log", "a-", 0, 10);
  append_lines("b.log", "b-", 0, 10);
  TailOptions tail = options();
  tail.close_idle = 1s;
  tail.max_open_files = 1;
  FileTailer tailer(tail, Input{"files"}, {});
  Collected out;
  std::uint64_t most_open = 0;
  const auto run = [&](Clock::time_point now, int polls) {
    for (int i = 0; i < polls; ++i) {
      (void)tailer.poll(out.emit(), now += 10ms);
      most_open = std::max(most_open, tailer.stats().open_files.load());
    }
    return now;
  };
  Clock::time_point now = run(Clock::now(), 5);  // a.log read; b.log waits for a descriptor
  now = run(now + 2s, 5);                        // a.log closed as idle; b.log opened and read
  ASSERT_TRUE(out.each_once("b-", 0, 10));
  append_lines("a.log", "a-", 10, 20);
  fs::rename(path("a.log"), path("a.log.1"));
  for (int i = 10; i < 30; ++i) {  // b.log busy: it keeps its descriptor
    append_lines("b.log", "b-", i, i + 1);
    now = run(now, 2);
  }
  EXPECT_EQ(out.lines.count("a-10"), 0U);
  now = run(now + 2s, 5);  // b.log idle: closed, and a.log.1 opened
  (void)run(now, 5);
  EXPECT_TRUE(out.each_once("a-", 0, 20));
  EXPECT_TRUE(out.each_once("b-", 0, 30));
  EXPECT_LE(most_open, 1U);
}

// A rotated file is read to its last byte before it is let go, and the new file at its path is
// read from its beginning.
TEST_F(FileTailerTest, ARotatedFileIsReadToItsEndBeforeItIsDropped) {
  append_lines("app.log", "old-", 0, 100);
  FileTailer tailer(options({path("app.log")}), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  fs::rename(path("app.log"), path("app.log.1"));
  append_lines("app.log.1", "old-", 100, 120);  // the writer still had it open
  append_lines("app.log", "new-", 0, 50);
  now = settle(tailer, out, now);
  EXPECT_TRUE(out.each_once("old-", 0, 120));
  EXPECT_TRUE(out.each_once("new-", 0, 50));
  EXPECT_EQ(tailer.stats().rotations.load(), 1U);
  out.release();
  // Idle for rotate_wait and read to its end: released, and no longer in the checkpoint.
  now = settle(tailer, out, now + 2s);
  EXPECT_EQ(tailer.stats().files.load(), 1U);
  EXPECT_EQ(tailer.checkpoint().size(), 1U);
}

// The same for files with a header (W3C, CSV): the new file at the path begins with the same line
// as the one renamed, whether the globs take that one's new name or not, and is still read at
// once, not after rotate_wait as a copy of it would be.
TEST_F(FileTailerTest, ANewFileWithTheSameHeaderAtARenamedPathIsReadAtOnce) {
  for (const std::string& glob : {path("app.log"), path("app.log*")}) {
    SCOPED_TRACE(glob);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    append_with_header("app.log", "old-", 0, 100);
    FileTailer tailer(options({glob}), Input{"files"}, {});
    Collected out;
    const Clock::time_point now = settle(tailer, out, Clock::now());
    fs::rename(path("app.log"), path("app.log.1"));
    append_with_header("app.log", "new-", 0, 50);
    (void)settle(tailer, out, now);  // for much less than rotate_wait
    EXPECT_TRUE(out.each_once("old-", 0, 100));
    EXPECT_TRUE(out.each_once("new-", 0, 50));
  }
}

// A file that a look misses (renamed away and back, as a rotation that runs during the look can
// make it seem) is remembered for a while: found again, it is not read again.
TEST_F(FileTailerTest, AFileMissedByOneLookIsNotReadAgain) {
  append_lines("app.log.2", "old-", 0, 50);
  FileTailer tailer(options({path("app.log*")}), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  out.release();
  fs::rename(path("app.log.2"), path("elsewhere"));
  (void)tailer.poll(out.emit(), now += 1100ms);  // missed, read to its end, idle: closed
  fs::rename(path("elsewhere"), path("app.log.3"));
  (void)settle(tailer, out, now += 100ms);
  for (const auto& [line, count] : out.lines)
    EXPECT_EQ(count, 1) << line;
  EXPECT_TRUE(out.each_once("old-", 0, 50));
}

// copytruncate with the copy under the glob: nothing read twice, and the lines written just
// before the truncation are read from the copy.
TEST_F(FileTailerTest, CopyTruncateWithTheCopyUnderTheGlobLosesAndRepeatsNothing) {
  append_lines("app.log", "old-", 0, 100);
  FileTailer tailer(options({path("app.log*")}), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  append_lines("app.log", "old-", 100, 130);  // not read yet when the copy is made
  fs::copy_file(path("app.log"), path("app.log.1"));
  now = settle(tailer, out, now, 10ms, 2);  // the copy is seen before the truncation
  fs::resize_file(path("app.log"), 0);
  append_lines("app.log", "new-", 0, 40);
  now = settle(tailer, out, now);
  EXPECT_TRUE(out.each_once("old-", 0, 130));
  EXPECT_TRUE(out.each_once("new-", 0, 40));
  EXPECT_EQ(tailer.stats().truncations.load(), 1U);
  EXPECT_EQ(tailer.stats().copies.load(), 1U);
  EXPECT_EQ(tailer.stats().lost_truncated_bytes.load(), 0U);
}

// A checkpoint saved while the first line had no newline yet (the partial line's timeout passed,
// so the file was known by what it had): after the restart the file goes on, and its copy at a
// copytruncate is still known by the whole first line, not read again.
TEST_F(FileTailerTest, AFileSavedWithAPartialFirstLineKnowsItsCopyAfterARestart) {
  append("app.log", "first line, part");
  const TailOptions tail = options({path("app.log*")});
  std::vector<CheckpointEntry> saved;
  {
    FileTailer tailer(tail, Input{"files"}, {});
    Collected first;
    (void)settle(tailer, first, settle(tailer, first, Clock::now()) + 2s);
    first.release();
    saved = tailer.checkpoint();
  }
  append("app.log", " two\n");
  append_lines("app.log", "old-", 0, 100);
  FileTailer again(tail, Input{"files"}, saved);
  Collected out;
  Clock::time_point now = settle(again, out, Clock::now());
  ASSERT_TRUE(out.each_once("old-", 0, 100));
  fs::copy_file(path("app.log"), path("app.log.1"));
  now = settle(again, out, now, 10ms, 2);
  fs::resize_file(path("app.log"), 0);
  append_lines("app.log", "new-", 0, 10);
  (void)settle(again, out, now);
  EXPECT_TRUE(out.each_once("old-", 0, 100));
  EXPECT_TRUE(out.each_once("new-", 0, 10));
  EXPECT_EQ(again.stats().copies.load(), 1U);
}

// copytruncate with lines written between the copy and the truncation, read from the file before
// it was truncated: the copy is shorter than what was read, and holds nothing left to read. It is
// not read again from its start, and its checkpoint is not past its end (which would have made a
// restart take it for a file truncated meanwhile, and read it all again).
TEST_F(FileTailerTest, ACopyShorterThanWhatItsFileHadReadIsNotReadAgain) {
  append_lines("app.log", "old-", 0, 100);
  const TailOptions tail = options({path("app.log*")});
  FileTailer tailer(tail, Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  fs::copy_file(path("app.log"), path("app.log.1"));
  append_lines("app.log", "old-", 100, 110);  // after the copy: only in app.log
  now = settle(tailer, out, now, 10ms, 2);    // read, and the copy seen
  fs::resize_file(path("app.log"), 0);
  append_lines("app.log", "new-", 0, 40);
  now = settle(tailer, out, now);
  EXPECT_TRUE(out.each_once("old-", 0, 110));
  EXPECT_TRUE(out.each_once("new-", 0, 40));
  EXPECT_EQ(tailer.stats().truncations.load(), 1U);
  out.release();
  const std::vector<CheckpointEntry> saved = tailer.checkpoint();
  EXPECT_EQ(offset_of(saved, path("app.log.1")), fs::file_size(path("app.log.1")));
  FileTailer again(tail, Input{"files"}, saved);
  Collected after;
  (void)settle(again, after, Clock::now());
  EXPECT_EQ(after.lines.size(), 0U) << "read again after a clean stop";
}

// copytruncate while the service was down, and the restart's first look finds the copy still
// being written: shorter than the offset its file had reached, it is not taken for a file
// truncated meanwhile (and read again from its start), but looked at again until it is whole.
TEST_F(FileTailerTest, ACopyStillBeingWrittenAtARestartIsNotReadAgain) {
  append_lines("app.log", "old-", 0, 100);
  const TailOptions tail = options({path("app.log*")});
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(tail, first);
  ASSERT_TRUE(first.each_once("old-", 0, 100));
  std::string copied;
  {
    std::ifstream in(path("app.log"), std::ios::binary);
    copied.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::size_t half = copied.size() / 2;
  append("app.log.1", copied.substr(0, half));
  fs::resize_file(path("app.log"), 0);
  append_lines("app.log", "new-", 0, 10);
  FileTailer again(tail, Input{"files"}, saved);
  Collected out;
  Clock::time_point now = settle(again, out, Clock::now(), 10ms, 3);
  append("app.log.1", copied.substr(half));
  now = settle(again, out, now);
  (void)settle(again, out, now + 2s);
  expect_each_once(out, {{"new-", 10}});
  EXPECT_EQ(out.lines.size(), 10U) << "old lines read again";
}

// The same when the truncation is seen before the copy (the look that finds the copy comes
// later): the copy, shorter than what was read, is known by what the truncated file began with,
// and goes on from it.
TEST_F(FileTailerTest, ACopyShorterThanWhatWasReadIsKnownAfterTheTruncation) {
  append_lines("app.log", "old-", 0, 100);
  FileTailer tailer(options({path("app.log*")}), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  std::string copied;
  {
    std::ifstream in(path("app.log"), std::ios::binary);
    copied.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  append_lines("app.log", "old-", 100, 110);  // after the copy: only in app.log
  now = settle(tailer, out, now);
  fs::resize_file(path("app.log"), 0);
  append_lines("app.log", "new-", 0, 40);
  now = settle(tailer, out, now);
  append("app.log.1", copied);
  now = settle(tailer, out, now);
  (void)settle(tailer, out, now + 2s);
  expect_each_once(out, {{"old-", 110}, {"new-", 40}});
  EXPECT_EQ(out.lines.size(), 150U);
  EXPECT_EQ(tailer.stats().lost_truncated_bytes.load(), 0U);
}

// copytruncate where the file was written again to the very size it had before the tailer looked:
// its size says nothing, but its copy, waiting for it to be truncated, makes the tailer look at
// its first bytes. Nothing is read twice.
TEST_F(FileTailerTest, ATruncationHiddenBySizeIsFoundThroughTheCopy) {
  append_lines("app.log", "old-", 0, 100);
  FileTailer tailer(options({path("app.log*")}), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  fs::copy_file(path("app.log"), path("app.log.1"));
  now = settle(tailer, out, now, 10ms, 2);  // the copy waits for its source's truncation
  const auto size = fs::file_size(path("app.log"));
  std::string fresh;
  for (int i = 0; fresh.size() < size; ++i)
    fresh += "new-" + std::to_string(i) + "\n";
  fresh.resize(size - 1);
  fresh += "\n";  // exactly the old size, ending in a newline
  { std::ofstream(path("app.log"), std::ios::trunc | std::ios::binary) << fresh; }
  now = settle(tailer, out, now);
  now = settle(tailer, out, now + 2s);  // the copy's wait runs out
  EXPECT_TRUE(out.each_once("old-", 0, 100));
  EXPECT_EQ(out.lines.count("new-0"), 1U);
  EXPECT_EQ(tailer.stats().truncations.load(), 1U);
  for (const auto& [line, count] : out.lines)
    EXPECT_EQ(count, 1) << line;
}

// A file with a header, truncated and written past the size it had before the next read: its
// first line is the same, but what follows is not, and it is read again from its start.
TEST_F(FileTailerTest, ATruncationPastTheOldSizeIsFoundBehindTheSameHeader) {
  expect_rewrite_found(header, 10, 100);
}

// Truncated and written again to exactly the size it had: the size says nothing, the change time
// does, and the new lines are read from the start.
TEST_F(FileTailerTest, ATruncationBackToTheSameSizeIsFound) {
  // As long as the old lines; after a change time the file system tells apart.
  expect_rewrite_found(header, 10, 10, 20ms);
}

// The same with a header longer than half of what was read (here 70 of 124 bytes): the bytes
// compared must reach past the header, or the new lines at the start would be skipped.
TEST_F(FileTailerTest, ATruncationBehindALongHeaderIsFoundInAShortFile) {
  const std::string long_header =
      "#Fields: date time c-ip cs-method cs-uri-stem sc-status time-taken xy\n";
  ASSERT_EQ(long_header.size(), 70U);
  expect_rewrite_found(long_header, 9, 100);  // 54 bytes of lines: 124 in all
}

void FileTailerTest::expect_rewrite_found(const std::string& first, int old, int fresh,
                                          std::chrono::milliseconds pause) const {
  append("app.log", first);
  append_lines("app.log", "old-", 0, old);
  FileTailer tailer(options(), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  std::this_thread::sleep_for(pause);
  { std::ofstream(path("app.log"), std::ios::trunc | std::ios::binary) << first; }
  append_lines("app.log", "new-", 0, fresh);
  now = settle(tailer, out, now);
  (void)settle(tailer, out, now + 2s);
  expect_each_once(out, {{"old-", old}, {"new-", fresh}});
  EXPECT_EQ(tailer.stats().truncations.load(), 1U);
}

// Stopped within rotate_wait of a truncation, the tailer saves what it still waits a copy for
// beside the file at the truncated file's inode, which begins as before (its header): after the
// restart, that file goes on from its own offset, not from the one it had before the truncation.
TEST_F(FileTailerTest, AFileTruncatedJustBeforeAStopGoesOnFromItsNewOffset) {
  append_with_header("app.log", "old-", 0, 100);
  std::vector<CheckpointEntry> saved;
  {
    FileTailer tailer(options(), Input{"files"}, {});
    Collected out;
    const Clock::time_point now = settle(tailer, out, Clock::now());
    { std::ofstream(path("app.log"), std::ios::trunc | std::ios::binary) << header; }
    append_lines("app.log", "new-", 0, 5);
    (void)settle(tailer, out, now);  // within rotate_wait: the old file is still parked
    expect_each_once(out, {{"old-", 100}, {"new-", 5}});
    out.release();
    saved = tailer.checkpoint();
  }
  append_lines("app.log", "new-", 5, 10);
  FileTailer again(options(), Input{"files"}, saved);
  Collected out;
  (void)settle(again, out, settle(again, out, Clock::now()) + 2s);
  EXPECT_TRUE(out.each_once("new-", 5, 10));
  EXPECT_EQ(out.lines.count("new-0"), 0U) << "read again from its start";
  EXPECT_EQ(out.lines.count("old-0"), 0U);
}

// A file with a header truncated, and a new file that holds nothing but the header for longer
// than rotate_wait: it is taken for the truncated file's copy (it begins as that one did, as far
// as can be told), though shorter than what was read of that one. What was read there does not
// carry over to it: its lines come once, at their own offsets, and a restart from the checkpoint
// goes on where they end.
TEST_F(FileTailerTest, AHeaderOnlyFileTakenForACopyGoesOnAtItsOwnOffsets) {
  append_with_header("app.log", "old-", 0, 100);
  append("app.log", "old-cut-off");  // its end never comes: dead-lettered as cut off
  std::vector<CheckpointEntry> saved;
  Collected out;
  {
    FileTailer tailer(options(), Input{"files"}, {});
    Clock::time_point now = settle(tailer, out, Clock::now());
    out.release();
    fs::resize_file(path("app.log"), 0);
    now = settle(tailer, out, now);
    append("b.log", header);
    now = settle(tailer, out, now);
    now = settle(tailer, out, now + 2s);  // past rotate_wait: taken for the copy
    append_lines("b.log", "new-", 0, 10);
    now = settle(tailer, out, now);
    expect_each_once(out, {{"old-", 100}, {"new-", 10}});
    ASSERT_FALSE(out.held.empty());
    EXPECT_EQ(out.held.back().offset, header.size());
    EXPECT_EQ(tailer.stats().copies.load(), 1U);
    EXPECT_EQ(tailer.stats().truncations.load(), 1U);
    EXPECT_EQ(out.overlong, 1U);
    EXPECT_EQ(out.lines.count("old-cut-off"), 0U);
    out.release();
    saved = tailer.checkpoint();
    EXPECT_EQ(offset_of(saved, path("b.log")), fs::file_size(path("b.log")));
  }
  append_lines("b.log", "new-", 10, 20);
  FileTailer again(options(), Input{"files"}, saved);
  Collected after;
  (void)settle(again, after, Clock::now());
  EXPECT_TRUE(after.each_once("new-", 10, 20));
  EXPECT_EQ(after.lines.count("new-9"), 0U);
  EXPECT_EQ(after.lines.size(), 10U);
}

// copytruncate whose copy the glob leaves out: the file is read again from its start, and the
// bytes that were there unread are counted as lost, never silently.
TEST_F(FileTailerTest, CopyTruncateWithoutTheCopyCountsWhatItLost) {
  append_lines("app.log", "old-", 0, 100);
  FileTailer tailer(options({path("app.log")}), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  append_lines("app.log", "old-", 100, 110);
  (void)tailer.poll(out.emit(), now += 10ms);  // sees the size grow, reads it
  fs::resize_file(path("app.log"), 0);
  append_lines("app.log", "new-", 0, 20);
  now = settle(tailer, out, now);
  EXPECT_TRUE(out.each_once("old-", 0, 110));
  EXPECT_TRUE(out.each_once("new-", 0, 20));
  EXPECT_EQ(tailer.stats().truncations.load(), 1U);
  now = settle(tailer, out, now + 2s);
  EXPECT_EQ(tailer.stats().lost_truncated_bytes.load(), 0U);  // it had read everything
}

// The same with a line unfinished when the file was truncated: the part read of it is lost too,
// and counted, once no copy appeared within rotate_wait.
TEST_F(FileTailerTest, CopyTruncateCountsTheUnfinishedLineItLost) {
  append_lines("app.log", "old-", 0, 10);
  append("app.log", "unfinished");
  FileTailer tailer(options({path("app.log")}), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  fs::resize_file(path("app.log"), 0);
  append_lines("app.log", "new-", 0, 20);
  now = settle(tailer, out, now);
  (void)settle(tailer, out, now + 2s);
  EXPECT_TRUE(out.each_once("old-", 0, 10));
  EXPECT_TRUE(out.each_once("new-", 0, 20));
  EXPECT_EQ(out.lines.count("unfinished"), 0U);
  EXPECT_EQ(tailer.stats().lost_truncated_bytes.load(), std::string("unfinished").size());
}

// The same, when the truncation came before the tailer could read what it had seen: those bytes,
// with the part read of the line they end, are counted as lost once no copy appeared within
// rotate_wait.
TEST_F(FileTailerTest, CopyTruncateBeforeTheBytesWereReadCountsThem) {
  TailOptions slow = options({path("app.log")});
  slow.read_bytes = 64;  // four reads of 64 bytes a poll
  append_lines("app.log", "old-", 0, 10);
  FileTailer tailer(slow, Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  append("app.log", std::string(999, 'y') + "\n");
  (void)tailer.poll(out.emit(), now += 10ms);  // reads 256 of the 1000 bytes it sees
  fs::resize_file(path("app.log"), 0);
  append_lines("app.log", "new-", 0, 5);
  now = settle(tailer, out, now);
  EXPECT_TRUE(out.each_once("new-", 0, 5));
  out.release();
  (void)settle(tailer, out, now + 2s);
  // The whole line: the 256 bytes read of it were never handed out either.
  EXPECT_EQ(tailer.stats().lost_truncated_bytes.load(), 1000U);
}

// A long line that is skipped leaves an exact offset: the lines after it come once, and a
// restart from the checkpoint repeats none of them.
TEST_F(FileTailerTest, ASkippedLongLineLeavesAnExactOffset) {
  TailOptions limited = options();
  limited.max_line_bytes = 100;
  limited.read_bytes = 64;  // the long line does not fit in one read
  append_lines("a.log", "a-", 0, 10);
  append("a.log", std::string(1000, 'x') + "\n");
  append_lines("a.log", "a-", 10, 20);
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(limited, first);
  EXPECT_TRUE(first.each_once("a-", 0, 20));
  EXPECT_EQ(first.overlong, 1U);
  EXPECT_EQ(offset_of(saved, path("a.log")), fs::file_size(path("a.log")));
  append_lines("a.log", "a-", 20, 25);
  FileTailer again(limited, Input{"files"}, saved);
  Collected out;
  (void)settle(again, out, Clock::now());
  EXPECT_TRUE(out.each_once("a-", 20, 25));
  EXPECT_EQ(out.lines.size(), 5U);
}

// A long last line without its newline is dead-lettered after the timeout, as a short one is
// handed out: it is not held for ever, and the offset after it is exact.
TEST_F(FileTailerTest, AnUnfinishedLongLineIsDeadLetteredAfterTheTimeout) {
  TailOptions limited = options();
  limited.max_line_bytes = 100;
  limited.read_bytes = 64;
  append_lines("a.log", "a-", 0, 10);
  append("a.log", std::string(1000, 'x'));  // no newline
  FileTailer tailer(limited, Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  EXPECT_TRUE(out.each_once("a-", 0, 10));
  EXPECT_EQ(out.overlong, 0U);  // it may still end
  now = settle(tailer, out, now + 2s);
  EXPECT_EQ(out.overlong, 1U);
  out.release();
  EXPECT_EQ(offset_of(tailer.checkpoint(), path("a.log")), fs::file_size(path("a.log")));
}

// The same line in a file renamed away: the file is not let go before the line is dead-lettered.
TEST_F(FileTailerTest, ARotatedFileIsNotLetGoWithAnUnfinishedLongLine) {
  TailOptions limited = options();
  limited.max_line_bytes = 100;
  limited.read_bytes = 64;
  append_lines("a.log", "a-", 0, 10);
  append("a.log", std::string(1000, 'x'));
  FileTailer tailer(limited, Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  fs::rename(path("a.log"), path("a.log.1"));  // out of the glob
  now = settle(tailer, out, now);
  for (int step = 0; step < 4; ++step)
    now = settle(tailer, out, now + 1s);  // past partial_line_timeout and rotate_wait
  EXPECT_TRUE(out.each_once("a-", 0, 10));
  EXPECT_EQ(out.overlong, 1U);
}

// A long line that one read holds whole is not cut out by the tailer: its chunks carry the limit,
// for the parse stage to reject it as it rejects those cut across reads.
TEST_F(FileTailerTest, ItsChunksCarryTheLineLimitForTheLinesAReadHoldsWhole) {
  TailOptions limited = options();
  limited.max_line_bytes = 100;
  append_lines("a.log", "a-", 0, 10);
  append("a.log", std::string(300, 'x') + "\n");
  FileTailer tailer(limited, Input{"files"}, {});
  std::size_t chunks = 0;
  const FileTailer::Emit check = [&](Chunk&& chunk) {
    ++chunks;
    EXPECT_EQ(chunk.input->max_line_length, 100U);
    return true;
  };
  for (int i = 0; i < 5; ++i)
    (void)tailer.poll(check);
  EXPECT_GT(chunks, 0U);
}

// A last line without its newline is held, not committed, and handed out after the timeout.
TEST_F(FileTailerTest, APartialLineIsHeldUntilItsNewlineOrTheTimeout) {
  append("a.log", "one\ntw");
  FileTailer tailer(options(), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  EXPECT_EQ(out.lines.size(), 1U);
  out.release();
  EXPECT_EQ(offset_of(tailer.checkpoint(), path("a.log")), 4U);  // not past the partial line
  append("a.log", "o\n");
  now = settle(tailer, out, now);
  EXPECT_EQ(out.lines.count("two"), 1U);
  append("a.log", "three");
  now = settle(tailer, out, now);
  EXPECT_EQ(out.lines.count("three"), 0U);
  now = settle(tailer, out, now + 2s);
  EXPECT_EQ(out.lines.count("three"), 1U);
  out.release();
  EXPECT_EQ(offset_of(tailer.checkpoint(), path("a.log")), fs::file_size(path("a.log")));
}

// A reused inode with other first bytes is a new file: read from its beginning, not from the
// offset saved for the file that had the inode before.
TEST_F(FileTailerTest, AReusedInodeWithOtherFirstBytesIsANewFile) {
  append_lines("a.log", "first-", 0, 100);
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(options(), first);
  // Rewritten in place: same inode, other content, shorter than the saved offset or not.
  { std::ofstream(path("a.log"), std::ios::trunc) << ""; }
  append_lines("a.log", "second-", 0, 500);
  FileTailer again(options(), Input{"files"}, saved);
  Collected out;
  (void)settle(again, out, Clock::now());
  EXPECT_TRUE(out.each_once("second-", 0, 500));
}

// A file shorter than the fingerprint, without a whole first line, is identified (and read) once
// its first line ends.
TEST_F(FileTailerTest, AShortFileIsReadOnceItHasAFirstLine) {
  append("a.log", "sho");
  FileTailer tailer(options(), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  EXPECT_TRUE(out.lines.empty());
  append("a.log", "rt\nnext\n");
  (void)settle(tailer, out, now);
  EXPECT_EQ(out.lines.count("short"), 1U);
  EXPECT_EQ(out.lines.count("next"), 1U);
}

// read_from: end skips what files found at the first look hold; a file that appears later is
// read from its beginning.
TEST_F(FileTailerTest, StartAtEndSkipsOnlyWhatWasThereAtTheFirstLook) {
  append_lines("a.log", "before-", 0, 10);
  FileTailer tailer(at_end_options({}), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  append_lines("a.log", "after-", 0, 10);
  append_lines("b.log", "later-", 0, 10);
  (void)settle(tailer, out, now);
  EXPECT_EQ(out.lines.count("before-0"), 0U);
  EXPECT_TRUE(out.each_once("after-", 0, 10));
  EXPECT_TRUE(out.each_once("later-", 0, 10));
}

// Empty at the first look (just created by a rotation), or with its first line unfinished, a
// file had no line for start_at_end to skip: every line written to it later is read.
TEST_F(FileTailerTest, StartAtEndReadsAFileThatWasTooShortToKnowAtTheFirstLook) {
  std::ofstream(path("a.log")).flush();
  append("b.log", "unfinish");
  FileTailer tailer(at_end_options({}), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  append_lines("a.log", "after-", 0, 10);
  append("b.log", "ed\n");
  (void)settle(tailer, out, now);
  EXPECT_TRUE(out.each_once("after-", 0, 10));
  EXPECT_EQ(out.lines.count("unfinished"), 1U);
}

// A file deleted while open is read to its end, then closed.
TEST_F(FileTailerTest, ADeletedFileIsReadToItsEndThenClosed) {
  append_lines("a.log", "a-", 0, 10);
  FileTailer tailer(options(), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  {
    std::ofstream writer(path("a.log"), std::ios::app);
    fs::remove(path("a.log"));
    writer << "a-10\na-11\n";
  }
  now = settle(tailer, out, now);
  EXPECT_TRUE(out.each_once("a-", 0, 12));
  out.release();
  (void)settle(tailer, out, now + 2s);
  EXPECT_EQ(tailer.stats().open_files.load(), 0U);
  EXPECT_TRUE(tailer.checkpoint().empty());
}

// `from`, gzipped into `to` (as logrotate's compress does, before it deletes `from`).
void gzip_file(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gzFile out = ::gzopen(to.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(::gzwrite(out, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ::gzclose(out);
}

// A rotated file that the globs take, compressed later (logrotate's delaycompress): the
// compressed file begins, inflated, as the one read already did, and goes on from where that one
// was read to. Not a line twice, while the service runs or across a restart.
TEST_F(FileTailerTest, TheCompressedFormOfAFileReadAlreadyIsNotReadAgain) {
  const TailOptions tail = options({path("app.log*")});
  append_lines("app.log.1", "one-", 0, 100);
  FileTailer tailer(tail, Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  gzip_file(path("app.log.1"), path("app.log.2.gz"));
  now = settle(tailer, out, now);
  fs::remove(path("app.log.1"));
  now = settle(tailer, out, now + 2s);
  EXPECT_TRUE(out.each_once("one-", 0, 100));
  EXPECT_EQ(out.lines.size(), 100U);
  // Across a restart: lines written to app.log.1 after the checkpoint, then compressed while the
  // service was down, come from the compressed file, and only those.
  append_lines("app.log.1", "two-", 0, 50);
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(tail, first);
  EXPECT_TRUE(first.each_once("one-", 0, 100));  // found with its compressed form: read once
  EXPECT_TRUE(first.each_once("two-", 0, 50));
  append_lines("app.log.1", "two-", 50, 60);
  gzip_file(path("app.log.1"), path("app.log.3.gz"));
  fs::remove(path("app.log.1"));
  FileTailer again(tail, Input{"files"}, saved);
  Collected after;
  (void)settle(again, after, Clock::now());
  EXPECT_TRUE(after.each_once("two-", 50, 60));
  EXPECT_EQ(after.lines.size(), 10U);
}

// A tailer reads `file` (nothing is delivered), then finds it gzipped into `compressed`: its
// checkpoint then (the service stops between gzip and the deletion of `file`).
std::vector<CheckpointEntry> checkpoint_after_gzip(const TailOptions& tail, const std::string& file,
                                                   const std::string& compressed) {
  FileTailer tailer(tail, Input{"files"}, {});
  Collected out;
  const Clock::time_point now = settle(tailer, out, Clock::now());
  gzip_file(file, compressed);
  (void)settle(tailer, out, now);
  return tailer.checkpoint();
}

// logrotate's last step once it compressed a file: `compressed` deleted. Then every line of it,
// "one-0" to "one-(LINES-1)", came exactly once, and nothing else.
void finish_rotation(FileTailer& tailer, Collected& out, Clock::time_point now,
                     const std::string& compressed, int lines) {
  fs::remove(compressed);
  now = settle(tailer, out, now);
  (void)settle(tailer, out, now + 2s);
  EXPECT_TRUE(out.each_once("one-", 0, lines));
  EXPECT_EQ(out.lines.size(), static_cast<std::size_t>(lines));
}

// The same when the rotated file was closed as idle before it was compressed (a day's log, quiet
// since its rotation, then logrotate's delaycompress): it is known by what it began with when it
// was closed.
TEST_F(FileTailerTest, TheCompressedFormOfAFileClosedAsIdleIsNotReadAgain) {
  TailOptions tail = options({path("app.log*")});
  tail.close_idle = 1s;
  append_lines("app.log.1", "one-", 0, 20'000);  // more than is compared: 64 KiB
  FileTailer tailer(tail, Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  out.release();
  now = settle(tailer, out, now + 2s);
  ASSERT_EQ(tailer.stats().open_files.load(), 0U);  // closed as idle
  gzip_file(path("app.log.1"), path("app.log.2.gz"));
  finish_rotation(tailer, out, now, path("app.log.1"), 20'000);
  EXPECT_EQ(tailer.stats().copies.load(), 1U);
}

// A file's compressed form found while gzip is still writing it, here as its first member only
// (a short one: 5 lines): it is looked at again until it holds as much as is compared, and the
// members after the first count.
TEST_F(FileTailerTest, ACompressedFormStillBeingWrittenIsNotReadAgain) {
  const TailOptions tail = options({path("app.log*")});
  append_lines("first.txt", "one-", 0, 5);
  append_lines("rest.txt", "one-", 5, 2'000);
  gzip_file(path("first.txt"), path("first.part"));
  gzip_file(path("rest.txt"), path("rest.part"));
  append_lines("app.log.1", "one-", 0, 2'000);
  FileTailer tailer(tail, Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  const auto bytes_of = [&](const std::string& name) {
    std::ifstream in(path(name), std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  append("app.log.2.gz", bytes_of("first.part"));
  now = settle(tailer, out, now);
  append("app.log.2.gz", bytes_of("rest.part"));
  finish_rotation(tailer, out, settle(tailer, out, now), path("app.log.1"), 2'000);
  EXPECT_EQ(tailer.stats().gzip_errors.load(), 0U);
}

// The service dies after a file's compressed form was found, before what it had read of the
// file itself was delivered: after the restart that file is gone, and the compressed form
// delivers those lines (at least once: none lost).
TEST_F(FileTailerTest, ACompressedFormResumesFromWhatItsSourceHadDelivered) {
  const TailOptions tail = options({path("app.log*")});
  append_lines("app.log.1", "one-", 0, 1'000);
  std::vector<CheckpointEntry> saved;
  {
    FileTailer tailer(tail, Input{"files"}, {});
    Collected out;
    Clock::time_point now = settle(tailer, out, Clock::now());  // read, held: not delivered
    gzip_file(path("app.log.1"), path("app.log.2.gz"));
    now = settle(tailer, out, now);
    fs::remove(path("app.log.1"));
    (void)settle(tailer, out, now);
    saved = tailer.checkpoint();  // the service dies here
  }
  FileTailer again(tail, Input{"files"}, saved);
  Collected after;
  (void)settle(again, after, Clock::now());
  EXPECT_TRUE(after.each_once("one-", 0, 1'000));
}

// The service stops after gzip wrote a file's compressed form and before the file was deleted.
// After the restart the file resumes from its own entry, and the compressed form goes on after
// it: not a line twice.
TEST_F(FileTailerTest, AStopBetweenGzipAndTheDeletionRepeatsNothing) {
  const TailOptions tail = options({path("app.log*")});
  append_lines("app.log.1", "one-", 0, 1'000);
  const std::vector<CheckpointEntry> saved =
      checkpoint_after_gzip(tail, path("app.log.1"), path("app.log.2.gz"));
  FileTailer again(tail, Input{"files"}, saved);
  Collected after;
  finish_rotation(again, after, settle(again, after, Clock::now()), path("app.log.1"), 1'000);
}

// copytruncate with compress: the copy is compressed and deleted before the tailer sees it, and
// the file itself truncated and written again. The compressed copy goes on from where the file
// was read to: the lines written just before the truncation come from it, and none twice. The
// line the file was read into the middle of comes whole.
TEST_F(FileTailerTest, ACopyCompressedAtOnceGoesOnFromTheTruncatedFile) {
  const TailOptions tail = options({path("app.log*")});
  append_lines("app.log", "one-", 0, 1'000);
  append("app.log", "one-10");  // one-1000, read in part
  FileTailer tailer(tail, Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  append("app.log", "00\n");
  append_lines("app.log", "one-", 1'001, 1'100);  // not read before the rotation
  fs::copy_file(path("app.log"), path("app.log.1"));
  fs::resize_file(path("app.log"), 0);
  gzip_file(path("app.log.1"), path("app.log.1.gz"));
  fs::remove(path("app.log.1"));
  append_lines("app.log", "two-", 0, 10);
  now = settle(tailer, out, now);
  (void)settle(tailer, out, now + 2s);
  EXPECT_TRUE(out.each_once("one-", 0, 1'100));
  EXPECT_TRUE(out.each_once("two-", 0, 10));
  EXPECT_EQ(out.lines.size(), 1'110U);
  EXPECT_EQ(tailer.stats().lost_truncated_bytes.load(), 0U);
}

Clock::time_point FileTailerTest::truncate_one_of_two_twins(FileTailer& tailer,
                                                            Collected& out) const {
  append_with_header("app.log", "app-", 0, 10);
  append_with_header("zz.log", "zz-", 0, 100);
  const Clock::time_point now = settle(tailer, out, Clock::now());
  fs::resize_file(path("app.log"), 0);
  append_with_header("app.log", "new-", 0, 2);
  return settle(tailer, out, now);
}

// Files that begin with the same header (W3C, CSV) are not copies of each other: one truncated
// soon after another appeared does not hand that one its offset.
TEST_F(FileTailerTest, AFileThatOnlySharesAHeaderIsNotTakenForACopy) {
  FileTailer tailer(options(), Input{"files"}, {});
  Collected out;
  (void)settle(tailer, out, truncate_one_of_two_twins(tailer, out) + 2s);
  expect_each_once(out, {{"zz-", 100}, {"app-", 10}, {"new-", 2}});
}

// Of two files taken for copies of one that is then truncated, the real copy goes on from it,
// and the one that held only its header is read from its start: whether it began otherwise by
// then (zz.log), or still holds only the header, found before the real copy (aa.log).
TEST_F(FileTailerTest, OfTwoFilesTakenForCopiesTheRealOneGoesOn) {
  for (const std::string name : {"zz.log", "aa.log"}) {
    SCOPED_TRACE(name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const bool grows_first = name == "zz.log";
    append_with_header("app.log", "app-", 0, 10);
    FileTailer tailer(options({path("*.log"), path("app.log.1")}), Input{"files"}, {});
    Collected out;
    Clock::time_point now = settle(tailer, out, Clock::now());
    fs::copy_file(path("app.log"), path("app.log.1"));
    append(name, header);
    now = settle(tailer, out, now, 10ms, 2);  // both taken for copies of app.log
    if (grows_first) append_lines(name, "other-", 0, 10);
    fs::resize_file(path("app.log"), 0);
    append_lines("app.log", "new-", 0, 2);
    now = settle(tailer, out, now);
    if (!grows_first) append_lines(name, "other-", 0, 10);
    (void)settle(tailer, out, now + 2s);
    expect_each_once(out, {{"app-", 10}, {"other-", 10}, {"new-", 2}});
    EXPECT_EQ(out.lines[header.substr(0, header.size() - 1)], 2);  // app.log's and the other's
  }
}

// Nor is a compressed file whose content is that of one of them the compressed form of another
// that was truncated: it goes on from the one it holds.
TEST_F(FileTailerTest, ACompressedFormIsKnownByContentBeforeATruncatedFileWithItsHeader) {
  FileTailer tailer(options({path("*.log"), path("*.gz")}), Input{"files"}, {});
  Collected out;
  Clock::time_point now = truncate_one_of_two_twins(tailer, out);
  gzip_file(path("zz.log"), path("zz.log.1.gz"));
  fs::remove(path("zz.log"));
  now = settle(tailer, out, now);
  (void)settle(tailer, out, now + 2s);
  expect_each_once(out, {{"zz-", 100}, {"app-", 10}, {"new-", 2}});
}

// A file that appears soon after another with the same header was truncated (app.log, written
// again without it) is not that one's copy either, nor its compressed copy: each is read from
// its start. Nor is one that holds no more than the header when it is found, or only a little
// past it: it is told apart once it holds more.
TEST_F(FileTailerTest, ANewFileWithTheHeaderOfATruncatedOneIsReadWhole) {
  for (const std::string& first :
       {std::string("zz-0\nzz-1\n"), std::string(), std::string("zz-0\n")}) {
    SCOPED_TRACE(first.size());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    append_with_header("app.log", "app-", 0, 10);
    FileTailer tailer(options({path("*.log"), path("*.gz")}), Input{"files"}, {});
    Collected out;
    Clock::time_point now = settle(tailer, out, Clock::now());
    fs::resize_file(path("app.log"), 0);
    append_lines("app.log", "new-", 0, 2);
    now = settle(tailer, out, now);
    append("zz.log", header + first);
    append_with_header("archive.txt", "archived-", 0, 100);
    gzip_file(path("archive.txt"), path("archive.gz"));
    now = settle(tailer, out, now);
    append_lines("zz.log", "zz-", static_cast<int>(std::count(first.begin(), first.end(), '\n')),
                 100);
    now = settle(tailer, out, now);
    (void)settle(tailer, out, now + 2s);
    expect_each_once(out, {{"zz-", 100}, {"archived-", 100}, {"app-", 10}, {"new-", 2}});
    EXPECT_EQ(out.lines[header.substr(0, header.size() - 1)], 3);  // app.log's, zz.log's, the gz's
  }
}

// A file that held no more than the header of another when it was found is taken for a copy of
// that one, until that one is truncated: then, if it began otherwise, it is read from its start.
TEST_F(FileTailerTest, AFileTakenForACopyByItsHeaderIsReadWholeWhenItIsNone) {
  append_with_header("app.log", "app-", 0, 10);
  append("zz.log", header);
  FileTailer tailer(options(), Input{"files"}, {});
  Collected out;
  Clock::time_point now = settle(tailer, out, Clock::now());
  append_lines("zz.log", "zz-", 0, 100);
  fs::resize_file(path("app.log"), 0);
  append_lines("app.log", "new-", 0, 2);
  now = settle(tailer, out, now);
  (void)settle(tailer, out, now + 2s);
  expect_each_once(out, {{"zz-", 100}, {"app-", 10}, {"new-", 2}});
  EXPECT_EQ(out.lines[header.substr(0, header.size() - 1)], 2);
}

// A compressed form found after a restart, while its source, renamed out of the globs while the
// service was down, is read on from its checkpoint: it goes on after that one.
TEST_F(FileTailerTest, ACompressedFormGoesOnAfterItsSourceRenamedAwayWhileDown) {
  const TailOptions tail = options({path("app.log"), path("*.gz")});
  append_lines("app.log", "one-", 0, 1'000);
  const std::vector<CheckpointEntry> saved =
      checkpoint_after_gzip(tail, path("app.log"), path("app.log.1.gz"));
  fs::rename(path("app.log"), path("app.log.old"));
  FileTailer again(tail, Input{"files"}, saved);
  Collected after;
  finish_rotation(again, after, settle(again, after, Clock::now()), path("app.log.old"), 1'000);
}

// A compressed file found at the first look is skipped whole by start_at_end (its end is where it
// ends inflated), also after a restart; one that appears later is read whole.
TEST_F(FileTailerTest, StartAtEndSkipsACompressedFileWhole) {
  append_lines("old.txt", "old-", 0, 1'000);
  gzip_file(path("old.txt"), path("old.gz"));
  const TailOptions at_end = at_end_options({path("*.gz")});
  std::vector<CheckpointEntry> saved;
  {
    FileTailer tailer(at_end, Input{"files"}, {});
    Collected out;
    const Clock::time_point now = settle(tailer, out, Clock::now());
    append_lines("new.txt", "new-", 0, 10);
    gzip_file(path("new.txt"), path("new.gz"));
    (void)settle(tailer, out, now);
    EXPECT_TRUE(out.each_once("new-", 0, 10));
    EXPECT_EQ(out.lines.size(), 10U);
    out.release();
    saved = tailer.checkpoint();
  }
  FileTailer again(at_end, Input{"files"}, saved);
  Collected after;
  (void)settle(again, after, Clock::now());
  EXPECT_TRUE(after.lines.empty());
}

// A compressed file skipped whole by start_at_end, then deleted while the service was down: a new
// one found after the restart that begins with the same header does not take its entry, and is
// read whole.
TEST_F(FileTailerTest, ACompressedFileWithTheHeaderOfOneSkippedIsReadWhole) {
  append_with_header("old.txt", "old-", 0, 100);
  gzip_file(path("old.txt"), path("old.gz"));
  const TailOptions at_end = at_end_options({path("*.gz")});
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(at_end, first);
  ASSERT_TRUE(first.lines.empty());
  fs::remove(path("old.gz"));
  FileTailer again(at_end, Input{"files"}, saved);
  Collected after;
  const Clock::time_point now = settle(again, after, Clock::now());
  append_with_header("new.txt", "new-", 0, 100);
  gzip_file(path("new.txt"), path("new.gz"));
  (void)settle(again, after, now);
  EXPECT_TRUE(after.each_once("new-", 0, 100));
}

// The entry of `at` in `saved`, of a file deleted while the service was down, as if the file
// system had given its inode to `holding` (made since; outside the globs, or under them).
void give_inode_of_entry(std::vector<CheckpointEntry>& saved, const std::string& at,
                         const std::string& holding) {
  const auto entry = std::find_if(saved.begin(), saved.end(),
                                  [&](const CheckpointEntry& e) { return e.path == at; });
  ASSERT_NE(entry, saved.end()) << at;
  struct stat st {};
  ASSERT_EQ(::stat(holding.c_str(), &st), 0);
  entry->device = st.st_dev;
  entry->inode = st.st_ino;
}

// A file system hands a freed inode out again: logrotate deletes the oldest .gz and compresses
// the next into a file that may get its inode. old.gz, holding `old_text`, is skipped whole by a
// start_at_end look, then deleted while the service is down; new.gz, which begins with the
// header, gets its inode, and comes under the globs after the restart's first look (until then
// it is found by its inode in old.gz's directory, as a file renamed away would be). What is read
// of new.gz after the restart.
Collected FileTailerTest::read_at_the_inode_of_one_skipped(const std::string& old_text) const {
  append("old.txt", old_text);
  gzip_file(path("old.txt"), path("old.gz"));
  const TailOptions at_end = at_end_options({path("*.gz")});
  std::vector<CheckpointEntry> saved;
  {
    FileTailer tailer(at_end, Input{"files"}, {});
    Collected first;
    // Past partial_line_timeout: an empty file is known only then.
    (void)settle(tailer, first, settle(tailer, first, Clock::now()) + 2s);
    EXPECT_TRUE(first.lines.empty());
    saved = tailer.checkpoint();
  }
  fs::remove(path("old.gz"));
  append_with_header("new.txt", "new-", 0, 100);
  gzip_file(path("new.txt"), path("new.hold"));
  give_inode_of_entry(saved, path("old.gz"), path("new.hold"));
  FileTailer again(at_end, Input{"files"}, saved);
  Collected after;
  const Clock::time_point now = settle(again, after, Clock::now());
  fs::rename(path("new.hold"), path("new.gz"));
  (void)settle(again, after, now);
  return after;
}

// Files that begin with the same header are still not the same file: the entry of one skipped
// whole does not skip the other.
TEST_F(FileTailerTest, ACompressedFileAtTheInodeOfOneSkippedIsReadWhole) {
  std::string old_text = header;
  for (int i = 0; i < 100; ++i)
    old_text += "old-" + std::to_string(i) + "\n";
  const Collected after = read_at_the_inode_of_one_skipped(old_text);
  EXPECT_TRUE(after.each_once("new-", 0, 100));
  EXPECT_EQ(after.lines.size(), 101U);  // and its header
}

// Nor does the entry of one that inflated to nothing (a rotated empty log): it covers no byte, and
// holds offset 0 whatever start_at_end says.
TEST_F(FileTailerTest, ACompressedFileAtTheInodeOfAnEmptyOneIsReadWhole) {
  const Collected after = read_at_the_inode_of_one_skipped("");
  EXPECT_TRUE(after.each_once("new-", 0, 100));
  EXPECT_EQ(after.lines.size(), 101U);
}

std::vector<CheckpointEntry> FileTailerTest::checkpoint_with_old_gz(const TailOptions& tail,
                                                                    Collected& first) const {
  append_with_header("old.txt", "old-", 0, 100);
  gzip_file(path("old.txt"), path("old.gz"));
  fs::remove(path("old.txt"));
  std::vector<CheckpointEntry> saved = checkpoint_after_reading(tail, first);
  EXPECT_TRUE(first.each_once("old-", 0, 100));
  return saved;
}

// The harm in logrotate's order: access.log is compressed into a file at the inode of a deleted
// .gz with the same header while the service is down. It goes on from where access.log was
// delivered to, not from the deleted file's end or its own start.
TEST_F(FileTailerTest, ACompressedFileAtTheInodeOfAnotherGoesOnFromItsSource) {
  append_with_header("access.log", "live-", 0, 10);
  const TailOptions both = options({path("*.log"), path("*.gz")});
  Collected first;
  std::vector<CheckpointEntry> saved = checkpoint_with_old_gz(both, first);
  ASSERT_TRUE(first.each_once("live-", 0, 10));
  append_lines("access.log", "late-", 0, 5);  // not read before the stop
  fs::remove(path("old.gz"));
  gzip_file(path("access.log"), path("access.log.1.gz"));
  fs::remove(path("access.log"));
  give_inode_of_entry(saved, path("old.gz"), path("access.log.1.gz"));
  FileTailer again(both, Input{"files"}, saved);
  Collected after;
  (void)settle(again, after, Clock::now());
  EXPECT_TRUE(after.each_once("late-", 0, 5));
  EXPECT_EQ(after.lines.size(), 5U);
}

// A compressed file gunzipped while the service was down: the plain file takes its entry, and is
// still known by its first line, so that its compressed form, made later, is not read again.
TEST_F(FileTailerTest, AFileGunzippedWhileDownKnowsItsCompressedFormLater) {
  const TailOptions both = options({path("*.log"), path("*.gz")});
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_with_old_gz(both, first);
  append_with_header("old.log", "old-", 0, 100);  // gunzip old.gz
  fs::remove(path("old.gz"));
  FileTailer again(both, Input{"files"}, saved);
  Collected after;
  const Clock::time_point now = settle(again, after, Clock::now());
  EXPECT_TRUE(after.lines.empty()) << after.lines.size() << " lines read again";
  gzip_file(path("old.log"), path("old.log.1.gz"));
  (void)settle(again, after, now);
  EXPECT_TRUE(after.lines.empty()) << after.lines.size() << " lines read again";
}

// The same for one read whole: the other is read from its start, not from the first one's end.
TEST_F(FileTailerTest, ACompressedFileAtTheInodeOfOneReadIsReadFromItsStart) {
  const TailOptions gz = options({path("*.gz")});
  Collected first;
  std::vector<CheckpointEntry> saved = checkpoint_with_old_gz(gz, first);
  fs::remove(path("old.gz"));
  append_with_header("new.txt", "new-", 0, 200);
  gzip_file(path("new.txt"), path("new.gz"));
  give_inode_of_entry(saved, path("old.gz"), path("new.gz"));
  FileTailer again(gz, Input{"files"}, saved);
  Collected after;
  (void)settle(again, after, Clock::now());
  EXPECT_TRUE(after.each_once("new-", 0, 200));
}

// A compressed file that only shares its first line with a file the tailer follows (a header, as
// W3C and CSV logs have) is not that file's compressed form: it is read whole.
TEST_F(FileTailerTest, ACompressedFileThatOnlySharesAHeaderIsReadWhole) {
  append_with_header("app.log", "live-", 0, 100);
  append_with_header("other.log", "archived-", 0, 100);
  gzip_file(path("other.log"), path("other.log.1.gz"));
  fs::remove(path("other.log"));
  const TailOptions tail = options({path("app.log"), path("*.gz")});
  FileTailer tailer(tail, Input{"files"}, {});
  Collected out;
  (void)settle(tailer, out, Clock::now());
  EXPECT_TRUE(out.each_once("live-", 0, 100));
  EXPECT_TRUE(out.each_once("archived-", 0, 100));
}

// Across a restart, a compressed file new since the checkpoint that shares its first line with a
// file the checkpoint holds (a header) does not take that file's entry while that file is still
// there, even when it is opened first (one descriptor only): each is read from where it should be.
TEST_F(FileTailerTest, ACompressedFileDoesNotTakeTheEntryOfAFileStillThere) {
  append_with_header("live.log", "live-", 0, 100);
  TailOptions tail = options({path("*.gz"), path("*.log")});
  tail.max_open_files = 1;
  Collected first;
  const std::vector<CheckpointEntry> saved = checkpoint_after_reading(tail, first);
  ASSERT_TRUE(first.each_once("live-", 0, 100));
  append_with_header("archive.txt", "archived-", 0, 100);  // written while the service was down
  gzip_file(path("archive.txt"), path("archive.gz"));
  FileTailer again(tail, Input{"files"}, saved);
  Collected after;
  (void)settle(again, after, Clock::now());
  EXPECT_TRUE(after.each_once("archived-", 0, 100));
  EXPECT_EQ(after.lines.count("live-0"), 0U);  // not read again
}

// A compressed file's checkpoint entry saved before compressed files were known by their inflated
// bytes (its fingerprint the hash of its compressed first line) still resumes it.
TEST_F(FileTailerTest, ACompressedFilesEntryFromAnEarlierVersionStillResumesIt) {
  append_lines("old.log", "z-", 0, 100);
  gzip_file(path("old.log"), path("old.log.gz"));
  fs::remove(path("old.log"));
  Collected first;
  std::vector<CheckpointEntry> saved = checkpoint_after_reading(options({path("*.gz")}), first);
  ASSERT_EQ(saved.size(), 1U);
  // As the earlier version saved it: the compressed bytes, over the length of the first line.
  saved.front().fingerprint_length = 4;  // "z-0\n"
  std::ifstream in(path("old.log.gz"), std::ios::binary);
  std::string raw(saved.front().fingerprint_length, '\0');
  in.read(raw.data(), static_cast<std::streamsize>(raw.size()));
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a, the tailer's
  for (const char c : raw) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  saved.front().fingerprint = hash;
  FileTailer again(options({path("*.gz")}), Input{"files"}, saved);
  Collected out;
  (void)settle(again, out, Clock::now());
  EXPECT_TRUE(out.lines.empty()) << out.lines.size() << " lines read again";
}

// A compressed file under the globs (a rotated *.gz) is read once, whole, and not again after a
// restart.
TEST_F(FileTailerTest, AGzipFileIsReadOnceWhole) {
  {
    gzFile out = ::gzopen(path("old.log.gz").c_str(), "wb");
    ASSERT_NE(out, nullptr);
    for (int i = 0; i < 5000; ++i) {
      const std::string line = "z-" + std::to_string(i) + "\n";
      ASSERT_EQ(::gzwrite(out, line.data(), static_cast<unsigned>(line.size())),
                static_cast<int>(line.size()));
    }
    ::gzclose(out);
  }
  Collected first;
  const std::vector<CheckpointEntry> saved =
      checkpoint_after_reading(options({path("*.gz")}), first);
  EXPECT_TRUE(first.each_once("z-", 0, 5000));
  EXPECT_EQ(first.lines.size(), 5000U);
  FileTailer again(options({path("*.gz")}), Input{"files"}, saved);
  Collected out;
  (void)settle(again, out, Clock::now());
  EXPECT_TRUE(out.lines.empty());
}

// Compressed files, more of them than max_open_files: each takes one descriptor while it is read
// and gives it back once read, so every one is read and so is the plain file after them.
TEST_F(FileTailerTest, CompressedFilesGiveTheirDescriptorBackOnceRead) {
  constexpr int files = 6;
  // Built by appending: GCC 12 at -O3 warns of an overlapping copy (-Wrestrict) in
  // `"z" + std::to_string(f)`, wrongly.
  const auto prefix = [](int f) {
    std::string text = "z";
    text += std::to_string(f);
    text += '-';
    return text;
  };
  for (int f = 0; f < files; ++f) {
    gzFile out = ::gzopen(path("old.log." + std::to_string(f) + ".gz").c_str(), "wb");
    ASSERT_NE(out, nullptr);
    for (int i = 0; i < 1000; ++i) {
      const std::string line = prefix(f) + std::to_string(i) + "\n";
      ASSERT_EQ(::gzwrite(out, line.data(), static_cast<unsigned>(line.size())),
                static_cast<int>(line.size()));
    }
    ::gzclose(out);
  }
  append("zz.log", "plain-0\n");  // after them in path order
  TailOptions tail = options({path("*.gz"), path("*.log")});
  tail.max_open_files = 2;
  const std::uint64_t baseline = descriptors();
  std::uint64_t most_open = 0;
  FileTailer tailer(tail, Input{"files"}, {});
  Collected out;
  const FileTailer::Emit collect = out.emit();
  const FileTailer::Emit counting = [&](Chunk&& chunk) {
    most_open = std::max(most_open, descriptors() - baseline);
    return collect(std::move(chunk));
  };
  Clock::time_point now = Clock::now();
  for (int round = 0; round < 200 && out.lines.count("plain-0") == 0; ++round)
    (void)tailer.poll(counting, now += 10ms);
  for (int f = 0; f < files; ++f)
    EXPECT_TRUE(out.each_once(prefix(f), 0, 1000)) << f;
  EXPECT_EQ(out.lines.count("plain-0"), 1U);
  EXPECT_LE(most_open, 2U + 1);                     // the cap, and the directory listing's own
  EXPECT_LE(tailer.stats().open_files.load(), 1U);  // the plain file's
  EXPECT_EQ(tailer.stats().files.load(), static_cast<std::uint64_t>(files + 1));
}

// 10,000 files under one glob: every line is read, no more than max_open_files descriptors are
// ever open (idle files are closed and opened again when they grow), and memory is reported.
TEST_F(FileTailerTest, TenThousandFilesStayUnderTheDescriptorCap) {
  constexpr int files = 10'000;
  fs::create_directories(dir_ / "many");
  for (int i = 0; i < files; ++i)
    append("many/f" + std::to_string(i) + ".log", "line-" + std::to_string(i) + "\n");
  TailOptions many = options({path("many/*.log")});
  many.max_open_files = 256;
  many.close_idle = 0ms;
  const auto rss_kib = [] {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
    return 0L;
  };
  const long before = rss_kib();
  FileTailer tailer(many, Input{"files"}, {});
  Collected out;
  Clock::time_point now = Clock::now();
  // Descriptors the process has open are counted while the tailer hands chunks out.
  const std::uint64_t baseline = descriptors();
  std::uint64_t most_open = 0;
  std::uint64_t emitted = 0;
  const FileTailer::Emit collect = out.emit();
  const FileTailer::Emit counting = [&](Chunk&& chunk) {
    if (emitted++ % 50 == 0) most_open = std::max(most_open, descriptors() - baseline);
    return collect(std::move(chunk));
  };
  for (int round = 0; round < 1000 && out.lines.size() < files; ++round) {
    (void)tailer.poll(counting, now += 10ms);
    out.release();
  }
  EXPECT_TRUE(out.each_once("line-", 0, files));
  EXPECT_GT(most_open, 0U);
  EXPECT_LE(most_open, 256U + 2);  // the cap, and the directory listing's own
  EXPECT_EQ(tailer.stats().files.load(), static_cast<std::uint64_t>(files));
  // A file that grows after it was closed is opened again and read on.
  append("many/f7.log", "more-7\n");
  for (int round = 0; round < 100 && out.lines.count("more-7") == 0; ++round)
    (void)tailer.poll(out.emit(), now += 10ms);
  EXPECT_EQ(out.lines.count("more-7"), 1U);
  std::printf("10000 files: at most %llu open, %ld KiB more resident\n",
              static_cast<unsigned long long>(most_open), rss_kib() - before);
}

TEST(PathGlob, DoubleStarCrossesDirectoriesAndStarDoesNot) {
  const PathGlob glob("/var/log/**/*.log");
  EXPECT_TRUE(glob.matches("/var/log/a.log"));
  EXPECT_TRUE(glob.matches("/var/log/nginx/access.log"));
  EXPECT_TRUE(glob.matches("/var/log/a/b/c.log"));
  EXPECT_FALSE(glob.matches("/var/log/a.log.1"));
  EXPECT_FALSE(glob.matches("/var/other/a.log"));
  EXPECT_EQ(glob.base(), "/var/log");
  EXPECT_TRUE(glob.recursive());
  const PathGlob flat("/var/log/*.log");
  EXPECT_FALSE(flat.matches("/var/log/nginx/access.log"));
  EXPECT_FALSE(flat.recursive());
  EXPECT_TRUE(PathGlob("logs/app-[0-9].log").matches("logs/app-7.log"));
  EXPECT_FALSE(PathGlob("").matches(""));
}

TEST_F(FileTailerTest, FindFilesWalksIncludesAndLeavesOutExcludes) {
  fs::create_directories(dir_ / "nginx" / "old");
  for (const char* name : {"a.log", "b.txt", "nginx/access.log", "nginx/error.log",
                           "nginx/old/access.log", "nginx/access.log.gz"})
    append(name, "x\n");
  const auto found =
      conveyor::stages::find_files({PathGlob(path("**/*.log"))}, {PathGlob(path("**/old/*"))}, 100);
  EXPECT_EQ(found.paths, (std::vector<std::string>{path("a.log"), path("nginx/access.log"),
                                                   path("nginx/error.log")}));
  EXPECT_FALSE(found.truncated);
  const auto limited = conveyor::stages::find_files({PathGlob(path("**/*.log"))}, {}, 2);
  EXPECT_EQ(limited.paths.size(), 2U);
  EXPECT_TRUE(limited.truncated);
  const auto flat = conveyor::stages::find_files({PathGlob(path("*.log"))}, {}, 100);
  EXPECT_EQ(flat.paths, (std::vector<std::string>{path("a.log")}));
}

}  // namespace
