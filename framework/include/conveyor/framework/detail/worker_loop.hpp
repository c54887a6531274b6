// The loops a consuming worker runs: take parcels from its InPort until the end of the stream,
// hand their items to the stage's code (in arrival order, or through a reorder buffer in source
// order), and time what it does (busy_clock.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "conveyor/framework/detail/busy_clock.hpp"
#include "conveyor/framework/detail/function_ref.hpp"
#include "conveyor/framework/detail/in_port.hpp"
#include "conveyor/framework/detail/parcel.hpp"
#include "conveyor/framework/detail/reorder_buffer.hpp"
#include "conveyor/framework/detail/window_gate.hpp"
#include "conveyor/framework/detail/worker_context.hpp"
#include "conveyor/framework/detail/worker_counters.hpp"
#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::detail {

// Calls `visit(tag, value)` for every entry of `parcel`; `value` is null for a gap.
template <class T, class Visit>
void for_each_entry(Parcel<T>& parcel, Visit&& visit) {
  if (auto* entry = std::get_if<Entry<T>>(&parcel)) {
    visit(entry->tag, entry->value ? &*entry->value : nullptr);
    return;
  }
  std::get<Batch<T>>(parcel).for_each(visit);
}

// A batch's emptied storage goes back to its producer (unless a reorder buffer kept it).
template <class Input, class T>
void recycle(Input& in, Parcel<T>& parcel) {
  auto* batch = std::get_if<Batch<T>>(&parcel);
  if (batch != nullptr && batch->capacity() > 0) in.recycle(std::move(*batch));
}

// Calls `one(i)` for i in [0, count), one run's items into the stage's code, and counts them
// once, as the per-item path would, also when one throws: the item that threw reached the code
// (items_in), and for a stage that `emits` one output per item, every output before it went out.
template <class One>
void for_each_counted(std::size_t count, WorkerCounters& counters, bool emits, One&& one) {
  std::size_t given = 0;
  try {
    for (; given < count; ++given)
      one(given);
  } catch (...) {
    counters.items_in.add(given + 1);
    if (emits) counters.items_out.add(given);
    throw;
  }
  counters.items_in.add(given);
}

// `Input` is the worker's InPort, or what wraps it with the same interface (try_pop, pop,
// recycle; async_worker.hpp).
//
// Arrival order. `take_run(batch)` may process a batch in run form whole (every entry an item)
// and return true; it may move the batch's storage away. Otherwise `handle(tag, value)` processes
// each entry (a gap too: value null) and returns how many items it gave the stage's code (0 or
// 1). Returns false if the pipeline was cancelled.
template <class Input, class TakeRun, class Handle, class BeforeSleep>
bool consume_unordered(Input& in, WorkerContext& worker, TakeRun&& take_run, Handle&& handle,
                       BeforeSleep&& before_sleep) {
  using T = typename Input::item_type;
  BusyClock clock(worker);
  for (;;) {
    std::optional<Parcel<T>> parcel = in.try_pop();
    if (!parcel) {
      clock.record(0);
      std::optional<Parcel<T>> waited = in.pop(before_sleep);
      clock.restart();
      if (!waited) return !worker.cancelled();
      parcel.emplace(std::move(*waited));
    }
    std::uint64_t items = 0;
    auto* batch = std::get_if<Batch<T>>(&*parcel);
    const std::uint64_t size = batch != nullptr ? batch->size() : 0;
    if (batch != nullptr && batch->is_run() && take_run(*batch)) {
      items = size;
    } else {
      for_each_entry(*parcel, [&](const Tag& tag, T* value) { items += handle(tag, value); });
    }
    recycle(in, *parcel);
    clock.parcel_done(items);
    if (worker.cancelled()) return false;
  }
}

// What a serial_in_order stage's code takes from the in-order loop: one item (`one`), or every
// value of a run or sparse batch whose turn has come (`values`: one call per batch, the loop over
// its values in the stage's own code). Each returns how many items to time with the worker's busy
// time. Behind references, the loop and its reorder buffer are compiled once per item type and
// input rather than once per stage.
template <class T>
struct InOrderDelivery {
  FunctionRef<std::uint64_t(T&&)> one;
  FunctionRef<std::uint64_t(Batch<T>&)> values;
};

