// Unit tests for the sequence tags and the ReorderBuffer behind serial_in_order stages.
#include "conveyor/framework/detail/reorder_buffer.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/parcel.hpp"

namespace {

using conveyor::detail::Entry;
using conveyor::detail::ReorderBuffer;
using conveyor::detail::Tag;

struct Collect {
  std::vector<int>* out;
  void operator()(int&& value) const { out->push_back(value); }
};

TEST(TagTest, PartsCoverTheWholeWithoutOverlap) {
  const Tag tag = Tag::fresh(7);
  for (std::uint64_t count : {1U, 2U, 3U, 7U, 1000U}) {
    std::uint64_t covered = 0;
    std::uint64_t next_offset = tag.offset;
    for (std::uint64_t i = 0; i < count; ++i) {
      const Tag part = tag.part(i, count);
      EXPECT_EQ(part.seq, 7U);
      EXPECT_EQ(part.offset, next_offset);
      next_offset += part.width;
      covered += part.width;
    }
    EXPECT_EQ(covered, Tag::whole);
  }
}

TEST(TagTest, PartsOfPartsStillCoverTheirParent) {
  const Tag parent = Tag::fresh(1).part(1, 3);
  std::uint64_t covered = 0;
  for (std::uint64_t i = 0; i < 5; ++i)
    covered += parent.part(i, 5).width;
  EXPECT_EQ(covered, parent.width);
}

TEST(TagTest, SplittingBeyondOneUnitThrows) {
  Tag narrow{0, 0, 2};
  EXPECT_THROW((void)narrow.part(0, 3), std::length_error);
}

TEST(ReorderBufferTest, InOrderEntriesPassStraightThrough) {
  ReorderBuffer<int> buffer(4);
  std::vector<int> out;
  for (int i = 0; i < 10; ++i)
    buffer.add(Entry<int>{Tag::fresh(i), i}, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(buffer.released(), 10U);
  EXPECT_FALSE(buffer.holding());
}

TEST(ReorderBufferTest, EarlyEntriesWaitForTheirTurn) {
  ReorderBuffer<int> buffer(4);
  std::vector<int> out;
  buffer.add(Entry<int>{Tag::fresh(2), 20}, Collect{&out});
  buffer.add(Entry<int>{Tag::fresh(1), 10}, Collect{&out});
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(buffer.holding());
  buffer.add(Entry<int>{Tag::fresh(0), 0}, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0, 10, 20}));
  EXPECT_EQ(buffer.released(), 3U);
  EXPECT_FALSE(buffer.holding());
}

TEST(ReorderBufferTest, GapsReleaseTheirNumberWithoutAValue) {
  ReorderBuffer<int> buffer(4);
  std::vector<int> out;
  buffer.add(Entry<int>{Tag::fresh(1), 10}, Collect{&out});
  buffer.add(Entry<int>{Tag::fresh(0), std::nullopt}, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{10}));
  EXPECT_EQ(buffer.released(), 2U);
}

TEST(ReorderBufferTest, AGapSetReleasesEachOfItsNumbers) {
  ReorderBuffer<int> buffer(128);
  std::vector<int> out;
  // Gaps 1, 3 and 64: bits 0, 2 and 63 of a set that starts at 1.
  buffer.add(Entry<int>{Tag::gap_set(1, (1ULL << 0) | (1ULL << 2) | (1ULL << 63)), std::nullopt},
             Collect{&out});
  EXPECT_EQ(buffer.released(), 0U);
  buffer.add(Entry<int>{Tag::fresh(0), 0}, Collect{&out});
  EXPECT_EQ(buffer.released(), 2U);  // 0, and the gap 1
  buffer.add(Entry<int>{Tag::fresh(2), 2}, Collect{&out});
  EXPECT_EQ(buffer.released(), 4U);  // 2, and the gap 3
  for (int seq = 4; seq < 64; ++seq)
    buffer.add(Entry<int>{Tag::fresh(static_cast<std::uint64_t>(seq)), seq}, Collect{&out});
  EXPECT_EQ(buffer.released(), 65U);  // up to the gap 64 (bit 63)
  EXPECT_EQ(out.size(), 62U);
  EXPECT_FALSE(buffer.holding());
}

