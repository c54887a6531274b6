// The nodes of asynchronous stages and sinks (async_body.hpp says which code is asynchronous).
//
// Each worker takes items from its channel as a synchronous worker does, and starts a coroutine
// per item on its own strand of the pipeline's I/O threads (IoPool), up to `in_flight` at once.
// The coroutines' results come back to the worker (async_worker.hpp), which emits them: with
// their input's sequence tag, so that a serial_in_order stage after it restores the source's
// order; or, in a serial_in_order asynchronous stage, in the order the items were launched.
//
// Contract:
// - One worker's coroutines run on one strand: the worker's copy of the code is never entered by
//   two threads at once, though its coroutines interleave at their co_awaits.
// - The code and the results' lists live in the node's Instance, the strands in the IoPool; both
//   outlive the I/O threads. A worker that returns early (a throw, an abort) leaves its coroutines
//   to the pool's teardown.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "conveyor/framework/detail/async_body.hpp"
#include "conveyor/framework/detail/async_worker.hpp"
#include "conveyor/framework/detail/drop_failed.hpp"
#include "conveyor/framework/detail/io_pool.hpp"
#include "conveyor/framework/detail/node.hpp"
#include "conveyor/sync/detail/asio_coroutines.hpp"
#include "conveyor/sync/detail/ticks.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/strand.hpp>

