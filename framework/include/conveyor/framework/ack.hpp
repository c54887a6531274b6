// AckLedger and AckToken: a source learns when every branch has finished with what it emitted.
//
//   emit(Chunk{text, ledger->issue(end_offset)});   // source: the position to commit once done
//   if (auto position = ledger->acknowledged()) save_checkpoint(*position);  // everything done
//
// An item carries a token; copies of it (a broadcast to several workers, an item split in
// parts) share it, and an item joined from several carries all of theirs (`join`). The token is
// settled when its last copy is released or destroyed: filtered, dead-lettered and written items
// all count as finished. A branch that could not deliver its copy calls fail() first; a last copy
// destroyed by an exception (during stack unwinding: a stage threw while it held the item) fails.
//
// Contract:
// - `issue(position)` numbers tokens in the order they are issued; positions should not
//   decrease. `acknowledged()` is the position of the latest token such that it and every token
//   issued before it are settled, and none failed; nullopt until the first is.
// - A failed token holds the ledger back for good: `acknowledged()` never passes it, so that
//   what it carried is delivered again after a restart (at least once). `failed()` says so.
// - `fail_outstanding()` fails every token not settled yet, and every token issued after it:
//   acknowledged() stays where it is for good (`Pipeline::fail_on_cancel` calls it).
// - `wait_acknowledged(position, timeout)` waits until acknowledged() reaches `position`.
// - Tokens may outlive the ledger object (they share its state). A default token is empty and
//   settles nothing.
// - Thread safety: any thread may issue, copy, release, fail and read, concurrently. Settling
//   takes a mutex, once per token rather than per copy.
//
// Memory ordering: what a thread did before it released its copy happens before acknowledged()
// returns a position that covers it (the mutex orders them).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

namespace conveyor {

namespace detail {
struct AckState;
struct AckEntry;
}  // namespace detail

class AckToken {
 public:
  AckToken() = default;

  [[nodiscard]] bool empty() const noexcept { return entry_ == nullptr; }
  // Lets this copy go; the token settles when its last copy does.
  void release() noexcept { entry_.reset(); }
  // This copy could not be delivered: the ledger stops before it. Then releases this copy.
  void fail() noexcept;
  // Carries `other` too, for an item made by joining two: it settles when this token's last copy
  // goes, and fail() fails both.
  void join(AckToken other);

 private:
  friend class AckLedger;
  explicit AckToken(std::shared_ptr<detail::AckEntry> entry) : entry_(std::move(entry)) {}

  std::shared_ptr<detail::AckEntry> entry_;
};

class AckLedger {
 public:
  AckLedger();
  AckLedger(const AckLedger&) = delete;
  AckLedger& operator=(const AckLedger&) = delete;
  ~AckLedger();

  [[nodiscard]] AckToken issue(std::uint64_t position);

  [[nodiscard]] std::optional<std::uint64_t> acknowledged() const;
  [[nodiscard]] bool failed() const;
  // Tokens issued and not settled yet, less those fail_outstanding() failed.
  [[nodiscard]] std::uint64_t outstanding() const;

  // What is outstanding, or issued from now on, is not delivered: the ledger stops where it is.
  void fail_outstanding();

  // True once acknowledged() >= position; false after `timeout`, or at once if a token failed.
  bool wait_acknowledged(std::uint64_t position, std::chrono::milliseconds timeout) const;

 private:
  std::shared_ptr<detail::AckState> state_;
};

}  // namespace conveyor