TEST(ReorderBufferTest, PartsComeOutByOffsetOnceWhole) {
  ReorderBuffer<int> buffer(4);
  std::vector<int> out;
  const Tag zero = Tag::fresh(0);
  buffer.add(Entry<int>{zero.part(2, 3), 2}, Collect{&out});
  buffer.add(Entry<int>{zero.part(0, 3), 0}, Collect{&out});
  EXPECT_TRUE(out.empty());
  // The middle part was split again, one of its halves dropped (a gap).
  const Tag middle = zero.part(1, 3);
  buffer.add(Entry<int>{middle.part(1, 2), std::nullopt}, Collect{&out});
  EXPECT_TRUE(out.empty());
  buffer.add(Entry<int>{middle.part(0, 2), 1}, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(buffer.released(), 1U);
}

TEST(ReorderBufferTest, SlotsAreReusedLapAfterLap) {
  ReorderBuffer<int> buffer(3);
  std::vector<int> out;
  for (int base = 0; base < 30; base += 3) {
    buffer.add(Entry<int>{Tag::fresh(base + 2), base + 2}, Collect{&out});
    buffer.add(Entry<int>{Tag::fresh(base + 1), base + 1}, Collect{&out});
    buffer.add(Entry<int>{Tag::fresh(base), base}, Collect{&out});
  }
  ASSERT_EQ(out.size(), 30U);
  for (int i = 0; i < 30; ++i)
    EXPECT_EQ(out[i], i);
}

TEST(ReorderBufferTest, EarlyWholeEntriesGapsAndPartsMixInOneWindow) {
  ReorderBuffer<int> buffer(5);
  std::vector<int> out;
  buffer.add(Entry<int>{Tag::fresh(4), 40}, Collect{&out});            // early, whole
  buffer.add(Entry<int>{Tag::fresh(3), std::nullopt}, Collect{&out});  // early gap
  buffer.add(Entry<int>{Tag::fresh(2).part(1, 2), 21}, Collect{&out});
  buffer.add(Entry<int>{Tag::fresh(1), 10}, Collect{&out});
  buffer.add(Entry<int>{Tag::fresh(2).part(0, 2), 20}, Collect{&out});
  EXPECT_TRUE(out.empty());
  buffer.add(Entry<int>{Tag::fresh(0), 0}, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0, 10, 20, 21, 40}));
  EXPECT_FALSE(buffer.holding());
  // The next lap reuses the same slots the other way round.
  buffer.add(Entry<int>{Tag::fresh(6).part(0, 2), 60}, Collect{&out});
  buffer.add(Entry<int>{Tag::fresh(6).part(1, 2), 61}, Collect{&out});
  buffer.add(Entry<int>{Tag::fresh(5), 50}, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0, 10, 20, 21, 40, 50, 60, 61}));
}

