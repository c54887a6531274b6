// OutPort<T>: the producing side of one worker: it tags what the worker emits (parcel.hpp), groups
// it into batches, picks the consumer worker by the edge's dispatch, and pushes into that worker's
// lane, sleeping on its own doorbell while every lane it may use is full.
//
// - Tags: a sequencer numbers each item, once the ordering window has room; a stage between a
//   sequencer and an in-order stage sends what it emits for one input with that input's tag
//   (`begin_item` / `end_item`). Details: docs/design/ordering.md.
// - Dispatch: round_robin, by_key (and by_partition), broadcast or least_loaded (options.hpp).
// - Batching (batch B > 1): entries go out B at a time, and whenever the worker is about to sleep
//   or ends (`flush`). Details: docs/design/batching.md.
// - Fusion: a port whose successor is fused (fused_step.hpp) has no lanes and hands everything to
//   the successor's step. Details: docs/design/fusion.md.
// What does not depend on T is OutLanes (out_lanes.hpp).
//
// Contract: used by its worker only. `emit` returns false once the pipeline is cancelled (the item
// is dropped). `close` ends the stream on every lane; it is not called after a cancellation.
// Memory ordering: that of the lanes (sync/spsc_ring.hpp) and doorbells it uses; the port itself
// holds no shared state.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/fused_step.hpp"
#include "conveyor/framework/detail/out_lanes.hpp"
#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/framework/detail/window_gate.hpp"
#include "conveyor/framework/detail/worker_context.hpp"
#include "conveyor/framework/options.hpp"
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/doorbell.hpp"
#include "conveyor/sync/spsc_ring.hpp"

namespace conveyor::detail {

// How an OutPort numbers what it emits.
enum class Tagging {
  none,       // no in-order stage reads this stream before the next sequencer
  sequencer,  // the source or a serial_in_order stage: fresh numbers
  forward,    // a stage inside an ordered run: its inputs' tags, split or turned into gaps
};

template <class T>
class OutPort : public OutLanes {
 public:
  struct Lanes {
    std::vector<sync::SpscRing<Parcel<T>>*> lanes;   // one per consumer worker
    std::vector<sync::SpscRing<Batch<T>>*> returns;  // emptied batches coming back, same order
    std::vector<Doorbell*> consumers;                // their doorbells, same order
  };

  OutPort(WorkerContext& worker, WorkerCounters& counters, Lanes lanes, const Dispatch& dispatch,
          std::size_t batch, Tagging tagging, WindowGate* gate)
      : OutLanes(worker, counters, {lanes.lanes.begin(), lanes.lanes.end()},
                 std::move(lanes.consumers), gate),
        lanes_(std::move(lanes.lanes)),
        returns_(std::move(lanes.returns)),
        dispatch_(dispatch),
        batch_(batch),
        tagging_(tagging),
        collected_(dispatch.kind() == Dispatch::Kind::by_key ? lanes_.size() : 1) {
    CONVEYOR_CONTRACT(batch_ >= 1, "OutPort: the batch size must be at least 1");
  }

  // The port of a stage whose successor is fused into it: `tagging` is that of the port at the
  // fused group's end.
  OutPort(WorkerContext& worker, WorkerCounters& counters, std::unique_ptr<FusedInput<T>> next,
          Tagging tagging)
      : OutLanes(worker, counters),
        dispatch_(unused_dispatch()),
        batch_(1),
        tagging_(tagging),
        next_(std::move(next)) {
    CONVEYOR_CONTRACT(next_ != nullptr, "OutPort: a fused port needs its successor's step");
  }

  // The worker's stage code emits an item. False once the pipeline is cancelled.
  bool emit(T&& value) {
    counters().items_out.add(1);
    if (next_) return next_->push(std::move(value));
    switch (tagging_) {
      case Tagging::sequencer: {
        const std::optional<Tag> tag = next_sequence_tag();
        // No number without room in the window: the item is dropped on cancellation.
        if (!tag) return false;
        return send_value(tag->seq, std::move(value));
      }
      case Tagging::forward:
        if (in_item_) {
          if (first_) {
            pending_.push_back(std::move(value));
          } else {
            first_.emplace(std::move(value));
          }
          return !worker().cancelled();
        }
        return send(Entry<T>{Tag::unsequenced(), std::move(value)});
      case Tagging::none:
        break;
    }
    // Nobody reads these numbers; they only keep batches in their compact run form.
    return send_value(next_seq_++, std::move(value));
  }

