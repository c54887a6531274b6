// What travels on a lane: one entry, or a batch of entries, each with the tag that lets a
// serial_in_order stage put the stream back in order.
//
// Ordering: the source and every serial_in_order stage are *sequencers*: they number what they
// emit 0, 1, 2, ... A stage in between (parallel or serial_out_of_order) passes each input's
// number on to what it emits for that input. If it emits nothing, a gap with the number travels on
// instead, so that the in-order stage does not wait for it; if it emits several items, they share
// the number and split its *width*: every sequence number owns the interval [0, whole), and the
// k-th of n outputs owns the k-th n-th of its input's interval. An in-order stage has received all
// of number s once the widths it holds for s add up to `whole`, and emits those parts by offset.
// Splits nest (a part can be split again) until a part would be narrower than one unit, which
// takes more than 2^63 outputs from one input.
//
// Items emitted by the flush hook of a non-sequencer stage belong to no number (`unsequenced`);
// an in-order stage passes them on after the stream.
//
// A *gap set* is one tag for up to 64 gaps of whole numbers: seq + i for each bit i of its
// `offset`, marked by a width of 0, which no part of a number has. A route that sends items one by
// one collects the gaps it owes a branch into one (policy_port.hpp).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::detail {

struct Tag {
  static constexpr std::uint64_t whole = std::uint64_t{1} << 63;
  static constexpr std::uint64_t unsequenced_seq = ~std::uint64_t{0};

  std::uint64_t seq = 0;
  std::uint64_t offset = 0;
  std::uint64_t width = whole;

  static constexpr Tag fresh(std::uint64_t seq) noexcept { return Tag{seq, 0, whole}; }
  static constexpr Tag unsequenced() noexcept { return Tag{unsequenced_seq, 0, whole}; }

  [[nodiscard]] constexpr bool sequenced() const noexcept { return seq != unsequenced_seq; }

  // The gaps first + i for each bit i of `bits` (not 0).
  static constexpr Tag gap_set(std::uint64_t first, std::uint64_t bits) noexcept {
    return Tag{first, bits, 0};
  }
  [[nodiscard]] constexpr bool is_gap_set() const noexcept { return width == 0; }

  // The index-th of `count` parts of this tag (count >= 1); the last part takes the remainder.
  [[nodiscard]] Tag part(std::uint64_t index, std::uint64_t count) const {
    const std::uint64_t step = width / count;
    if (step == 0) {
      throw std::length_error("conveyor: too many items emitted for one input on an ordered edge");
    }
    const std::uint64_t part_width = index + 1 == count ? width - step * index : step;
    return Tag{seq, offset + step * index, part_width};
  }
};

// Appends `value` to `values`. An item that is trivially copyable and copy-constructible, whose
// copy is therefore its move, goes in by copy: that push_back is inlined in a hot loop, where the
// moving one, which calls emplace_back, may not be (docs/design/batching.md).
template <class T>
[[gnu::always_inline]] inline void append_item(std::vector<T>& values,
                                               std::type_identity_t<T>&& value) {
  if constexpr (std::is_trivially_copyable_v<T> && std::is_trivially_copy_constructible_v<T>) {
    values.push_back(std::as_const(value));
  } else {
    values.push_back(std::move(value));
  }
}

// One item, or a gap (no value) that only carries its tag to an in-order stage.
template <class T>
struct Entry {
  Tag tag;
  std::optional<T> value;
};

// A whole item with number `seq`, turned into its Entry where the Entry is constructed (in a
// lane's slot, see SpscRing::try_emplace), so that no Entry is built elsewhere and moved there.
template <class T>
struct WholeItem {
  std::uint64_t seq;
  T& value;

  // Implicit: a variant builds its alternative from this with a direct-initialisation.
  operator Entry<T>() const noexcept {  // NOLINT(google-explicit-constructor)
    static_assert(std::is_nothrow_move_constructible_v<T>);
    return Entry<T>{Tag::fresh(seq), std::move(value)};
  }
};