TEST(ReorderBufferTest, EarlyMoveOnlyItemsAreMovedOutOnce) {
  ReorderBuffer<std::unique_ptr<int>> buffer(3);
  std::vector<int> out;
  auto collect = [&](std::unique_ptr<int>&& value) { out.push_back(*value); };
  auto item = [](int value) { return std::make_unique<int>(value); };
  for (int lap = 0; lap < 3; ++lap) {
    const int base = 3 * lap;
    std::unique_ptr<int> late = item(base + 2);
    buffer.add(Tag::fresh(base + 2), &late, collect);
    std::unique_ptr<int> early = item(base + 1);
    buffer.add(Tag::fresh(base + 1), &early, collect);
    std::unique_ptr<int> first = item(base);
    buffer.add(Tag::fresh(base), &first, collect);
  }
  EXPECT_EQ(out, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
}

// The ring starts smaller than a large window and grows as numbers land beyond it, keeping the
// whole entries, gaps and parts it already holds, for an item type that cannot be assigned.
TEST(ReorderBufferTest, EarlyNumbersFarAheadGrowTheRingAndKeepWhatItHolds) {
  struct Item {
    std::unique_ptr<int> value;
    explicit Item(int v) : value(std::make_unique<int>(v)) {}
    Item(Item&&) noexcept = default;
    Item& operator=(Item&&) = delete;
  };
  constexpr int window = 1000;
  ReorderBuffer<Item> buffer(window);
  std::vector<int> out;
  auto collect = [&](Item&& item) { out.push_back(*item.value); };
  for (int lap = 0; lap < 2; ++lap) {
    const int base = lap * window;
    const std::size_t before = out.size();
    // From the far end of the window down, so the ring grows several times over held entries.
    for (int k = window - 1; k >= 1; --k) {
      const auto seq = static_cast<std::uint64_t>(base + k);
      if (k % 7 == 0) {
        buffer.add(Tag::fresh(seq), nullptr, collect);  // a gap
      } else if (k % 5 == 0) {
        Item second(10 * (base + k) + 1);
        buffer.add(Tag::fresh(seq).part(1, 2), &second, collect);
        Item first(10 * (base + k));
        buffer.add(Tag::fresh(seq).part(0, 2), &first, collect);
      } else {
        Item whole(10 * (base + k));
        buffer.add(Tag::fresh(seq), &whole, collect);
      }
    }
    EXPECT_EQ(out.size(), before);  // all waiting for `base`
    Item first(10 * base);
    buffer.add(Tag::fresh(static_cast<std::uint64_t>(base)), &first, collect);
    EXPECT_FALSE(buffer.holding());
  }
  std::vector<int> expected;
  for (int seq = 0; seq < 2 * window; ++seq) {
    const int k = seq % window;
    if (k != 0 && k % 7 == 0) continue;
    expected.push_back(10 * seq);
    if (k != 0 && k % 5 == 0) expected.push_back(10 * seq + 1);
  }
  EXPECT_EQ(out, expected);
}

TEST(ReorderBufferTest, UnsequencedEntriesAreKeptForTheEnd) {
  ReorderBuffer<int> buffer(2);
  std::vector<int> out;
  buffer.add(Entry<int>{Tag::unsequenced(), 99}, Collect{&out});
  buffer.add(Entry<int>{Tag::fresh(0), 0}, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0}));
  EXPECT_EQ(buffer.take_unsequenced(), (std::vector<int>{99}));
  EXPECT_TRUE(buffer.take_unsequenced().empty());
}

conveyor::detail::Batch<int> run_of(std::uint64_t first, std::initializer_list<int> values) {
  conveyor::detail::Batch<int> batch;
  std::uint64_t seq = first;
  for (int value : values)
    batch.append_value(seq++, int{value});
  return batch;
}

TEST(ReorderBufferTest, ARunInItsTurnGoesStraightThrough) {
  ReorderBuffer<int> buffer(8);
  std::vector<int> out;
  auto run = run_of(0, {0, 1, 2});
  buffer.add_batch(run, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(buffer.released(), 3U);
  EXPECT_FALSE(buffer.holding());
  EXPECT_TRUE(buffer.spare().empty());
  EXPECT_GT(run.capacity(), 0U);  // the caller keeps the storage
}

TEST(ReorderBufferTest, AnEarlyRunIsKeptWholeAndItsStorageComesBack) {
  ReorderBuffer<int> buffer(8);
  std::vector<int> out;
  auto late = run_of(3, {30, 40});
  buffer.add_batch(late, Collect{&out}, /*origin=*/1);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(buffer.holding());
  EXPECT_EQ(late.capacity(), 0U);  // the buffer took it
  auto early = run_of(0, {0, 10, 20});
  buffer.add_batch(early, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0, 10, 20, 30, 40}));
  EXPECT_EQ(buffer.released(), 5U);
  EXPECT_FALSE(buffer.holding());
  ASSERT_EQ(buffer.spare().size(), 1U);
  EXPECT_TRUE(buffer.spare().front().batch.empty());
  EXPECT_GT(buffer.spare().front().batch.capacity(), 0U);
  EXPECT_EQ(buffer.spare().front().origin, std::optional<std::size_t>(1));  // where it came from
}

// Takes whole runs through values(), and counts how many calls each way.
struct CollectRuns {
  std::vector<int>* out;
  int* one_calls;
  int* run_calls;
  void operator()(int&& value) const {
    ++*one_calls;
    out->push_back(value);
  }
  void values(conveyor::detail::Batch<int>& batch) const {
    ++*run_calls;
    batch.for_each_value([this](int& value) { out->push_back(value); });
  }
};

