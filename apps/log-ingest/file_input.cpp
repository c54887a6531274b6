// FileInput: the tailer's loop, inotify, and the checkpoint.
#include "file_input.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "conveyor/stages/checkpoint_file.hpp"
#include "conveyor/stages/file_tailer.hpp"
#include "conveyor/stages/line_splitter.hpp"

namespace conveyor::log_ingest {

namespace {

using Clock = std::chrono::steady_clock;

// inotify on directories, as a wake-up: which files changed is the tailer's business, but for
// the names of files written to, which it may have closed as idle.
class DirectoryWatch {
 public:
  // Without inotify (`enabled` false, or where the kernel refuses it) it only sleeps.
  explicit DirectoryWatch(bool enabled)
      : fd_(enabled ? ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC) : -1) {}
  ~DirectoryWatch() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirectoryWatch(const DirectoryWatch&) = delete;
  DirectoryWatch& operator=(const DirectoryWatch&) = delete;

  void watch(const std::vector<std::string>& directories) {
    if (fd_ < 0) return;
    for (const std::string& directory : directories) {
      if (!watched_.insert(directory).second) continue;
      const int wd = ::inotify_add_watch(fd_, directory.c_str(),
                                         IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM |
                                             IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF);
      if (wd >= 0) by_descriptor_.try_emplace(wd, directory);
    }
  }

  // Waits up to `timeout` for a change; true when files may have come or gone. With `modified`,
  // each file written to is named to it by its path.
  bool wait(std::chrono::milliseconds timeout,
            const std::function<void(const std::string&)>& modified = nullptr) {
    if (fd_ < 0) {
      std::this_thread::sleep_for(timeout);
      return false;
    }
    pollfd ready{.fd = fd_, .events = POLLIN, .revents = 0};
    if (::poll(&ready, 1, static_cast<int>(timeout.count())) <= 0) return false;
    bool structure = false;
    alignas(inotify_event) std::array<char, 16384> buffer{};
    for (;;) {
      const ssize_t got = ::read(fd_, buffer.data(), buffer.size());
      if (got <= 0) break;
      for (std::size_t at = 0; at < static_cast<std::size_t>(got);) {
        inotify_event event{};
        std::memcpy(&event, buffer.data() + at, sizeof event);
        if ((event.mask & ~static_cast<std::uint32_t>(IN_MODIFY)) != 0) structure = true;
        if ((event.mask & IN_IGNORED) != 0) {  // a directory went: watch again
          watched_.clear();
          by_descriptor_.clear();
        }
        const auto directory = by_descriptor_.find(event.wd);
        if (modified && event.mask == IN_MODIFY && event.len > 0 &&
            directory != by_descriptor_.end()) {
          // The name is padded with NULs to the event's length.
          const char* const name = buffer.data() + at + sizeof(inotify_event);
          modified((std::filesystem::path(directory->second) /
                    std::string_view(name, ::strnlen(name, event.len)))
                       .string());
        }
        at += sizeof(inotify_event) + event.len;
      }
    }
    return structure;
  }

 private:
  int fd_;
  std::set<std::string> watched_;
  std::unordered_map<int, std::string> by_descriptor_;
};

// Saves checkpoints on a thread of its own: fsync takes milliseconds, and the lines appended
// meanwhile should not wait for it. `post` hands it the latest positions (older ones not yet
// saved are dropped: the latest covers them; the same ones again are not saved twice, unless
// their save failed); `finish` saves the last positions it is given, whatever was posted before
// (a post of the same positions may have been dropped while their save was failing), and stops.
class CheckpointSaver {
 public:
  CheckpointSaver(const stages::CheckpointFile& file, const std::atomic<bool>& abandoned,
                  const Ingress& ingress, InputCounters& counters, std::string input)
      : file_(file),
        abandoned_(abandoned),
        ingress_(ingress),
        counters_(counters),
        input_(std::move(input)),
        thread_([this] { run(); }) {}
  CheckpointSaver(const CheckpointSaver&) = delete;
  CheckpointSaver& operator=(const CheckpointSaver&) = delete;
  ~CheckpointSaver() { finish(); }

  void post(std::vector<stages::CheckpointEntry> entries) {
    {
      std::lock_guard lock(mutex_);
      if (entries == last_posted_) return;
      last_posted_ = entries;
      pending_ = std::move(entries);
    }
    wake_.notify_one();
  }

