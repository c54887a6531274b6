// AckLedger: tokens settle in any order; the acknowledged position advances over the settled
// prefix.
#include "conveyor/framework/ack.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <utility>

#include "conveyor/sync/detail/deadline.hpp"

namespace conveyor {

namespace detail {

struct AckState {
  enum class Status : std::uint8_t { pending, settled, failed };
  struct Slot {
    std::uint64_t position;
    Status status;
  };

  mutable std::mutex mutex;
  mutable std::condition_variable advanced;
  std::deque<Slot> slots;            // from the oldest unsettled (or failed) token on
  std::uint64_t first_sequence = 0;  // the sequence number of slots.front()
  std::uint64_t next_sequence = 0;
  std::uint64_t pending = 0;  // issued, not settled, not failed by fail_outstanding()
  std::optional<std::uint64_t> acknowledged;
  bool failed = false;
  bool stopped = false;  // fail_outstanding(): tokens issued from then on fail at once
  // A failed token reached the front: acknowledged() cannot move again, so slots are no longer
  // kept (a ledger that goes on issuing after a failure does not grow).
  bool dead = false;

  void settle(std::uint64_t sequence, bool failure) {
    {
      std::lock_guard lock(mutex);
      if (!stopped) --pending;
      failed = failed || failure;
      if (!dead) {
        Slot& slot = slots[sequence - first_sequence];
        // A token failed by fail_outstanding() stays failed, however it settles.
        if (slot.status == Status::pending)
          slot.status = failure ? Status::failed : Status::settled;
        while (!slots.empty() && slots.front().status == Status::settled) {
          acknowledged = slots.front().position;
          slots.pop_front();
          ++first_sequence;
        }
        bury_if_stuck();
      }
    }
    advanced.notify_all();
  }

  // Under the mutex.
  void bury_if_stuck() {
    if (slots.empty() || slots.front().status != Status::failed) return;
    dead = true;
    slots.clear();
    slots.shrink_to_fit();
  }
};

// What a token holds, shared by its copies: one issued token, or two joined.
struct AckEntry {
  AckEntry() = default;
  AckEntry(const AckEntry&) = delete;
  AckEntry& operator=(const AckEntry&) = delete;
  virtual ~AckEntry() = default;
  virtual void fail() noexcept = 0;
};

// One issued token; settles when the last copy of it (or of a join holding it) goes.
struct IssuedEntry final : AckEntry {
  IssuedEntry(std::shared_ptr<AckState> shared, std::uint64_t number)
      : state(std::move(shared)), sequence(number) {}
  IssuedEntry(const IssuedEntry&) = delete;
  IssuedEntry& operator=(const IssuedEntry&) = delete;
  // A last copy that goes while an exception propagates (stack unwinding) was dropped by it.
  ~IssuedEntry() override {
    state->settle(sequence,
                  failed.load(std::memory_order_relaxed) || std::uncaught_exceptions() > 0);
  }
  void fail() noexcept override { failed.store(true, std::memory_order_relaxed); }

  std::shared_ptr<AckState> state;
  std::uint64_t sequence;
  // Set by any copy; read by the last one, after the reference count's release and acquire.
  std::atomic<bool> failed{false};
};

// Two tokens carried as one (the items they came with were joined).
struct JoinedEntry final : AckEntry {
  JoinedEntry(std::shared_ptr<AckEntry> one, std::shared_ptr<AckEntry> other)
      : first(std::move(one)), second(std::move(other)) {}
  void fail() noexcept override {
    first->fail();
    second->fail();
  }

  std::shared_ptr<AckEntry> first;
  std::shared_ptr<AckEntry> second;
};

}  // namespace detail

void AckToken::fail() noexcept {
  if (entry_) entry_->fail();
  entry_.reset();
}

void AckToken::join(AckToken other) {
  if (other.empty()) return;
  if (empty()) {
    entry_ = std::move(other.entry_);
    return;
  }
  entry_ = std::make_shared<detail::JoinedEntry>(std::move(entry_), std::move(other.entry_));
}

AckLedger::AckLedger() : state_(std::make_shared<detail::AckState>()) {}

AckLedger::~AckLedger() = default;

AckToken AckLedger::issue(std::uint64_t position) {
  std::uint64_t sequence = 0;
  {
    std::lock_guard lock(state_->mutex);
    // The slot first: if it cannot be had, nothing has changed, and every number handed out has
    // its slot.
    if (!state_->dead) {
      state_->slots.push_back({position, state_->stopped ? detail::AckState::Status::failed
                                                         : detail::AckState::Status::pending});
    }
    sequence = state_->next_sequence++;
    if (state_->stopped) {
      state_->bury_if_stuck();
    } else {
      ++state_->pending;
    }
  }
  try {
    return AckToken(std::make_shared<detail::IssuedEntry>(state_, sequence));
  } catch (...) {
    state_->settle(sequence, true);  // no token, so its item is not delivered
    throw;
  }
}

std::optional<std::uint64_t> AckLedger::acknowledged() const {
  std::lock_guard lock(state_->mutex);
  return state_->acknowledged;
}

bool AckLedger::failed() const {
  std::lock_guard lock(state_->mutex);
  return state_->failed;
}

std::uint64_t AckLedger::outstanding() const {
  std::lock_guard lock(state_->mutex);
  return state_->pending;
}

void AckLedger::fail_outstanding() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopped = true;
    state_->failed = true;
    state_->pending = 0;
    for (detail::AckState::Slot& slot : state_->slots)
      slot.status = detail::AckState::Status::failed;
    state_->bury_if_stuck();
  }
  state_->advanced.notify_all();  // wait_acknowledged() returns false at once
}

bool AckLedger::wait_acknowledged(std::uint64_t position, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mutex);
  const auto reached = [&] {
    return state_->failed || (state_->acknowledged && *state_->acknowledged >= position);
  };
  // A timeout the clock cannot hold (milliseconds::max() for "no limit") waits without one,
  // instead of overflowing into a deadline in the past.
  const auto deadline = sync::detail::deadline_after(timeout);
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    state_->advanced.wait(lock, reached);
  } else {
    state_->advanced.wait_until(lock, deadline, reached);
  }
  return !state_->failed && state_->acknowledged && *state_->acknowledged >= position;
}

}  // namespace conveyor