TEST(ReorderBufferTest, ADeliveryThatTakesRunsGetsEachRunWholeAndSlotsOneByOne) {
  ReorderBuffer<int> buffer(16);
  std::vector<int> out;
  int one_calls = 0;
  int run_calls = 0;
  const CollectRuns deliver{&out, &one_calls, &run_calls};
  auto parked = run_of(5, {50, 60, 70});  // early and full: kept whole
  buffer.add_batch(parked, deliver);
  buffer.add(Entry<int>{Tag::fresh(4), 40}, deliver);  // early: into its slot
  auto first = run_of(0, {0, 10, 20, 30});             // in its turn
  buffer.add_batch(first, deliver);
  EXPECT_EQ(out, (std::vector<int>{0, 10, 20, 30, 40, 50, 60, 70}));
  EXPECT_EQ(run_calls, 2);  // the run in its turn, then the kept one
  EXPECT_EQ(one_calls, 1);  // the slot's value
  EXPECT_FALSE(buffer.holding());
}

// A batch of `items` numbered from `first` (holding ten times their number), with room for
// `capacity`: a partial batch, as a producer flushes it before it sleeps.
conveyor::detail::Batch<int> partial_of(std::uint64_t first, int items, std::size_t capacity) {
  conveyor::detail::Batch<int> partial;
  partial.reserve(capacity);
  for (int i = 0; i < items; ++i)
    partial.append_value(first + i, static_cast<int>(first + i) * 10);
  return partial;
}

TEST(ReorderBufferTest, AShortEarlyRunIsKeptWholeWhileTheKeptStorageFitsTheWindow) {
  ReorderBuffer<int> buffer(16);
  std::vector<int> out;
  auto partial = partial_of(2, 2, 8);  // 8 items of storage kept: within the window's 16
  buffer.add_batch(partial, Collect{&out}, /*origin=*/1);
  EXPECT_EQ(partial.capacity(), 0U);  // the buffer took it
  EXPECT_TRUE(buffer.holding());
  auto first = run_of(0, {0, 10});
  buffer.add_batch(first, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0, 10, 20, 30}));
  EXPECT_FALSE(buffer.holding());
  ASSERT_EQ(buffer.spare().size(), 1U);
  EXPECT_GE(buffer.spare().front().batch.capacity(), 8U);
}

TEST(ReorderBufferTest, AShortEarlyRunGoesSlotBySlotOnceTheKeptStorageWouldPassTheWindow) {
  ReorderBuffer<int> buffer(16);
  std::vector<int> out;
  auto kept = partial_of(6, 2, 8);
  buffer.add_batch(kept, Collect{&out});
  EXPECT_EQ(kept.capacity(), 0U);  // 8 of 16 kept
  auto slotted = partial_of(2, 2, 16);
  buffer.add_batch(slotted, Collect{&out});
  EXPECT_GE(slotted.capacity(), 16U);  // 24 would pass 16: not taken, the caller recycles it
  auto full = run_of(4, {40, 50});     // at least half full: kept whatever the storage
  buffer.add_batch(full, Collect{&out});
  EXPECT_EQ(full.capacity(), 0U);
  EXPECT_TRUE(buffer.holding());
  auto first = run_of(0, {0, 10});
  buffer.add_batch(first, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0, 10, 20, 30, 40, 50, 60, 70}));
  EXPECT_FALSE(buffer.holding());
  EXPECT_EQ(buffer.spare().size(), 2U);
  // Once given out, the kept storage no longer counts: the next short batch is kept again.
  buffer.spare().clear();
  auto again = partial_of(10, 2, 16);
  buffer.add_batch(again, Collect{&out});
  EXPECT_EQ(again.capacity(), 0U);
}

TEST(ReorderBufferTest, RunsAndSingleEntriesReleaseEachOther) {
  ReorderBuffer<int> buffer(16);
  std::vector<int> out;
  auto third = run_of(5, {5, 6});
  buffer.add_batch(third, Collect{&out});
  buffer.add(Entry<int>{Tag::fresh(4), 4}, Collect{&out});
  auto second = run_of(2, {2, 3});
  buffer.add_batch(second, Collect{&out});
  EXPECT_TRUE(out.empty());
  // Number 0 goes out alone (1 is missing); once 1 arrives, the entry and both runs follow.
  buffer.add(Entry<int>{Tag::fresh(0), 0}, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0}));
  buffer.add(Entry<int>{Tag::fresh(1), 1}, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_FALSE(buffer.holding());
}