  // Forwarding ports: the worker starts and ends processing one input with tag `tag`.
  void begin_item(const Tag& tag) noexcept {
    current_ = tag;
    in_item_ = tagging_ == Tagging::forward && tag.sequenced();
    if (next_ && in_item_) next_->begin_item(tag);
  }

  bool end_item() {
    if (!in_item_) return true;
    in_item_ = false;
    if (next_) return next_->end_item();
    // The first output waits in first_, later ones in pending_: one output, the common case,
    // costs no vector, and goes out as a plain value when its input was a whole item.
    if (!first_) return send(Entry<T>{current_, std::nullopt});
    if (pending_.empty()) {
      // Out of first_ before it is sent, so that a throw leaves no moved-from value behind.
      T value = std::move(*first_);
      first_.reset();
      return current_.width == Tag::whole ? send_value(current_.seq, std::move(value))
                                          : send(Entry<T>{current_, std::move(value)});
    }
    const std::size_t count = pending_.size() + 1;
    std::optional<T> first = std::exchange(first_, std::nullopt);
    bool sent = send(Entry<T>{current_.part(0, count), std::move(first)});
    for (std::size_t i = 1; i < count && sent; ++i) {
      sent = send(Entry<T>{current_.part(i, count), std::move(pending_[i - 1])});
    }
    pending_.clear();
    return sent;
  }

  // Sends every partial batch. Called before the worker sleeps and before it closes.
  bool flush() {
    if (next_) return next_->flush();
    if (batch_ == 1) return true;
    for (std::size_t i = 0; i < collected_.size(); ++i) {
      if (collected_[i].empty()) continue;
      if (!ship(i, i)) return false;
    }
    return true;
  }

  // End of stream: the done sentinel on every lane.
  void close() {
    if (next_) {
      next_->finish();
      return;
    }
    if (!flush()) return;
    close_lanes();
  }

  // --- Whole runs (batch-level fast paths) ---
  //
  // A run of whole items can go out as one parcel, without the per-item path, when items go out
  // batched, no item needs its own lane (round-robin or broadcast, not by_key) and the port does
  // not number items for an in-order stage itself (not a sequencer; `pull` handles sources).

  // Whether send_run() takes a run of `size` items.
  [[nodiscard]] bool takes_runs_of(std::size_t size) const noexcept {
    return batch_ > 1 && size <= batch_ && dispatch_.kind() != Dispatch::Kind::by_key &&
           tagging_ != Tagging::sequencer;
  }

  // Storage for a run: a batch that came back from a consumer, or a new one.
  [[nodiscard]] Batch<T> fresh_batch() {
    if (std::optional<Batch<T>> returned = returned_batch()) return std::move(*returned);
    Batch<T> batch;
    batch.reserve(batch_);
    return batch;
  }

  // A batch that came back from a consumer, if one did (not a new one).
  [[nodiscard]] std::optional<Batch<T>> returned_batch() {
    for (sync::SpscRing<Batch<T>>* returned : returns_) {
      if (std::optional<Batch<T>> batch = returned->try_pop()) return batch;
    }
    return std::nullopt;
  }

  // Sends `run`, the outputs of a run of inputs, one per input and numbered as they were (a
  // forwarding port keeps the numbers; an untagged one gives its own). False once cancelled.
  // Contract: takes_runs_of(run.size()), and run.is_run().
  bool send_run(Batch<T>&& run) {
    CONVEYOR_CONTRACT(run.is_run() && takes_runs_of(run.size()),
                      "OutPort::send_run: a run the port can take whole");
    counters().items_out.add(run.size());
    if (tagging_ == Tagging::none) {
      run.renumber(next_seq_);
      next_seq_ += run.size();
    }
    // What the per-item path collected goes first, so that both stay runs.
    if (!collected_[0].empty() && !ship(0, 0)) return false;
    if (run.empty()) return !worker().cancelled();
    return dispatch_parcel(Parcel<T>(std::move(run)), 0);
  }

  // Whether pull() may run: a batched port, not by_key.
  [[nodiscard]] bool pulls() const noexcept {
    return batch_ > 1 && dispatch_.kind() != Dispatch::Kind::by_key && tagging_ != Tagging::forward;
  }