  void finish(std::optional<std::vector<stages::CheckpointEntry>> last = std::nullopt) {
    {
      std::lock_guard lock(mutex_);
      if (last) pending_ = std::move(last);
      stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return pending_.has_value() || stopping_; });
      if (pending_) {
        std::vector<stages::CheckpointEntry> entries = std::move(*pending_);
        pending_.reset();
        lock.unlock();
        save(entries);
        lock.lock();
        continue;
      }
      if (stopping_) return;
    }
  }

  void save(const std::vector<stages::CheckpointEntry>& entries) {
    if (abandoned_.load(std::memory_order_relaxed) || ingress_.failed()) return;
    try {
      file_.save(entries);
    } catch (const std::exception& failure) {
      InputCounters::add(counters_.checkpoint_errors, 1);
      std::fprintf(stderr, "log-ingest: input '%s': %s\n", input_.c_str(), failure.what());
      const std::lock_guard lock(mutex_);
      last_posted_.reset();  // the next post saves, even the same positions (the last one)
    }
  }

  const stages::CheckpointFile& file_;
  const std::atomic<bool>& abandoned_;
  const Ingress& ingress_;
  InputCounters& counters_;
  std::string input_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<std::vector<stages::CheckpointEntry>> pending_;
  std::optional<std::vector<stages::CheckpointEntry>> last_posted_;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once the rest is built
};

// The chunk's lines (those dead-lettered included), and how many of them are blank.
void count_lines(const stages::Chunk& chunk, Delivery& delivery) {
  std::uint64_t lines = 0;
  std::uint64_t blank = 0;
  stages::for_each_line(chunk.text, [&](std::string_view line, std::uint64_t) {
    ++lines;
    blank += stages::blank_line(line) ? 1 : 0;
  });
  delivery.messages = lines + chunk.overlong.size();
  delivery.blank = blank;
}

// For the tests: CONVEYOR_CHECKPOINT_FAULT=STEP (write, halfway, fsync_file, rename,
// fsync_directory) kills the process with SIGKILL at that step of its first checkpoint save.
std::function<void(stages::CheckpointStep)> checkpoint_fault() {
  // Read once per input, and nothing in the service sets the environment.
  const char* text = std::getenv("CONVEYOR_CHECKPOINT_FAULT");  // NOLINT(concurrency-mt-unsafe)
  if (text == nullptr) return {};
  static constexpr std::array<std::pair<std::string_view, stages::CheckpointStep>, 5> steps = {{
      {"write", stages::CheckpointStep::write},
      {"halfway", stages::CheckpointStep::halfway},
      {"fsync_file", stages::CheckpointStep::fsync_file},
      {"rename", stages::CheckpointStep::rename},
      {"fsync_directory", stages::CheckpointStep::fsync_directory},
  }};
  for (const auto& [name, step] : steps) {
    if (name == text) {
      return [at = step](stages::CheckpointStep now) {
        if (now == at) ::raise(SIGKILL);
      };
    }
  }
  return {};
}

}  // namespace

FileInput::FileInput(const InputConfig& config, const LimitsConfig& limits, Ingress& ingress,
                     InputCounters& counters, std::string state_dir)
    : ServiceInput(config, limits, ingress, counters), state_dir_(std::move(state_dir)) {}

FileInput::~FileInput() {
  stop_accepting();
  closing_.store(true, std::memory_order_relaxed);
  if (follower_.joinable()) follower_.join();
}

std::string FileInput::checkpoint_path() const {
  return (std::filesystem::path(state_dir_) / (config_.name + ".checkpoint")).string();
}

std::string FileInput::where() const {
  std::string globs;
  for (const std::string& glob : config_.file.include)
    globs += (globs.empty() ? "" : " ") + glob;
  return "file:" + globs + " (checkpoint " + checkpoint_path() + ")";
}

void FileInput::start() {
  std::error_code error;
  std::filesystem::create_directories(state_dir_, error);
  follower_ = std::thread([this] { follow(); });
}

