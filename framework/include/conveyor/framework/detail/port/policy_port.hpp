// PolicyPort<T, Tagging, Batching, Routes>: an OutPort that pushes into lanes, composed of one
// tagging policy (tagging_*.hpp) and one batching policy (batching_*.hpp), chosen when the edge is
// built (make_out_port.hpp) and inlined into the port's hot path, which has no switch on either;
// the policies call back into the port for what they share (the lanes, the numbers, the window).
// Each parcel goes where the edge's dispatch policy (dispatch_policy.hpp) puts it: into the lane
// the policy tries first, pushed here when it has room, or else by the policy. `Routes`: the port
// of a route's edge, which also sends each in-order branch the gaps it must not wait for; only a
// route instantiates it (route.hpp), so that no other port carries that code.
//
// Contract: OutPort's (out_port.hpp). The Dispatch outlives the port; a route's dispatch only with
// `Routes`.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/dispatch_policy.hpp"
#include "conveyor/framework/detail/out_port.hpp"
#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/framework/detail/port/delivery.hpp"
#include "conveyor/framework/options.hpp"
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/spsc_ring.hpp"

namespace conveyor::detail {

template <class T, template <class> class TaggingPolicy, template <class> class BatchingPolicy,
          bool Routes = false>
class PolicyPort final : public OutPort<T> {
  using Tagger = TaggingPolicy<T>;
  using Batcher = BatchingPolicy<T>;
  friend Tagger;
  friend Batcher;

 public:
  // out_port.hpp's run calls, where the dispatch is not keyed: a port takes runs unless it is a
  // sequencer, which numbers every item within the window; a source's port pulls.
  static constexpr bool takes_runs = Batcher::batches;
  static constexpr bool pulls = Batcher::batches && !Tagger::forwards;

  // `sequencer`: the port numbers for an in-order stage (with `gate`, unless that stage is fused).
  PolicyPort(WorkerContext& worker, WorkerCounters& counters,
             const typename OutPort<T>::Lanes& lanes, const Dispatch& dispatch, std::size_t batch,
             bool sequencer, WindowGate* gate)
      : OutPort<T>(
            worker, counters, lanes, gate, batch, Tagger::forwards,
            takes_runs && !sequencer &&
                (!dispatch.policy().keyed() || (dispatch.policy().routes() && Tagger::forwards)),
            pulls && !dispatch.policy().keyed()),
        lanes_(lanes.lanes),
        dispatch_(dispatch.policy()),
        keyed_(dispatch_.keyed()),
        // Gaps matter only on a numbered edge into an in-order stage.
        routes_(Routes && dispatch_.routes() && (sequencer || Tagger::forwards)),
        owed_(routes_ && !Batcher::batches ? lanes.lanes.size() : 0),
        first_try_(dispatch_.first_try()),
        batcher_(keyed_ ? lanes.lanes.size() : 1, batch) {
    CONVEYOR_CONTRACT(batch >= 1 && (batch == 1) != Batcher::batches,
                      "OutPort: the batching policy must match the batch size");
    CONVEYOR_CONTRACT(Routes || !dispatch_.routes(), "OutPort: a route's edge has a route's port");
  }

  bool emit(T&& value) override {
    this->counters().items_out.add(1);
    return tagger_.emit(*this, std::move(value));
  }

  bool flush() override {
    if constexpr (Routes) {
      if (!send_gap_sets()) return false;
    }
    return batcher_.flush(*this);
  }

  void close() override {
    if (!flush()) return;
    this->close_lanes();
  }

  bool send_run(Batch<T>&& run) override {
    if constexpr (takes_runs) {
      CONVEYOR_CONTRACT(run.is_run() && this->takes_runs_of(run.size()),
                        "OutPort::send_run: a run the port can take whole");
      this->counters().items_out.add(run.size());
      tagger_.number_run(*this, run);
      if constexpr (Routes) {
        if (routes_) return route_run(std::move(run));
      }
      return batcher_.send_run(*this, std::move(run));
    } else {
      CONVEYOR_CONTRACT(false, "OutPort::send_run: a run the port can take whole");
      return false;
    }
  }

 private:
  using PullSpace = typename OutPort<T>::PullSpace;