// A route's batch for one branch: the items numbered `seqs` (holding ten times their number) of
// a run over [first, first + span), split from that run as a route splits it.
conveyor::detail::Batch<int> sparse_of(std::uint64_t first, std::uint64_t span,
                                       std::initializer_list<std::uint64_t> seqs,
                                       std::size_t capacity = 4, bool has_gaps = true) {
  conveyor::detail::Batch<int> run;
  std::uint64_t held = 0;
  for (std::uint64_t seq = first; seq < first + span; ++seq)
    run.append_value(seq, static_cast<int>(seq * 10));
  for (const std::uint64_t seq : seqs)
    held |= std::uint64_t{1} << (seq - first);
  conveyor::detail::Batch<int> batch;
  batch.reserve(capacity);
  batch.take_sparse(run, 0, span, held, has_gaps);
  return batch;
}

TEST(ReorderBufferTest, ASparseBatchInItsTurnReleasesItsGapsToo) {
  ReorderBuffer<int> buffer(8);
  std::vector<int> out;
  auto batch = sparse_of(0, 4, {1, 2});
  buffer.add_batch(batch, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{10, 20}));
  EXPECT_EQ(buffer.released(), 4U);
  EXPECT_FALSE(buffer.holding());
}

TEST(ReorderBufferTest, AnEarlySparseBatchIsKeptWholeUntilItsFirstNumber) {
  ReorderBuffer<int> buffer(16);
  std::vector<int> out;
  auto late = sparse_of(4, 4, {5, 7});
  buffer.add_batch(late, Collect{&out}, /*origin=*/2);
  EXPECT_TRUE(buffer.holding());
  EXPECT_EQ(late.capacity(), 0U);    // the buffer took it
  auto empty = sparse_of(8, 2, {});  // only gaps: every item went to other branches
  buffer.add_batch(empty, Collect{&out}, /*origin=*/3);
  auto early = run_of(0, {0, 1, 2, 3});
  buffer.add_batch(early, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0, 1, 2, 3, 50, 70}));
  EXPECT_EQ(buffer.released(), 10U);
  EXPECT_FALSE(buffer.holding());
  ASSERT_EQ(buffer.spare().size(), 2U);  // both were parked, and both come back, each to its origin
  EXPECT_EQ(buffer.spare()[0].origin, std::optional<std::size_t>(2));
  EXPECT_EQ(buffer.spare()[1].origin, std::optional<std::size_t>(3));
}

TEST(ReorderBufferTest, AShortEarlySparseBatchGoesSlotBySlot) {
  ReorderBuffer<int> buffer(16);
  std::vector<int> out;
  auto short_one = sparse_of(2, 2, {3}, 32);  // its storage would pass the window
  buffer.add_batch(short_one, Collect{&out});
  EXPECT_GE(short_one.capacity(), 32U);  // not taken: the caller recycles it
  buffer.add(Entry<int>{Tag::fresh(0), 0}, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0}));
  buffer.add(Entry<int>{Tag::fresh(1), 1}, Collect{&out});
  EXPECT_EQ(out, (std::vector<int>{0, 1, 30}));
  EXPECT_EQ(buffer.released(), 4U);
  EXPECT_FALSE(buffer.holding());
}

TEST(ReorderBufferDeathTest, ASparseBatchReachingPastTheWindowIsAContractViolation) {
  ReorderBuffer<int> buffer(4);
  std::vector<int> out;
  auto batch = sparse_of(2, 3, {3});
  EXPECT_DEATH(buffer.add_batch(batch, Collect{&out}), "outside the window");
}

TEST(ReorderBufferDeathTest, ARunReachingPastTheWindowIsAContractViolation) {
  ReorderBuffer<int> buffer(4);
  std::vector<int> out;
  auto run = run_of(2, {2, 3, 4});
  EXPECT_DEATH(buffer.add_batch(run, Collect{&out}), "outside the window");
}

TEST(ReorderBufferDeathTest, ANumberOutsideTheWindowIsAContractViolation) {
  ReorderBuffer<int> buffer(2);
  std::vector<int> out;
  EXPECT_DEATH(buffer.add(Entry<int>{Tag::fresh(2), 2}, Collect{&out}), "outside the window");
}

}  // namespace

