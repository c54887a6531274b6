// ReorderBuffer<T>: where a serial_in_order stage keeps what arrives before its turn.
//
// A ring of slots, one per sequence number from `released` on. A slot holds an early whole entry
// as it is, or collects the parts of its number (see parcel.hpp) until their widths add up to a
// whole, then gives their values out by offset. The window gate upstream guarantees that no number
// outside [released, released + window) arrives. The ring starts small and doubles when a number
// lands beyond it, up to the window rounded up to a power of two; once grown, its slots' vectors
// are reused without allocation. A batch in run form (parcel.hpp) that comes early is kept whole
// rather than slot by slot if it is at least half full (its storage is then at most twice what its
// items need), or if the storage kept so far leaves room for it within the window's worth of
// items; it goes out whole when its turn comes, and its storage then goes to spare(), with the
// origin its caller gave it. A sparse batch with gaps (a route's, parcel.hpp) is taken the
// same way, by the numbers it covers. Entries without a number (from flush hooks upstream) are
// kept apart and given out after the stream.
//
// Contract: used by one worker only.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::detail {

// Where a part sits in its slot, and its offset in its item's outputs (compiled once).
struct PartOrder {
  std::uint64_t offset;
  std::size_t index;
};
void sort_by_offset(std::vector<PartOrder>& parts);

template <class T>
class ReorderBuffer {
 public:
  explicit ReorderBuffer(std::uint64_t window)
      : window_(window),
        slots_(static_cast<std::size_t>(std::bit_ceil(std::min(window, initial_slots)))),
        mask_(slots_.size() - 1) {
    CONVEYOR_CONTRACT(window >= 1, "ReorderBuffer: the window must hold at least one number");
  }

  // Takes the entry `tag`, `*value` (moved from; null for a gap) and gives out, in order, every
  // value whose turn has come: `deliver(T&&)`, or, for the values of a run or sparse batch,
  // `deliver.values(Batch<T>&)` where `deliver` has it.
  template <class Deliver>
  void add(const Tag& tag, T* value, Deliver&& deliver) {
    if (!tag.sequenced()) {
      if (value != nullptr) unsequenced_.push_back(std::move(*value));
      return;
    }
    if (tag.is_gap_set()) {
      for (std::uint64_t bits = tag.offset; bits != 0; bits &= bits - 1) {
        add(Tag::fresh(tag.seq + static_cast<std::uint64_t>(std::countr_zero(bits))), nullptr,
            deliver);
      }
      return;
    }
    const std::uint64_t seq = tag.seq;
    CONVEYOR_CONTRACT(seq >= next_ && seq - next_ < window_,
                      "ReorderBuffer: a sequence number outside the window arrived");
    if (seq == next_ && tag.width == Tag::whole) {
      // In order and whole: no need to keep it.
      ++next_;
      if (value != nullptr) deliver(std::move(*value));
      if (slot_of(next_).covered != Tag::whole && parked_.empty()) return;
    } else if (tag.width == Tag::whole) {
      // Early but whole, the common case behind parallel stages: no list of parts.
      Slot& slot = early_slot(seq);
      if (value != nullptr) slot.whole.emplace(std::move(*value));
      slot.covered = Tag::whole;
    } else {
      Slot& slot = early_slot(seq);
      if (value != nullptr) {
        slot.parts.push_back(Part{tag.offset, std::optional<T>(std::move(*value))});
      } else {
        slot.parts.push_back(Part{tag.offset, std::nullopt});
      }
      slot.covered += tag.width;
    }
    release_complete(deliver);
  }

  // Takes a batch in run form, or a sparse batch with gaps (parcel.hpp), and gives out, in order,
  // every value whose turn has come. A batch whose turn has not come is kept whole if it covers
  // at least half as many numbers as its storage holds, or if the storage of the batches kept
  // with it stays within the window: the buffer then takes the batch's storage, and hands it back
  // through spare() once its items have gone out, with `origin` (the caller's name for where it
  // came from, if it cares). Any other early batch goes into the slots, and the caller keeps its
  // storage.
  template <class Deliver>
  void add_batch(Batch<T>& batch, Deliver&& deliver,
                 std::optional<std::size_t> origin = std::nullopt) {
    CONVEYOR_CONTRACT(batch.is_run() || (batch.is_sparse() && batch.has_gaps()),
                      "ReorderBuffer::add_batch: a run, or a sparse batch that covers its gaps");
    const std::uint64_t first = batch.first();
    const std::uint64_t count = batch.numbers();
    if (count == 0) return;
    CONVEYOR_CONTRACT(first >= next_ && first + count - next_ <= window_,
                      "ReorderBuffer: a sequence number outside the window arrived");
    if (first != next_) {
      const std::size_t storage = batch.capacity();
      if (count * 2 < storage && parked_storage_ + storage > window_) {
        // A short batch (a partial one) would hold a whole batch's storage, and what is kept
        // already leaves no room for it: slot by slot instead.
        batch.for_each([&](const Tag& tag, T* value) { add(tag, value, deliver); });
        return;
      }
      parked_storage_ += storage;
      parked_.push_back(Kept{std::move(batch), origin});
      return;
    }
    next_ += count;
    give_values(batch, deliver);
    release_complete(deliver);
  }