// Source order, restored through `reorder`, each item given to `deliver`. Advances the window gate
// as numbers are released. At the end, items without a number follow.
template <class Input, class T>
bool consume_in_order_through(Input& in, WorkerContext& worker, ReorderBuffer<T>& reorder,
                              WindowGate* gate, InOrderDelivery<T> deliver,
                              FunctionRef<void()> before_sleep) {
  BusyClock clock(worker);
  // The gate outlives the worker.
  if (gate != nullptr) {
    worker.add_recheck(
        {gate, [](const void* self) { static_cast<const WindowGate*>(self)->recheck(); }});
  }
  std::uint64_t items = 0;
  // What the reorder buffer gives out, counted.
  struct Give {
    InOrderDelivery<T> to;
    std::uint64_t* items;
    void operator()(T&& item) const { *items += to.one(std::move(item)); }
    void values(Batch<T>& batch) const { *items += to.values(batch); }
  };
  const Give give{deliver, &items};
  for (;;) {
    std::optional<Parcel<T>> parcel = in.try_pop();
    if (!parcel) {
      clock.record(0);
      std::optional<Parcel<T>> waited = in.pop(before_sleep);
      clock.restart();
      if (!waited) break;
      parcel.emplace(std::move(*waited));
    }
    const std::uint64_t released = reorder.released();
    items = 0;
    if (auto* batch = std::get_if<Batch<T>>(&*parcel);
        batch != nullptr && (batch->is_run() || batch->is_sparse())) {
      // A route's sparse batch goes back to the port that split it, which draws its storage from
      // what comes back; a run, to whichever producer sent last (docs/design/batching.md).
      reorder.add_batch(*batch, give,
                        batch->is_sparse() ? std::optional(in.last_lane()) : std::nullopt);
    } else {
      for_each_entry(*parcel, [&](const Tag& tag, T* value) { reorder.add(tag, value, give); });
    }
    recycle(in, *parcel);
    for (auto& spare : reorder.spare())
      in.recycle(std::move(spare.batch), spare.origin.value_or(in.last_lane()));
    reorder.spare().clear();
    clock.parcel_done(items);
    if (gate != nullptr && reorder.released() != released) gate->advance(reorder.released());
    if (worker.cancelled()) return false;
  }
  if (worker.cancelled()) return false;
  CONVEYOR_CONTRACT(!reorder.holding(),
                    "serial_in_order stage: the stream ended with sequence numbers missing");
  items = 0;
  for (T& item : reorder.take_unsequenced())
    give(std::move(item));
  clock.record(items);
  return true;
}

// Gives `item` (moved from) to `deliver(T&&)`; returns the number of items to time for it: what
// `deliver` returns, if anything, else 1.
template <class Deliver, class T>
std::uint64_t deliver_counted(Deliver& deliver, T& item) {
  if constexpr (std::is_void_v<decltype(deliver(std::move(item)))>) {
    deliver(std::move(item));
    return 1;
  } else {
    return deliver(std::move(item));
  }
}

// consume_in_order_through with the stage's code as `deliver(T&&)`, which may return how many items
// to time with this worker's busy time (if not 1); `before_sleep()` runs before the worker sleeps.
template <class Input, class T, class Deliver, class BeforeSleep>
bool consume_in_order(Input& in, WorkerContext& worker, ReorderBuffer<T>& reorder, WindowGate* gate,
                      Deliver&& deliver, BeforeSleep&& before_sleep) {
  auto one = [&](T&& item) { return deliver_counted(deliver, item); };
  auto values = [&](Batch<T>& batch) {
    std::uint64_t items = 0;
    batch.for_each_value([&](T& value) { items += deliver_counted(deliver, value); });
    return items;
  };
  return consume_in_order_through(in, worker, reorder, gate, InOrderDelivery<T>{one, values},
                                  before_sleep);
}

}  // namespace conveyor::detail