namespace {

using conveyor::detail::Batch;

std::vector<std::pair<Tag, int>> contents(Batch<int>& batch) {
  std::vector<std::pair<Tag, int>> result;
  batch.for_each(
      [&](const Tag& tag, int* value) { result.emplace_back(tag, value ? *value : -1); });
  return result;
}

TEST(BatchTest, ConsecutiveWholeEntriesStayARun) {
  Batch<int> batch;
  for (int i = 0; i < 5; ++i)
    batch.append(Entry<int>{Tag::fresh(10 + i), i});
  ASSERT_EQ(batch.size(), 5U);
  const auto seen = contents(batch);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(seen[i].first.seq, 10U + i);
    EXPECT_EQ(seen[i].first.width, Tag::whole);
    EXPECT_EQ(seen[i].second, i);
  }
}

TEST(BatchTest, AGapASplitOrAJumpTurnsItIntoTaggedEntries) {
  Batch<int> batch;
  batch.append(Entry<int>{Tag::fresh(1), 1});
  batch.append(Entry<int>{Tag::fresh(2), std::nullopt});  // a gap
  batch.append(Entry<int>{Tag::fresh(3).part(0, 2), 30});
  batch.append(Entry<int>{Tag::fresh(7), 7});
  const auto seen = contents(batch);
  ASSERT_EQ(seen.size(), 4U);
  EXPECT_EQ(seen[0].first.seq, 1U);
  EXPECT_EQ(seen[0].second, 1);
  EXPECT_EQ(seen[1].first.seq, 2U);
  EXPECT_EQ(seen[1].second, -1);
  EXPECT_EQ(seen[2].first.width, Tag::whole / 2);
  EXPECT_EQ(seen[3].first.seq, 7U);
}

TEST(BatchTest, ValuesAppendedInSequenceFormARun) {
  Batch<int> batch;
  EXPECT_FALSE(batch.breaks_run(9));  // an empty batch starts a run anywhere
  batch.append_value(9, 90);
  batch.append_value(10, 100);
  EXPECT_TRUE(batch.is_run());
  EXPECT_EQ(batch.first(), 9U);
  EXPECT_EQ(batch.values(), (std::vector<int>{90, 100}));
  EXPECT_FALSE(batch.breaks_run(11));
  EXPECT_TRUE(batch.breaks_run(20));
  // A value out of sequence still goes in, as a tagged entry.
  batch.append_value(20, 200);
  EXPECT_FALSE(batch.is_run());
  const auto seen = contents(batch);
  ASSERT_EQ(seen.size(), 3U);
  EXPECT_EQ(seen[2].first.seq, 20U);
  EXPECT_EQ(seen[2].second, 200);
}

TEST(BatchTest, AnItemWithoutANumberIsNeverARun) {
  Batch<int> batch;
  batch.append(Entry<int>{Tag::unsequenced(), 1});
  EXPECT_FALSE(batch.is_run());
  Batch<int> other;
  other.append_value(Tag::unsequenced_seq, 2);
  EXPECT_FALSE(other.is_run());
  // Nor does number 0 continue it (~0 + 1 wraps to 0).
  other.append_value(0, 3);
  const auto seen = contents(other);
  ASSERT_EQ(seen.size(), 2U);
  EXPECT_FALSE(seen[0].first.sequenced());
  EXPECT_EQ(seen[1].first.seq, 0U);
}

TEST(BatchTest, ASparseBatchVisitsItsItemsAndTheGapsBetweenThem) {
  Batch<int> batch = sparse_of(10, 5, {11, 12});
  EXPECT_TRUE(batch.is_sparse());
  EXPECT_FALSE(batch.is_run());
  EXPECT_EQ(batch.size(), 2U);
  const auto seen = contents(batch);
  ASSERT_EQ(seen.size(), 5U);
  const int want[] = {-1, 110, 120, -1, -1};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(seen[i].first.seq, 10U + i);
    EXPECT_EQ(seen[i].first.width, Tag::whole);
    EXPECT_EQ(seen[i].second, want[i]);
  }
}

TEST(BatchTest, ASparseBatchWithoutGapsVisitsOnlyItsItems) {
  Batch<int> batch = sparse_of(10, 5, {13}, 4, false);
  const auto seen = contents(batch);
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0].first.seq, 13U);
  batch.clear();
  EXPECT_TRUE(batch.is_run());
  batch.append_value(0, 1);
  EXPECT_EQ(contents(batch).size(), 1U);
}

