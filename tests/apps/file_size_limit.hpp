// FileSizeLimit: while it lives, files may grow to `bytes` only (RLIMIT_FSIZE, with SIGXFSZ
// ignored): a write beyond fails (EFBIG) after what fits has been written, as one on a full disk
// fails (ENOSPC). The limit is the process's: every thread's writes meet it.
#pragma once

#include <sys/resource.h>

#include <csignal>

namespace conveyor::testing {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) : ignored_(std::signal(SIGXFSZ, SIG_IGN)) {
    ::getrlimit(RLIMIT_FSIZE, &before_);
    const rlimit limit{bytes, before_.rlim_max};
    ::setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &before_);
    std::signal(SIGXFSZ, ignored_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  void (*ignored_)(int);
  rlimit before_{};
};

}  // namespace conveyor::testing