  std::optional<PullSpace> pull_space() override {
    if constexpr (pulls) {
      const std::uint64_t next = this->next_seq_;
      // Numbers only within the ordering window (waiting flushes what was collected).
      if (!this->window_open(next) && !wait_for_window(next)) return std::nullopt;
      auto [values, room] = batcher_.run_space(*this, next);
      if (this->gate() != nullptr) {
        room = std::min<std::uint64_t>(room, this->released() + this->gate()->window() - next);
      }
      return PullSpace{values, room};
    } else {
      CONVEYOR_CONTRACT(false, "OutPort::pull: a batched source's port");
      return std::nullopt;
    }
  }

  bool pulled(std::uint64_t taken, bool ship_if_full) override {
    this->next_seq_ += taken;
    this->counters().items_out.add(taken);
    if constexpr (pulls) {
      return !ship_if_full || batcher_.ship_if_full(*this);
    } else {
      return false;
    }
  }

  bool ended_item() override { return tagger_.end_item(*this); }

  // --- For the policies ---

  [[gnu::always_inline]] bool send(Entry<T>&& entry) {
    if constexpr (Routes) {
      if (routes_) return route(std::move(entry));
    }
    return batcher_.send(*this, std::move(entry));
  }
  [[gnu::always_inline]] bool send_value(std::uint64_t seq, T&& value) {
    if constexpr (Routes) {
      if (routes_) return route(Entry<T>{Tag::fresh(seq), std::move(value)});
    }
    return batcher_.send_value(*this, seq, std::move(value));
  }
  // A route: the entry into the lane of its branch, and a gap with its tag into a lane of every
  // other branch that restores order, so that its in-order stage does not wait for the number.
  bool route(Entry<T>&& entry) {
    const Tag tag = entry.tag;
    const std::size_t lane = lane_of(entry);
    if (!tag.sequenced()) return batcher_.send_to(*this, lane, std::move(entry));
    gap_lanes_.clear();
    dispatch_.gap_lanes(tag.seq, lane, gap_lanes_);
    if (!batcher_.send_to(*this, lane, std::move(entry))) return false;
    for (const std::size_t gap_lane : gap_lanes_) {
      if constexpr (!Batcher::batches) {
        // One by one, each gap would be a parcel of its own: they wait in a gap set.
        if (tag.width == Tag::whole) {
          if (!owe_gap(gap_lane, tag.seq)) return false;
          continue;
        }
      }
      if (!batcher_.send_to(*this, gap_lane, Entry<T>{tag, std::nullopt})) return false;
    }
    return true;
  }
  // Adds the gap `seq` to the set owed to `lane`, which goes out first if it cannot hold it. The
  // sets go out whenever the port flushes: before the worker sleeps, while it waits for the
  // window, and at the end.
  bool owe_gap(std::size_t lane, std::uint64_t seq) {
    OwedGaps& owed = owed_[lane];
    if (owed.bits != 0 && (seq < owed.first || seq - owed.first >= 64)) {
      if (!send_gap_set(lane)) return false;
    }
    if (owed.bits == 0) owed.first = seq;
    owed.bits |= std::uint64_t{1} << (seq - owed.first);
    return true;
  }
  bool send_gap_set(std::size_t lane) {
    OwedGaps& owed = owed_[lane];
    const Tag set = Tag::gap_set(owed.first, owed.bits);
    owed.bits = 0;
    return batcher_.send_to(*this, lane, Entry<T>{set, std::nullopt});
  }
  bool send_gap_sets() {
    for (std::size_t lane = 0; lane < owed_.size(); ++lane) {
      if (owed_[lane].bits != 0 && !send_gap_set(lane)) return false;
    }
    return true;
  }
  // A route's run, split by branch into sparse batches (parcel.hpp): for each stretch of up to 64
  // of the run's numbers, each branch that got an item of it, or restores order, gets one batch
  // over those numbers, in its lane for the first of them, instead of a gap for every item it did
  // not get. The run's storage holds a later split.
  bool route_run(Batch<T>&& run) {
    const std::uint64_t size = run.size();
    if (size == 0) return !this->worker().cancelled();
    // The branch of each item first (the predicates may throw), then each branch's share.
    const std::size_t branches = dispatch_.branches();
    picks_.resize(size);
    held_.resize(branches);
    dispatch_.branches_of(run.values().data(), size, picks_.data());
    bool sent = true;
    for (std::uint64_t from = 0; from < size && sent; from += Batch<T>::max_span) {
      const std::uint64_t span = std::min<std::uint64_t>(Batch<T>::max_span, size - from);
      // Each mask in a register, not read and written back per item; the default branch holds the
      // rest.
      const std::uint64_t all =
          span == Batch<T>::max_span ? ~std::uint64_t{0} : (std::uint64_t{1} << span) - 1;
      std::uint64_t taken = 0;
      for (std::uint32_t branch = 0; branch + 1 < branches; ++branch) {
        std::uint64_t mask = 0;
        for (std::uint64_t i = 0; i < span; ++i)
          mask |= static_cast<std::uint64_t>(picks_[from + i] == branch) << i;
        held_[branch] = mask;
        taken |= mask;
      }
      held_[branches - 1] = all & ~taken;
      for (std::uint32_t branch = 0; branch < branches; ++branch) {
        const bool ordered = dispatch_.branch_ordered(branch);
        if (held_[branch] == 0 && !ordered) continue;
        Batch<T> part = split_batch();
        part.take_sparse(run, from, span, held_[branch], ordered);
        Parcel<T> parcel(std::move(part));
        sent = sent && deliver(dispatch_.branch_lane(branch, run.first() + from),
                               ParcelDelivery<T>{lanes_, parcel, this});
      }
    }
    run.clear();
    split_spares_.push_back(std::move(run));
    return sent;
  }
  Batch<T> split_batch() {
    if (split_spares_.empty()) return this->fresh_batch();
    Batch<T> batch = std::move(split_spares_.back());
    split_spares_.pop_back();
    return batch;
  }
  // Into the lane the dispatch policy tries first, if it has room; otherwise the policy chooses.
  template <class Delivery>
  [[gnu::always_inline]] bool deliver(std::size_t lane, Delivery&& delivery) {
    if (first_try_ == FirstTry::finger) {
      const std::size_t first = this->finger();
      if (delivery(first, false)) {
        this->pushed_past_finger(first);
        return true;
      }
    } else if (first_try_ == FirstTry::keyed_lane && delivery(lane, false)) {
      this->pushed(lane);
      return true;
    }
    return dispatch_.deliver(*this, lane, LanePush(delivery));
  }
  [[nodiscard]] bool keyed() const noexcept { return keyed_; }
  // The lane of an entry, or of a whole item with number `seq`: 0 unless the dispatch is keyed.
  [[nodiscard, gnu::always_inline]] std::size_t lane_of(const Entry<T>& entry) const {
    if (!keyed_) return 0;
    return dispatch_.lane_of(entry.value ? &*entry.value : nullptr, entry.tag.seq, lanes_.size());
  }
  [[nodiscard, gnu::always_inline]] std::size_t lane_of(std::uint64_t seq, const T& value) const {
    if (!keyed_) return 0;
    return dispatch_.lane_of(&value, seq, lanes_.size());
  }
  [[nodiscard]] const LaneList<T>& lanes() const noexcept { return lanes_; }
  bool wait_for_window(std::uint64_t seq) {
    return OutLanes::wait_for_window(seq, [this] { return flush(); });
  }

  const LaneList<T> lanes_;
  const DispatchPolicy& dispatch_;
  const bool keyed_;
  const bool routes_;
  std::vector<std::size_t> gap_lanes_;
  struct OwedGaps {
    std::uint64_t first = 0;
    std::uint64_t bits = 0;  // bit i: the gap first + i
  };
  std::vector<OwedGaps> owed_;          // per lane, unbatched route only
  std::vector<std::uint32_t> picks_;    // route_run: each item's branch
  std::vector<std::uint64_t> held_;     // route_run: each branch's items of a stretch, as a mask
  std::vector<Batch<T>> split_spares_;  // storage for route_run's batches
  using FirstTry = DispatchPolicy::FirstTry;
  const FirstTry first_try_;
  Tagger tagger_;
  Batcher batcher_;
};

}  // namespace conveyor::detail