void FileInput::follow() {
  const stages::CheckpointFile checkpoint(checkpoint_path(), checkpoint_fault());
  stages::CheckpointLoad loaded = checkpoint.load();
  if (loaded.status == stages::CheckpointLoad::Status::corrupt) {
    std::fprintf(stderr,
                 "log-ingest: input '%s': the checkpoint %s is unusable: %s. Every file is read "
                 "from its beginning: lines may come again, none is lost\n",
                 config_.name.c_str(), checkpoint.path().c_str(), loaded.problem.c_str());
  }
  const FileConfig& file = config_.file;
  // read_from is for the first start only: after a restart (or a checkpoint set aside), a file the
  // checkpoint does not know appeared while the input was away, and is read from its beginning.
  const bool first_start = loaded.status == stages::CheckpointLoad::Status::missing;
  stages::FileTailer tailer({.include = file.include,
                             .exclude = file.exclude,
                             .start_at_end = file.read_from_end && first_start,
                             .glob_interval = file.glob_interval,
                             .rotate_wait = file.rotate_wait,
                             .partial_line_timeout = file.partial_line_timeout,
                             .max_line_bytes = file.max_line_bytes,
                             .max_open_files = file.max_open_files,
                             .close_idle = file.close_idle},
                            *input_, std::move(loaded.entries));
  CheckpointSaver saver(checkpoint, abandoned_, ingress_, counters_, config_.name);
  Clock::time_point last_save = Clock::now();
  const auto save_if_due = [&] {
    if (Clock::now() - last_save < file.checkpoint_interval) return;
    saver.post(tailer.checkpoint());
    last_save = Clock::now();
  };
  // The counters go on from what the input's earlier forms counted (a reload replaces the input
  // and keeps its counters, which a listener of the same name may still add to while its
  // connections drain): each publish adds what the tailer counted since the last one. Relaxed:
  // counts, read by the metrics.
  struct Counted {
    std::atomic<std::uint64_t>& counter;
    const std::atomic<std::uint64_t>& tailed;
    std::uint64_t published = 0;
  };
  std::array<Counted, 4> counted{{
      {counters_.rotations, tailer.stats().rotations},
      {counters_.truncations, tailer.stats().truncations},
      {counters_.lost_truncated_bytes, tailer.stats().lost_truncated_bytes},
      {counters_.bytes, tailer.stats().bytes},
  }};
  const auto publish = [&] {
    const stages::TailStats& stats = tailer.stats();
    counters_.files.store(stats.files.load(std::memory_order_relaxed), std::memory_order_relaxed);
    for (Counted& each : counted) {
      const std::uint64_t now = each.tailed.load(std::memory_order_relaxed);
      InputCounters::add(each.counter, now - each.published);
      each.published = now;
    }
  };
  const auto emit = [&](stages::Chunk&& chunk) {
    AckToken token =
        chunk.ack;  // failed if the Ingress refuses the chunk, so that it is read again
    Delivery delivery;
    count_lines(chunk, delivery);
    delivery.chunk = std::move(chunk);
    // The checkpoint is saved on time within a poll too, and while the queue is full (catching
    // up, the outputs slower than the files grow): what the outputs write meanwhile is not read
    // again after a crash. Saved only between polls, it would lag by a whole poll's reads.
    save_if_due();
    for (;;) {
      if (ingress_.closed()) {
        token.fail();
        return false;
      }
      // Stopping, the input hands over nothing more of this poll (which may hold a megabyte of
      // every file, catching up): what it gives up is not in the checkpoint, and is read after
      // the restart, once. But a file deleted while open cannot be: its chunks wait for room
      // (until the Ingress closes at the drain's deadline), and it is read to its end below.
      if (stop_.load(std::memory_order_relaxed)) {
        tailer.hold_linked();
        if (!tailer.handing_out_unlinked()) {
          token.fail();
          return false;
        }
      }
      const auto due = last_save + file.checkpoint_interval - Clock::now();
      const auto wait = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(due),
                                 std::chrono::milliseconds(1));
      if (ingress_.try_push_for(delivery, counters_, wait)) return true;
      save_if_due();
    }
  };

  DirectoryWatch watch(file.inotify);
  const std::function<void(const std::string&)> modified = [&](const std::string& path) {
    tailer.modified(path);
  };
  while (!stop_.load(std::memory_order_relaxed)) {
    const std::size_t read = tailer.poll(emit);
    watch.watch(tailer.directories());
    publish();
    save_if_due();
    // A file closed as idle and written to again is opened at once, not at the next look.
    const std::function<void(const std::string&)> reopen =
        tailer.closed_idle() ? modified : nullptr;
    if (read == 0) {
      if (watch.wait(std::chrono::milliseconds(100), reopen)) tailer.rescan();
    } else if (tailer.caught_up() && file.linger.count() > 0) {
      // Appends gather for a while, and are read in a few large pieces instead of at each
      // write; the changes meanwhile need no wake-up of their own.
      std::this_thread::sleep_for(file.linger);
      if (watch.wait(std::chrono::milliseconds(0), reopen)) tailer.rescan();
    }
  }
  // A file deleted while open (rotated away and removed, with the input behind) cannot be read
  // after a restart: it is read to its end now, while the drain lets the Ingress take it.
  tailer.hold_linked();
  while (!ingress_.closed() && !closing_.load(std::memory_order_relaxed) &&
         tailer.drain_deleted(emit) > 0) {
    publish();
    save_if_due();
  }
  finished_.store(true, std::memory_order_release);
  // Everything handed over is in the Ingress. The last checkpoint waits for the outputs to write
  // it all (the service drains, then destroys the input), saving on the way.
  while (!closing_.load(std::memory_order_relaxed) && !tailer.acknowledged()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    save_if_due();
  }
  publish();
  saver.finish(tailer.checkpoint());
  settled_.store(true, std::memory_order_release);
}

}  // namespace conveyor::log_ingest