  // A source's loop for a pulled source (`next()` returns std::optional<T>): fills batches straight
  // from `next` until it returns nullopt, a stop is requested or the pipeline is cancelled, which
  // it checks before every call, as the per-item path does. Returns false if it ended early (stop
  // or cancellation), true at the end of the source.
  // Contract: pulls().
  template <class Next>
  bool pull(Next&& next) {
    CONVEYOR_CONTRACT(pulls(), "OutPort::pull: a batched source's port");
    for (;;) {
      // Numbers only within the ordering window (waiting flushes what was collected).
      if (tagging_ == Tagging::sequencer && !window_open(next_seq_) &&
          !wait_for_window(next_seq_)) {
        return false;
      }
      Batch<T>& batch = collected_[0];
      if (batch.capacity() == 0) batch = fresh_batch();
      std::uint64_t room = batch_ - batch.size();
      if (gate() != nullptr && tagging_ == Tagging::sequencer) {
        room = std::min<std::uint64_t>(room, released() + gate()->window() - next_seq_);
      }
      std::vector<T>& values = batch.extend_run(next_seq_);
      std::uint64_t taken = 0;
      bool stopped = false;
      bool ended = false;
      try {
        for (; taken < room; ++taken) {
          if (worker().cancelled() || worker().stop_requested()) {
            stopped = true;
            break;
          }
          std::optional<T> item = next();
          if (!item) {
            ended = true;
            break;
          }
          values.push_back(std::move(*item));
        }
      } catch (...) {
        // The numbers and the count follow what was taken.
        took(taken);
        throw;
      }
      took(taken);
      if (stopped) return false;
      if (ended) return true;
      if (batch.size() >= batch_ && !ship(0, 0)) return false;
    }
  }

 private:
  static const Dispatch& unused_dispatch() {
    static const Dispatch dispatch = Dispatch::round_robin();
    return dispatch;
  }

  // The next number, once the window has room for it; nullopt if cancelled first.
  [[gnu::always_inline]] std::optional<Tag> next_sequence_tag() {
    const std::uint64_t seq = next_seq_;
    if (!window_open(seq) && !wait_for_window(seq)) return std::nullopt;
    ++next_seq_;
    return Tag::fresh(seq);
  }

  bool wait_for_window(std::uint64_t seq) {
    return OutLanes::wait_for_window(seq, [this] { return flush(); });
  }

  [[gnu::always_inline]] bool send(Entry<T>&& entry) {
    const std::size_t destination = destination_of(entry);
    if (batch_ == 1) return dispatch_parcel(Parcel<T>(std::move(entry)), destination);
    const std::size_t collection = dispatch_.kind() == Dispatch::Kind::by_key ? destination : 0;
    return collect(collection, destination,
                   [&](Batch<T>& batch) { batch.append(std::move(entry)); });
  }

  // send() for a whole item with number `seq`.
  [[gnu::always_inline]] bool send_value(std::uint64_t seq, T&& value) {
    if (batch_ == 1 && dispatch_.kind() == Dispatch::Kind::round_robin) {
      // Built in its slot (SpscRing::try_emplace).
      return push_round_robin([&](sync::SpscRing<Parcel<T>>& lane) {
        return lane.try_emplace(std::in_place_index<0>, WholeItem<T>{seq, value});
      });
    }
    if (batch_ == 1 || dispatch_.kind() == Dispatch::Kind::by_key) {
      return send(Entry<T>{Tag::fresh(seq), std::move(value)});
    }
    // A run of several items that ends here (behind round-robin dispatch, the next input came from
    // elsewhere) goes out as it is, so that this batch and the next stay runs, which an in-order
    // consumer takes whole instead of item by item.
    if (collected_[0].size() > 1 && collected_[0].breaks_run(seq) && !ship(0, 0)) return false;
    return collect(0, 0, [&](Batch<T>& batch) { batch.append_value(seq, std::move(value)); });
  }

  // Adds to collection `collection` (given storage first if it has none) with `append`, and ships
  // it to `destination` once it holds a whole batch.
  template <class Append>
  [[gnu::always_inline]] bool collect(std::size_t collection, std::size_t destination,
                                      Append&& append) {
    Batch<T>& batch = collected_[collection];
    if (batch.capacity() == 0) batch = fresh_batch();
    append(batch);
    if (batch.size() < batch_) return !worker().cancelled();
    return ship(collection, destination);
  }