// Up to B entries in one parcel. Most batches hold whole items with consecutive numbers (from a
// sequencer, or from a stage that maps each input to one output); those are kept as a run: the
// first number and the values, without a tag per item, which makes a batch of small items
// several times smaller. The first entry that does not continue the run turns the batch into a
// list of tagged entries. A route splits a run by branch into *sparse* batches: each covers up to
// 64 of the run's numbers [first, first + span), holds the values of those that went to its
// branch in order, as a run does, and marks which numbers they are in a mask of the span; the
// numbers it does not hold are gaps if it `has_gaps` (a branch that restores order), and belong to
// other branches otherwise.
template <class T>
class Batch {
 public:
  Batch() = default;
  // A batch moved from is an empty run.
  Batch(Batch&& other) noexcept
      : first_(other.first_),
        held_(other.held_),
        values_(std::move(other.values_)),
        entries_(std::move(other.entries_)),
        span_(other.span_),
        form_(std::exchange(other.form_, Form::run)),
        has_gaps_(other.has_gaps_) {}
  Batch& operator=(Batch&& other) noexcept {
    first_ = other.first_;
    held_ = other.held_;
    values_ = std::move(other.values_);
    entries_ = std::move(other.entries_);
    span_ = other.span_;
    form_ = std::exchange(other.form_, Form::run);
    has_gaps_ = other.has_gaps_;
    return *this;
  }
  Batch(const Batch& other)
      : first_(other.first_),
        held_(other.held_),
        values_(other.values_),
        entries_(other.form_ == Form::tagged
                     ? std::make_unique<std::vector<Entry<T>>>(*other.entries_)
                     : nullptr),
        span_(other.span_),
        form_(other.form_),
        has_gaps_(other.has_gaps_) {}
  // Into this batch's storage, which it keeps where it can.
  Batch& operator=(const Batch& other) {
    if (this == &other) return *this;
    first_ = other.first_;
    held_ = other.held_;
    values_ = other.values_;
    if (other.form_ == Form::tagged) {
      tagged_entries() = *other.entries_;
    } else if (entries_) {
      entries_->clear();
    }
    span_ = other.span_;
    form_ = other.form_;
    has_gaps_ = other.has_gaps_;
    return *this;
  }
  ~Batch() = default;

  // The entries it holds: items and tagged gaps (a sparse batch's implied gaps are not counted).
  [[nodiscard]] std::size_t size() const noexcept {
    return form_ == Form::tagged ? entries_->size() : values_.size();
  }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  [[nodiscard]] std::size_t capacity() const noexcept {
    return values_.capacity() + (entries_ ? entries_->capacity() : 0);
  }
  void reserve(std::size_t count) { values_.reserve(count); }

  // Empties the batch and keeps its storage, for reuse.
  void clear() noexcept {
    values_.clear();
    if (entries_) entries_->clear();
    form_ = Form::run;
    held_ = 0;
  }

  // Whether the batch is a run: whole items numbered first(), first() + 1, ..., in values().
  [[nodiscard]] bool is_run() const noexcept { return form_ == Form::run; }
  [[nodiscard]] std::uint64_t first() const noexcept { return first_; }
  [[nodiscard]] std::vector<T>& values() noexcept { return values_; }

  // Whether the batch is sparse: whole items with increasing numbers within [first(), first() +
  // span()), their values in values().
  [[nodiscard]] bool is_sparse() const noexcept { return form_ == Form::sparse; }
  [[nodiscard]] std::uint64_t span() const noexcept { return span_; }
  [[nodiscard]] bool has_gaps() const noexcept { return has_gaps_; }

  // The widest span of a sparse batch: one bit of its mask per number.
  static constexpr std::size_t max_span = 64;

  // A run's or a sparse batch's: how many numbers it covers from first() (a run's size, a sparse
  // batch's span), and give(T&) for each of its items in order.
  [[nodiscard]] std::uint64_t numbers() const noexcept {
    return form_ == Form::sparse ? span_ : values_.size();
  }
  template <class Give>
  void for_each_value(Give&& give) {
    for (T& value : values_)
      give(value);
  }

  // Makes this empty batch a sparse one over the numbers of `run` at positions [from, from +
  // span), and moves into it the values at positions from + i for each bit i of `held`: one
  // branch's share of a run that a route splits.
  // Contract: `run` is a run that holds those positions; 1 <= span <= max_span; `held` has no bit
  // at or past `span`.
  [[gnu::always_inline]] void take_sparse(Batch& run, std::size_t from, std::size_t span,
                                          std::uint64_t held, bool has_gaps) {
    CONVEYOR_CONTRACT(empty() && form_ == Form::run && run.form_ == Form::run && span >= 1 &&
                          span <= max_span && from + span <= run.values_.size() &&
                          (span == max_span || held >> span == 0),
                      "Batch::take_sparse: an empty batch, and a span of 1 to 64 within the run");
    form_ = Form::sparse;
    first_ = run.first_ + from;
    span_ = static_cast<std::uint8_t>(span);
    has_gaps_ = has_gaps;
    held_ = held;
    values_.reserve(static_cast<std::size_t>(std::popcount(held)));
    T* const values = run.values_.data() + from;
    for (std::uint64_t bits = held; bits != 0; bits &= bits - 1)
      append_item(values_, std::move(values[std::countr_zero(bits)]));
  }

  // Whether an item numbered `seq` would end the run this batch holds (rather than start or
  // continue it).
  [[nodiscard]] bool breaks_run(std::uint64_t seq) const noexcept {
    return form_ == Form::run && !values_.empty() && seq != first_ + values_.size();
  }