  // Batch storage that parked batches no longer need, each with the origin it came with.
  struct Kept {
    Batch<T> batch;
    std::optional<std::size_t> origin;
  };
  [[nodiscard]] std::vector<Kept>& spare() noexcept { return spare_; }

  template <class Deliver>
  void add(Entry<T>&& entry, Deliver&& deliver) {
    add(entry.tag, entry.value ? &*entry.value : nullptr, deliver);
  }

  // Every number below this has been given out.
  [[nodiscard]] std::uint64_t released() const noexcept { return next_; }

  // Whether some numbered entries are still waiting for their turn.
  [[nodiscard]] bool holding() const noexcept {
    return !parked_.empty() ||
           std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.covered > 0; });
  }

  // Entries without a number, for after the stream.
  [[nodiscard]] std::vector<T> take_unsequenced() { return std::exchange(unsequenced_, {}); }

 private:
  struct Part {
    std::uint64_t offset;
    std::optional<T> value;
  };
  // A number's entry: whole (`whole`, empty for a gap) or in parts (`parts`), never both.
  struct Slot {
    std::uint64_t covered = 0;
    std::optional<T> whole;
    std::vector<Part> parts;
  };

  static constexpr std::uint64_t initial_slots = 64;

  // Every value of a run or sparse batch, in order: whole, if `deliver` takes batches.
  template <class Deliver>
  static void give_values(Batch<T>& batch, Deliver& deliver) {
    if constexpr (requires { deliver.values(batch); }) {
      deliver.values(batch);
    } else {
      batch.for_each_value([&](T& value) { deliver(std::move(value)); });
    }
  }

  [[nodiscard, gnu::always_inline]] Slot& slot_of(std::uint64_t seq) noexcept {
    return slots_[static_cast<std::size_t>(seq & mask_)];
  }
  // The slot of a number that came early, once the ring reaches it.
  [[gnu::always_inline]] Slot& early_slot(std::uint64_t seq) {
    if (seq - next_ >= slots_.size()) grow(seq - next_ + 1);
    return slot_of(seq);
  }
  // Makes the ring hold at least `reach` numbers from next_ (at most the window), moving each
  // slot to its place in the larger ring; by construction, since T need not be assignable.
  void grow(std::uint64_t reach) {
    std::vector<Slot> larger(static_cast<std::size_t>(std::bit_ceil(reach)));
    const std::uint64_t larger_mask = larger.size() - 1;
    for (std::uint64_t seq = next_; seq != next_ + slots_.size(); ++seq) {
      Slot& from = slot_of(seq);
      Slot& to = larger[static_cast<std::size_t>(seq & larger_mask)];
      to.covered = from.covered;
      if (from.whole) to.whole.emplace(std::move(*from.whole));
      to.parts = std::move(from.parts);
    }
    slots_ = std::move(larger);
    mask_ = larger_mask;
  }

  template <class Deliver>
  void release_complete(Deliver& deliver) {
    for (;;) {
      Slot& slot = slot_of(next_);
      if (slot.covered != Tag::whole) {
        if (!release_parked_run(deliver)) return;
        continue;
      }
      slot.covered = 0;
      ++next_;
      // Taken out before the values go out, so that a throwing stage leaves a consistent buffer.
      if (slot.parts.empty()) {
        std::optional<T> whole = std::exchange(slot.whole, std::nullopt);
        if (whole) deliver(std::move(*whole));
        continue;
      }
      std::vector<Part> parts = std::exchange(slot.parts, {});
      if (parts.size() > 1) {
        // By offset; the parts themselves stay put (T need not be assignable).
        order_.clear();
        for (std::size_t i = 0; i < parts.size(); ++i)
          order_.push_back({parts[i].offset, i});
        sort_by_offset(order_);
        for (const PartOrder& next : order_) {
          Part& part = parts[next.index];
          if (part.value) deliver(std::move(*part.value));
        }
      } else if (parts.front().value) {
        deliver(std::move(*parts.front().value));
      }
      parts.clear();
      slot.parts = std::move(parts);
    }
  }

  // Gives out the parked run (or sparse batch) that starts at next_, if there is one.
  template <class Deliver>
  bool release_parked_run(Deliver& deliver) {
    for (std::size_t i = 0; i < parked_.size(); ++i) {
      if (parked_[i].batch.first() != next_) continue;
      // Taken out before the values go out, like a slot's.
      const std::optional<std::size_t> origin = parked_[i].origin;
      Batch<T> run = std::move(parked_[i].batch);
      if (i + 1 != parked_.size()) parked_[i] = std::move(parked_.back());
      parked_.pop_back();
      parked_storage_ -= run.capacity();
      next_ += run.numbers();
      give_values(run, deliver);
      run.clear();
      spare_.push_back(Kept{std::move(run), origin});
      return true;
    }
    return false;
  }

  std::uint64_t window_;
  std::vector<Slot> slots_;  // a power of two of them
  std::uint64_t mask_;
  std::vector<Kept> parked_;        // runs and sparse batches that came early, kept whole
  std::size_t parked_storage_ = 0;  // the storage they hold, in items
  std::vector<Kept> spare_;
  std::vector<PartOrder> order_;
  std::uint64_t next_ = 0;
  std::vector<T> unsequenced_;
};

}  // namespace conveyor::detail