  // Sends collection `collection` to `destination`, leaving it without storage.
  bool ship(std::size_t collection, std::size_t destination) {
    Parcel<T> parcel(std::move(collected_[collection]));
    collected_[collection] = Batch<T>();
    return dispatch_parcel(std::move(parcel), destination);
  }

  // pull() took `count` items with the next numbers.
  void took(std::uint64_t count) noexcept {
    next_seq_ += count;
    counters().items_out.add(count);
  }

  // by_key: the lane of the entry's key; otherwise unused.
  [[gnu::always_inline]] std::size_t destination_of(const Entry<T>& entry) const {
    if (dispatch_.kind() != Dispatch::Kind::by_key || lanes_.size() == 1) return 0;
    const std::uint64_t hash = entry.value ? dispatch_.hash(&*entry.value) : entry.tag.seq;
    return static_cast<std::size_t>(hash % lanes_.size());
  }

  bool dispatch_parcel(Parcel<T>&& parcel, std::size_t destination) {
    switch (dispatch_.kind()) {
      case Dispatch::Kind::round_robin:
        return push_round_robin(parcel);
      case Dispatch::Kind::by_key:
        return push_into(destination, parcel);
      case Dispatch::Kind::broadcast:
        return push_everywhere(parcel);
      case Dispatch::Kind::least_loaded:
        return push_least_loaded(parcel);
    }
    return false;
  }

  // Into the lane that holds the fewest parcels; waits while every lane is full.
  bool push_least_loaded(Parcel<T>& parcel) {
    for (;;) {
      const std::size_t lane = least_loaded();
      if (lane < lanes_.size() && lanes_[lane]->try_push(parcel)) {
        pushed_past_finger(lane);
        return true;
      }
      if (!wait_for_least_loaded()) return false;
    }
  }

  bool push_round_robin(Parcel<T>& parcel) {
    return push_round_robin([&](sync::SpscRing<Parcel<T>>& lane) { return lane.try_push(parcel); });
  }

  // Round-robin with `try_push(lane)`, which pushes into `lane` if it has room.
  template <class TryPush>
  [[gnu::always_inline]] bool push_round_robin(TryPush&& try_push) {
    const std::size_t count = lanes_.size();
    for (;;) {
      const std::size_t first = finger();
      for (std::size_t step = 0; step < count; ++step) {
        std::size_t lane = first + step;
        if (lane >= count) lane -= count;
        if (try_push(*lanes_[lane])) {
          pushed_past_finger(lane);
          return true;
        }
      }
      if (!wait_for_room()) return false;
    }
  }

  bool push_into(std::size_t lane, Parcel<T>& parcel) {
    while (!lanes_[lane]->try_push(parcel)) {
      if (!wait_for_room(lane)) return false;
    }
    pushed(lane);
    return true;
  }

  bool push_everywhere(Parcel<T>& parcel) {
    if constexpr (std::is_copy_constructible_v<T>) {
      for (std::size_t lane = 0; lane + 1 < lanes_.size(); ++lane) {
        Parcel<T> copy(parcel);
        if (!push_into(lane, copy)) return false;
      }
      return push_into(lanes_.size() - 1, parcel);
    } else {
      // Rejected when the pipeline is built.
      CONVEYOR_CONTRACT(lanes_.size() == 1, "OutPort: broadcast needs copyable items");
      return push_into(0, parcel);
    }
  }

  const std::vector<sync::SpscRing<Parcel<T>>*> lanes_;
  const std::vector<sync::SpscRing<Batch<T>>*> returns_;
  const Dispatch& dispatch_;
  const std::size_t batch_;
  const Tagging tagging_;

  // Sequencer.
  std::uint64_t next_seq_ = 0;
  // Forwarding.
  Tag current_{};
  bool in_item_ = false;
  std::optional<T> first_;
  std::vector<T> pending_;
  // Batching: one collection per lane for by_key, one in all otherwise.
  std::vector<Batch<T>> collected_ = std::vector<Batch<T>>(1);
  // Fusion: the successor's step, which takes every item.
  std::unique_ptr<FusedInput<T>> next_;
};

}  // namespace conveyor::detail