  // The run's values, to append whole items numbered first() + size() onwards in one loop; an
  // empty batch starts its run at `next`. Contract: the batch is a run that `next` continues.
  [[nodiscard]] std::vector<T>& extend_run(std::uint64_t next) noexcept {
    CONVEYOR_CONTRACT(form_ == Form::run && next != Tag::unsequenced_seq &&
                          (values_.empty() || next == first_ + values_.size()),
                      "Batch::extend_run: the numbers must continue the run");
    if (values_.empty()) first_ = next;
    return values_;
  }

  // Gives the run new numbers: first(), first() + 1, ... become first, first + 1, ...
  void renumber(std::uint64_t first) noexcept {
    CONVEYOR_CONTRACT(form_ == Form::run, "Batch::renumber: only a run can be renumbered");
    first_ = first;
  }

  // A whole item with number `seq` (the common case): continues the run without building an Entry,
  // whose tag and optional would be stored on the stack and read straight back.
  [[gnu::always_inline]] void append_value(std::uint64_t seq, T&& value) {
    if (form_ == Form::run && seq != Tag::unsequenced_seq) {
      if (values_.empty()) {
        first_ = seq;
        append_item(values_, std::move(value));
        return;
      }
      if (seq == first_ + values_.size()) {
        append_item(values_, std::move(value));
        return;
      }
    }
    append(Entry<T>{Tag::fresh(seq), std::move(value)});
  }

  [[gnu::always_inline]] void append(Entry<T>&& entry) {
    CONVEYOR_CONTRACT(form_ != Form::sparse, "Batch::append: not into a sparse batch");
    if (form_ == Form::run) {
      // An item without a number (from a flush hook) neither starts nor continues a run.
      const bool continues = entry.value && entry.tag.width == Tag::whole &&
                             entry.tag.sequenced() &&
                             (values_.empty() || entry.tag.seq == first_ + values_.size());
      if (continues) {
        if (values_.empty()) first_ = entry.tag.seq;
        append_item(values_, std::move(*entry.value));
        return;
      }
      to_tagged();
    }
    entries_->push_back(std::move(entry));
  }

  // Calls visit(tag, value) for each entry in order; `value` is null for a gap (a sparse batch's
  // too, one by one, if it has gaps).
  template <class Visit>
  void for_each(Visit&& visit) {
    if (form_ == Form::run) {
      for (std::size_t i = 0; i < values_.size(); ++i)
        visit(Tag::fresh(first_ + i), &values_[i]);
      return;
    }
    if (form_ == Form::sparse) {
      T* value = values_.data();
      if (has_gaps_) {
        for (std::uint64_t i = 0; i < span_; ++i)
          visit(Tag::fresh(first_ + i), (held_ >> i & 1U) != 0 ? value++ : nullptr);
      } else {
        for (std::uint64_t bits = held_; bits != 0; bits &= bits - 1)
          visit(Tag::fresh(first_ + static_cast<std::uint64_t>(std::countr_zero(bits))), value++);
      }
      return;
    }
    for (Entry<T>& entry : *entries_)
      visit(entry.tag, entry.value ? &*entry.value : nullptr);
  }

 private:
  void to_tagged() {
    std::vector<Entry<T>>& entries = tagged_entries();
    entries.reserve(std::max(values_.capacity(), values_.size() + 1));
    for (std::size_t i = 0; i < values_.size(); ++i) {
      entries.push_back(Entry<T>{Tag::fresh(first_ + i), std::move(values_[i])});
    }
    values_.clear();
    form_ = Form::tagged;
  }

  enum class Form : std::uint8_t { run, sparse, tagged };

  // The entries of the tagged form, made when the batch first takes that form.
  std::vector<Entry<T>>& tagged_entries() {
    if (!entries_) entries_ = std::make_unique<std::vector<Entry<T>>>();
    return *entries_;
  }

  // Small enough that a Parcel of a small item fills one cache line: an unbatched edge's lanes
  // are rings of Parcels (docs/design/batching.md).
  std::uint64_t first_ = 0;
  std::uint64_t held_ = 0;  // sparse: bit i, whether it holds number first_ + i
  // A run: values_[i] has number first_ + i; sparse: the values of held_'s numbers, in order.
  std::vector<T> values_;
  std::unique_ptr<std::vector<Entry<T>>> entries_;  // tagged; kept once made, for reuse
  std::uint8_t span_ = 0;                           // sparse
  Form form_ = Form::run;
  bool has_gaps_ = false;  // sparse
};

template <class T>
using Parcel = std::variant<Entry<T>, Batch<T>>;

}  // namespace conveyor::detail