namespace conveyor::detail {

// GCC 12 gives a coroutine's frame type linkage, and warns when the stage's code has none (a
// lambda in a function, a class in an anonymous namespace), which is harmless here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsubobject-linkage"
#endif
// One item's coroutine: awaits the code's awaitable and hands the result (or its exception) to
// the worker. R is the stage's output type, or std::monostate for a sink.
template <class R, class F, class In>
boost::asio::awaitable<void> run_async_item(F& code, In item, Tag tag, std::uint64_t launch,
                                            Completions<R>& done) {
  using Value = async_value_t<F, In>;
  AsyncResult<R> result;
  result.launch = launch;
  result.tag = tag;
  result.started = sync::detail::ticks();
  try {
    if constexpr (std::is_void_v<Value>) {
      co_await start_async<In>(code, std::move(item));
      result.value.emplace();
    } else if constexpr (is_optional<Value>::value) {
      result.value = co_await start_async<In>(code, std::move(item));
    } else {
      result.value.emplace(co_await start_async<In>(code, std::move(item)));
    }
  } catch (...) {
    result.error = std::current_exception();
    drop_failed(item);
  }
  result.ended = sync::detail::ticks();
  done.add(std::move(result));
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// What every asynchronous node keeps per worker: its code, its strand, its results' list.
template <class R, class F>
class AsyncWorkers {
 public:
  AsyncWorkers(NodeBase& node, Prototype<F>& prototype, const Wiring& wiring)
      : code_(prototype.instances(node.workers())) {
    for (std::size_t worker = 0; worker < node.workers(); ++worker) {
      strands_.push_back(&wiring.io->make_strand());
      done_.push_back(
          std::make_unique<Completions<R>>(*wiring.own[worker], node.counters(worker).errors));
    }
  }

  // Starts `item`'s coroutine for `worker`.
  template <class In>
  void spawn(std::size_t worker, In&& item, const Tag& tag, std::uint64_t launch) {
    boost::asio::co_spawn(
        *strands_[worker],
        run_async_item<R>(code_[worker], std::forward<In>(item), tag, launch, *done_[worker]),
        boost::asio::detached);
  }

  [[nodiscard]] Completions<R>& done(std::size_t worker) noexcept { return *done_[worker]; }

 private:
  std::vector<F> code_;
  std::vector<IoPool::strand_type*> strands_;
  std::vector<std::unique_ptr<Completions<R>>> done_;
};

// The consuming loop every asynchronous worker runs: in source order through a reorder buffer
// (serial_in_order), or as items arrive. `deliver(result)` takes a result back; `on_gap(tag)`
// passes on a gap. Returns true once the stream ended and every coroutine's result is delivered.
template <class In, class R, class F, class Deliver, class OnGap, class BeforeSleep>
bool consume_async(const NodeBase& node, const Wiring& wiring, WorkerContext& context,
                   std::size_t worker, AsyncWorkers<R, F>& workers, Deliver&& deliver,
                   OnGap&& on_gap, BeforeSleep&& before_sleep) {
  InPort<In> in = input_port<In>(context, wiring, worker);
  const bool in_order = node.mode() == Mode::serial_in_order;
  AsyncWorker<In, R, std::decay_t<Deliver>, std::decay_t<BeforeSleep>> engine(
      context, in, workers.done(worker), node.options().in_flight, in_order,
      std::forward<Deliver>(deliver), std::forward<BeforeSleep>(before_sleep));
  WorkerCounters& counters = context.counters();
  auto start = [&](In&& item, const Tag& tag) {
    counters.items_in.add(1);
    (void)engine.launch(
        [&](std::uint64_t launch) { workers.spawn(worker, std::move(item), tag, launch); });
  };
  bool completed = false;
  // At a merge the input has no common order: the items are launched as they arrive.
  if (in_order && wiring.input_in_order) {
    ReorderBuffer<In> reorder(wiring.reorder_window);
    completed = consume_in_order(
        engine, context, reorder, wiring.input_gate,
        [&](In&& item) -> std::uint64_t {
          start(std::move(item), Tag::unsequenced());
          return 0;  // timed when its result comes back
        },
        [] {});
  } else {
    completed = consume_unordered(
        engine, context, [](Batch<In>&) { return false; },
        [&](const Tag& tag, In* value) -> std::uint64_t {
          if (value == nullptr) {
            on_gap(tag);
          } else {
            start(std::move(*value), tag);
          }
          return 0;
        },
        [] {});
  }
  return completed && engine.drain();
}

template <class In, class Out, class F>
class AsyncStageNode final : public ConsumerNode<In, F> {
 public:
  AsyncStageNode(F f, StageOptions options)
      : ConsumerNode<In, F>(Role::stage, std::move(f), std::move(options)) {}
  [[nodiscard]] bool asynchronous() const noexcept override { return true; }

  [[nodiscard]] std::unique_ptr<EdgeBase> make_output_edge(
      std::size_t producers, const std::vector<std::size_t>& lane_capacities) const override {
    return this->template edge_for<Out>(producers, lane_capacities);
  }

  [[nodiscard]] std::unique_ptr<Instance> instantiate(const Wiring& wiring) override {
    return std::make_unique<Run>(*this, wiring);
  }

 private:
  class Run final : public Instance {
   public:
    Run(AsyncStageNode& node, const Wiring& wiring)
        : Instance(node, wiring), workers_(node, node.prototype_, wiring) {}

   private:
    void run(WorkerContext& context, std::size_t worker) override {
      const Wiring& wiring = this->wiring();
      std::unique_ptr<OutPort<Out>> out_ptr =
          output_port<Out>(context, wiring, worker, context.counters());
      OutPort<Out>& out = *out_ptr;
      Emit<Out> emit(out, false);
      const bool completed = consume_async<In>(
          node(), wiring, context, worker, workers_,
          [&](AsyncResult<Out>&& result) {
            out.begin_item(result.tag);
            if (result.value) (void)emit(std::move(*result.value));
            out.end_item();
          },
          [&](const Tag& gap) {
            out.begin_item(gap);
            out.end_item();
          },
          [&] { out.flush(); });
      if (completed && !context.cancelled()) out.close();
    }

    AsyncWorkers<Out, F> workers_;
  };
};

template <class In, class F>
class AsyncSinkNode final : public ConsumerNode<In, F> {
 public:
  AsyncSinkNode(F f, StageOptions options)
      : ConsumerNode<In, F>(Role::sink, std::move(f), std::move(options)) {}
  [[nodiscard]] bool asynchronous() const noexcept override { return true; }

  [[nodiscard]] std::unique_ptr<EdgeBase> make_output_edge(
      std::size_t /*producers*/,
      const std::vector<std::size_t>& /*lane_capacities*/) const override {
    return nullptr;
  }

  [[nodiscard]] std::unique_ptr<Instance> instantiate(const Wiring& wiring) override {
    return std::make_unique<Run>(*this, wiring);
  }

 private:
  class Run final : public Instance {
   public:
    Run(AsyncSinkNode& node, const Wiring& wiring)
        : Instance(node, wiring), workers_(node, node.prototype_, wiring) {}

   private:
    void run(WorkerContext& context, std::size_t worker) override {
      (void)consume_async<In>(
          node(), wiring(), context, worker, workers_, [](AsyncResult<std::monostate>&&) {},
          [](const Tag&) {}, [] {});
    }

    AsyncWorkers<std::monostate, F> workers_;
  };
};

template <class In, class Out, class F>
struct AsyncNodes {
  static std::unique_ptr<NodeBase> stage(F code, StageOptions options) {
    return std::make_unique<AsyncStageNode<In, Out, F>>(std::move(code), std::move(options));
  }
  static std::unique_ptr<NodeBase> sink(F code, StageOptions options) {
    return std::make_unique<AsyncSinkNode<In, F>>(std::move(code), std::move(options));
  }
};

}  // namespace conveyor::detail
