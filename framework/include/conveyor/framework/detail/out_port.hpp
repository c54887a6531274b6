// OutPort<T>: the producing side of one worker, as its loop and its Emit see it. What a port does
// with an item is decided by three policies chosen when the edge is built (port/make_out_port.hpp):
// how it tags items for in-order stages (port/tagging_*.hpp), whether it groups them into batches
// (port/batching_*.hpp), and which consumer gets each parcel (dispatch_policy.hpp). The concrete
// port (port/policy_port.hpp) composes them, so its hot path has no switch on any of them; the
// port of a stage with a fused successor (port/fused_port.hpp) hands everything to that step.
// What does not depend on T is OutLanes (out_lanes.hpp).
//
// Contract: used by its worker only. `emit` returns false once the pipeline is cancelled (the item
// is dropped). `begin_item` / `end_item` bracket what the worker emits for one input, for a port
// that forwards its inputs' tags. `flush` sends partial batches (before the worker sleeps or
// ends); `close` ends the stream on every lane and is not called after a cancellation. The run
// calls (`send_run`, `pull`) only when `takes_runs_of` / `pulls` say so.
// Memory ordering: that of the lanes (sync/spsc_ring.hpp) and doorbells it uses; the port itself
// holds no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/out_lanes.hpp"
#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/sync/detail/contract.hpp"
#include "conveyor/sync/spsc_ring.hpp"

namespace conveyor::detail {

// How an OutPort numbers what it emits (chosen by the pipeline's planner).
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

  virtual ~OutPort() = default;

  // The worker's code emits an item. False once the pipeline is cancelled.
  virtual bool emit(T&& value) = 0;

  // The worker starts and ends processing one input with tag `tag`.
  void begin_item(const Tag& tag) noexcept {
    current_ = tag;
    in_item_ = forwards_ && tag.sequenced();
    if (in_item_) began_item();
  }
  bool end_item() {
    if (!in_item_) return true;
    in_item_ = false;
    return ended_item();
  }

  // Sends every partial batch. Called before the worker sleeps and before it closes.
  virtual bool flush() = 0;
  // End of stream: the done sentinel on every lane.
  virtual void close() = 0;

  // --- Whole runs (batch-level fast paths) ---
  //
  // A run of whole items can go out as one parcel, without the per-item path, when items go out
  // batched, no item needs its own lane (not by_key; a route on a numbered edge splits the run by
  // branch instead) and the port does not number items for an in-order stage itself (not a
  // sequencer; `pull` handles sources).

  // Whether send_run() takes a run of `size` items.
  [[nodiscard]] bool takes_runs_of(std::size_t size) const noexcept {
    return takes_runs_ && size <= batch_;
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
  virtual bool send_run(Batch<T>&& run) = 0;

  // Whether pull() may run: a batched port, not by_key, that does not forward tags.
  [[nodiscard]] bool pulls() const noexcept { return pulls_; }

  // A source's loop for a pulled source (`next()` returns std::optional<T>): fills batches straight
  // from `next` until it returns nullopt, a stop is requested or the pipeline is cancelled, which
  // it checks before every call, as the per-item path does. Returns false if it ended early (stop
  // or cancellation), true at the end of the source.
  // Contract: pulls().
  template <class Next>
  bool pull(Next&& next) {
    CONVEYOR_CONTRACT(pulls(), "OutPort::pull: a batched source's port");
    for (;;) {
      std::optional<PullSpace> space = pull_space();
      if (!space) return false;
      std::uint64_t taken = 0;
      bool stopped = false;
      bool ended = false;
      try {
        for (; taken < space->room; ++taken) {
          if (worker().cancelled() || worker().stop_requested()) {
            stopped = true;
            break;
          }
          std::optional<T> item = next();
          if (!item) {
            ended = true;
            break;
          }
          append_item(*space->values, std::move(*item));
        }
      } catch (...) {
        // The numbers and the count follow what was taken.
        (void)pulled(taken, false);
        throw;
      }
      if (stopped) {
        (void)pulled(taken, false);
        return false;
      }
      if (ended) {
        (void)pulled(taken, false);
        return true;
      }
      if (!pulled(taken, true)) return false;
    }
  }

 protected:
  // A port with lanes: `forwards` if it forwards its inputs' tags; `takes_runs` and `pulls` as the
  // run calls above; `batch`, its batch size.
  OutPort(WorkerContext& worker, WorkerCounters& counters, const Lanes& lanes, WindowGate* gate,
          std::size_t batch, bool forwards, bool takes_runs, bool pulls)
      : OutLanes(worker, counters, {lanes.lanes.begin(), lanes.lanes.end()}, lanes.consumers, gate),
        returns_(lanes.returns),
        batch_(batch),
        forwards_(forwards),
        takes_runs_(takes_runs),
        pulls_(pulls) {}

  // A port without lanes (fused_port.hpp).
  OutPort(WorkerContext& worker, WorkerCounters& counters, bool forwards) noexcept
      : OutLanes(worker, counters), forwards_(forwards) {}
  // A port without lanes that sends its runs on through `inner` (branch_port.hpp): it takes the
  // runs `inner` takes, and reuses the batches that come back to it (the same worker pops them).
  OutPort(WorkerContext& worker, WorkerCounters& counters, bool forwards, const OutPort& inner)
      : OutLanes(worker, counters),
        returns_(inner.returns_),
        batch_(inner.batch_),
        forwards_(forwards),
        takes_runs_(inner.takes_runs_) {}

  // Where pull() puts the next items: the values of the run being collected, and how many more
  // it may take (no more than the batch and the ordering window allow).
  struct PullSpace {
    std::vector<T>* values;
    std::uint64_t room;
  };
  // nullopt if the port was cancelled (or the worker stopped) while waiting for the window.
  virtual std::optional<PullSpace> pull_space() { return std::nullopt; }
  // pull() appended `taken` values; `ship_if_full`: send the batch if it is full. False once
  // cancelled.
  virtual bool pulled(std::uint64_t /*taken*/, bool /*ship_if_full*/) { return false; }

  // A forwarding port: an input with a sequenced tag begins and ends (current_tag()).
  virtual void began_item() noexcept {}
  virtual bool ended_item() { return true; }
  [[nodiscard]] const Tag& current_tag() const noexcept { return current_; }
  [[nodiscard]] bool in_item() const noexcept { return in_item_; }

  // The next number of a port that numbers its own items.
  std::uint64_t next_seq_ = 0;

 private:
  const std::vector<sync::SpscRing<Batch<T>>*> returns_;
  const std::size_t batch_ = 1;
  const bool forwards_;
  const bool takes_runs_ = false;
  const bool pulls_ = false;
  Tag current_{};
  bool in_item_ = false;
};

}  // namespace conveyor::detail