// A lane's ring is an array of parcels: the batch alternative sets every slot's stride, batched or
// not (docs/design/batching.md).
TEST(BatchTest, AParcelOfASmallItemFillsOneCacheLine) {
  EXPECT_LE(sizeof(conveyor::detail::Parcel<std::uint64_t>), 64U);
}

// A batch's entries as comparable values: number, offset, width and value (-1 for a gap).
std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, int>> described(
    Batch<int>& batch) {
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, int>> result;
  for (const auto& [tag, value] : contents(batch))
    result.emplace_back(tag.seq, tag.offset, tag.width, value);
  return result;
}

TEST(BatchTest, ATaggedBatchCopiesAndMovesWhole) {
  Batch<int> batch;
  batch.append(Entry<int>{Tag::fresh(1), 1});
  batch.append(Entry<int>{Tag::fresh(2), std::nullopt});
  batch.append(Entry<int>{Tag::fresh(4), 4});
  Batch<int> copy(batch);
  Batch<int> assigned;
  assigned.append_value(7, 7);
  assigned = batch;
  ASSERT_EQ(described(batch).size(), 3U);
  EXPECT_EQ(described(copy), described(batch));
  EXPECT_EQ(described(assigned), described(batch));
  Batch<int> moved(std::move(batch));
  EXPECT_EQ(described(moved), described(copy));
  EXPECT_TRUE(batch.empty());  // NOLINT(bugprone-use-after-move): a batch moved from is empty
  EXPECT_TRUE(batch.is_run());
  // A run assigned over a tagged batch makes it a run, and the tagged storage stays for reuse.
  Batch<int> run;
  run.append_value(3, 30);
  assigned = run;
  EXPECT_TRUE(assigned.is_run());
  EXPECT_EQ(assigned.size(), 1U);
  EXPECT_GE(assigned.capacity(), 3U);
}

TEST(BatchTest, ASparseBatchTakesItsStretchOfTheRun) {
  Batch<int> run;
  for (std::uint64_t seq = 100; seq < 100 + 70; ++seq)
    run.append_value(seq, static_cast<int>(seq));
  // The second stretch of a run of 70: numbers 164..169; this branch holds 165 and 169.
  Batch<int> batch;
  batch.take_sparse(run, 64, 6, 0b100010U, true);
  EXPECT_EQ(batch.first(), 164U);
  EXPECT_EQ(batch.numbers(), 6U);
  EXPECT_EQ(batch.values(), (std::vector<int>{165, 169}));
  // A full stretch, every number held.
  Batch<int> whole;
  whole.take_sparse(run, 0, 64, ~std::uint64_t{0}, false);
  EXPECT_EQ(whole.size(), 64U);
  EXPECT_EQ(contents(whole).back().first.seq, 163U);
}

TEST(BatchDeathTest, ASparseBatchMustLieInItsRunWithinOneMask) {
  Batch<int> run;
  for (std::uint64_t seq = 10; seq < 15; ++seq)
    run.append_value(seq, 0);
  Batch<int> batch;
  EXPECT_DEATH(batch.take_sparse(run, 3, 3, 1, true), "a span of 1 to 64 within the run");
  EXPECT_DEATH(batch.take_sparse(run, 0, 0, 0, true), "a span of 1 to 64 within the run");
  EXPECT_DEATH(batch.take_sparse(run, 0, 2, 0b100, true), "a span of 1 to 64 within the run");
  batch.take_sparse(run, 0, 2, 0b10, true);
  EXPECT_DEATH(batch.take_sparse(run, 2, 2, 1, true), "an empty batch");
}

TEST(BatchTest, ClearKeepsTheStorageAndStartsARunAgain) {
  Batch<int> batch;
  batch.reserve(8);
  batch.append(Entry<int>{Tag::fresh(0), std::nullopt});
  batch.clear();
  EXPECT_TRUE(batch.empty());
  EXPECT_GE(batch.capacity(), 8U);
  batch.append(Entry<int>{Tag::fresh(5), 5});
  batch.append(Entry<int>{Tag::fresh(6), 6});
  EXPECT_EQ(contents(batch)[1].first.seq, 6U);
}

}  // namespace
