// The nodes of a pipeline: a source, stages and a sink, each with its user code and options, and
// what each of their workers runs.
//
// A node is built by the Pipeline's composition operators and stays type-erased behind NodeBase.
// When the pipeline starts, each node makes the edge to its successor (it knows its output type),
// and is then instantiated with its Wiring: its workers' doorbells, its neighbours', its edges,
// how it tags what it emits, and, for a serial_in_order node, its reorder window.
//
// A node fused into the one before it (StageOptions::fuse) has no workers of its own: the workers
// of its group's first node call its FusedStep, which its Instance makes for each of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/body.hpp"
#include "conveyor/framework/detail/control.hpp"
#include "conveyor/framework/detail/drop_failed.hpp"
#include "conveyor/framework/detail/edge.hpp"
#include "conveyor/framework/detail/fused_step.hpp"
#include "conveyor/framework/detail/port/branch_port.hpp"
#include "conveyor/framework/detail/port/fused_port.hpp"
#include "conveyor/framework/detail/port/make_out_port.hpp"
#include "conveyor/framework/detail/reorder_buffer.hpp"
#include "conveyor/framework/detail/window_gate.hpp"
#include "conveyor/framework/detail/worker_context.hpp"
#include "conveyor/framework/detail/worker_counters.hpp"
#include "conveyor/framework/detail/worker_loop.hpp"
#include "conveyor/framework/emit.hpp"
#include "conveyor/framework/options.hpp"
#include "conveyor/sync/detail/contract.hpp"

namespace conveyor::detail {

enum class Role { source, stage, sink };

class IoPool;
class Instance;

struct Wiring {
  Control* control = nullptr;
  std::vector<Doorbell*> own;         // this node's workers
  std::vector<DeferredWakes*> owed;   // what each of them owes its consumers (not for a sink)
  std::vector<Doorbell*> upstream;    // the previous node's workers
  std::vector<Doorbell*> downstream;  // the next nodes' workers, in the output edge's order
  EdgeBase* input = nullptr;
  // This node's first worker among the input edge's consumers (after a tee, those of every
  // branch's first node).
  std::size_t input_offset = 0;
  EdgeBase* output = nullptr;
  // This node's first worker among the output edge's producers (before a merge, those of every
  // input, one after another).
  std::size_t output_offset = 0;
  // Whether a serial_in_order node reads its input in order: not at a merge, whose inputs have no
  // common order (it then numbers what it emits as it arrives).
  bool input_in_order = true;
  // The edge to the next node, as the next node's options describe it (after a tee: the tee's).
  const Dispatch* output_dispatch = nullptr;
  std::size_t output_batch = 1;
  Tagging output_tagging = Tagging::none;
  WindowGate* output_gate = nullptr;  // a sequencer whose order an in-order stage restores
  // Before a route: what makes the ports of its edge (RouteCases::make_port), for items of type
  // `route_item`.
  void (*route_port)() = nullptr;
  const std::type_info* route_item = nullptr;
  // serial_in_order nodes: the window of their reorder buffer, and the gate they advance.
  std::uint64_t reorder_window = 0;
  WindowGate* input_gate = nullptr;
  // The pipeline's I/O threads, when it has asynchronous stages.
  IoPool* io = nullptr;
  // Fusion: the next node, which runs on this node's workers; `output` is then null, and
  // `output_tagging` is that of the edge out of the fused group. Before a tee with one branch
  // fused into this node: that branch's first node, and `output` is the edge to the others.
  Instance* fused_next = nullptr;
};

class NodeBase;

// One node's running form: its wiring, and what each of its workers runs. run_worker (compiled
// once, in framework/src) sets up the worker's context, calls `run`, and records a throw as the
// pipeline's failure.
class Instance {
 public:
  Instance(NodeBase& node, const Wiring& wiring);
  virtual ~Instance();

  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  void run_worker(std::size_t worker) noexcept;

  // A fused node: its step for worker `worker` of its group's first node, on that worker's
  // context (fused_step.hpp).
  [[nodiscard]] virtual std::unique_ptr<FusedStep> fused_step(WorkerContext& context,
                                                              std::size_t worker);

 protected:
  // The worker's loop, on its own context.
  virtual void run(WorkerContext& context, std::size_t worker) = 0;

  [[nodiscard]] const Wiring& wiring() const noexcept { return wiring_; }
  [[nodiscard]] const NodeBase& node() const noexcept { return node_; }
  [[nodiscard]] NodeBase& node() noexcept { return node_; }

  // A fused step's code threw: counted on its node, and the pipeline fails.
  static void fail_fused(WorkerContext& context, WorkerCounters& counters) noexcept;

 private:
  NodeBase& node_;
  const Wiring wiring_;
};

// A worker's ports on the edges its wiring names: into the node, and out of it to the next.
template <class In>
InPort<In> input_port(WorkerContext& context, const Wiring& wiring, std::size_t worker) {
  auto& input = static_cast<Edge<In>&>(*wiring.input);
  return InPort<In>(context, input.consumer_side(wiring.input_offset + worker, wiring.upstream));
}

// `counters`: those of the node that emits (the worker's own, unless the node is fused).
// `Forwarding`: false for a source's port, which never forwards tags.
template <class Out, bool Forwarding = true>
std::unique_ptr<OutPort<Out>> output_port(WorkerContext& context, const Wiring& wiring,
                                          std::size_t worker, WorkerCounters& counters) {
  std::unique_ptr<FusedInput<Out>> fused;
  if (wiring.fused_next != nullptr) {
    std::unique_ptr<FusedStep> step = wiring.fused_next->fused_step(context, worker);
    fused.reset(static_cast<FusedInput<Out>*>(step.release()));
    if (wiring.output == nullptr) {
      return std::make_unique<FusedPort<Out>>(context, counters, std::move(fused),
                                              wiring.output_tagging);
    }
  }
  auto& output = static_cast<Edge<Out>&>(*wiring.output);
  const typename OutPort<Out>::Lanes lanes =
      output.producer_side(wiring.output_offset + worker, wiring.downstream);
  const PortChoice choice{.dispatch = wiring.output_dispatch,
                          .batch = wiring.output_batch,
                          .tagging = wiring.output_tagging,
                          .gate = wiring.output_gate};
  std::unique_ptr<OutPort<Out>> channel;
  if (wiring.route_port != nullptr) {
    CONVEYOR_CONTRACT(*wiring.route_item == typeid(Out),
                      "output_port: a route's ports take the route's items");
    const auto make = reinterpret_cast<PortMaker<Out>>(wiring.route_port);
    channel = make(context, counters, lanes, choice);
  } else {
    channel = make_out_port<Out, Forwarding>(context, counters, lanes, choice);
  }
  if (fused == nullptr) return channel;
  // A tee with one branch fused into this node: items that a tee copies (tee.hpp checks).
  if constexpr (std::is_copy_constructible_v<Out>) {
    return std::make_unique<BranchPort<Out>>(context, counters, std::move(fused),
                                             std::move(channel),
                                             wiring.output_tagging == Tagging::forward);
  } else {
    CONVEYOR_CONTRACT(false, "output_port: only a tee's copyable items reach a fused branch");
    return channel;
  }
}

class NodeBase {
 public:
  NodeBase(Role role, StageOptions options) : role_(role), options_(std::move(options)) {}
  virtual ~NodeBase() = default;

  NodeBase(const NodeBase&) = delete;
  NodeBase& operator=(const NodeBase&) = delete;

  [[nodiscard]] Role role() const noexcept { return role_; }
  [[nodiscard]] const StageOptions& options() const noexcept { return options_; }
  [[nodiscard]] const std::string& name() const noexcept { return options_.name; }
  void set_name(std::string name) { options_.name = std::move(name); }
  [[nodiscard]] Mode mode() const noexcept { return options_.mode; }
  // A sequencer numbers what it emits: the source and every serial_in_order stage.
  [[nodiscard]] bool sequencer() const noexcept {
    return role_ == Role::source || options_.mode == Mode::serial_in_order;
  }

  // Fixes the number of workers and allocates their counters (when the pipeline starts).
  void prepare(std::size_t workers) {
    workers_ = workers;
    counters_ = std::make_unique<WorkerCounters[]>(workers);
  }
  [[nodiscard]] std::size_t workers() const noexcept { return workers_; }
  // Runs on the `workers` workers of the node before it (StageOptions::fuse).
  void fuse(std::size_t workers) {
    fused_ = true;
    prepare(workers);
  }
  [[nodiscard]] bool fused() const noexcept { return fused_; }
  [[nodiscard]] const WorkerCounters& counters(std::size_t worker) const noexcept {
    return counters_[worker];
  }
  [[nodiscard]] WorkerCounters& counters(std::size_t worker) noexcept { return counters_[worker]; }

  // Throws std::invalid_argument if the options do not fit the node's item types.
  virtual void check_options() const = 0;
  // Whether several workers may each get a copy of the node's code.
  [[nodiscard]] virtual bool copyable() const noexcept = 0;
  [[nodiscard]] virtual bool input_copyable() const noexcept = 0;
  // Whether the node's code returns awaitables, which run on the pipeline's I/O threads.
  [[nodiscard]] virtual bool asynchronous() const noexcept { return false; }
  // How many items one worker may hold at once (StageOptions::in_flight, for an asynchronous node).
  [[nodiscard]] std::size_t in_flight() const noexcept {
    return asynchronous() ? options_.in_flight : 1;
  }
  // The edge from `producers` workers (this node's, or a merge's inputs') to the workers of the
  // nodes after it: one lane capacity per consumer worker.
  [[nodiscard]] virtual std::unique_ptr<EdgeBase> make_output_edge(
      std::size_t producers, const std::vector<std::size_t>& lane_capacities) const = 0;
  [[nodiscard]] virtual std::unique_ptr<Instance> instantiate(const Wiring& wiring) = 0;

 protected:
  // For a node that emits Out.
  template <class Out>
  [[nodiscard]] static std::unique_ptr<EdgeBase> edge_for(
      std::size_t producers, const std::vector<std::size_t>& lane_capacities) {
    return std::make_unique<Edge<Out>>(producers, lane_capacities);
  }

 private:
  Role role_;
  StageOptions options_;
  std::size_t workers_ = 0;
  bool fused_ = false;
  std::unique_ptr<WorkerCounters[]> counters_;
};

// The node's code, one instance per worker: copies of the prototype, and the prototype itself for
// the last (or only) worker. Made before the workers start, so that none copies while another
// moves.
template <class F>
class Prototype {
 public:
  explicit Prototype(F f) : f_(std::move(f)) {}

  [[nodiscard]] std::vector<F> instances(std::size_t workers) {
    std::vector<F> result;
    result.reserve(workers);
    if constexpr (std::is_copy_constructible_v<F>) {
      for (std::size_t worker = 0; worker + 1 < workers; ++worker)
        result.push_back(f_);
    }
    result.push_back(std::move(f_));
    return result;
  }

 private:
  F f_;
};

template <class Out, class F>
class SourceNode final : public NodeBase {
 public:
  SourceNode(F f, SourceOptions options)
      : NodeBase(Role::source,
                 StageOptions{
                     .name = std::move(options.name), .mode = Mode::serial_in_order, .workers = 1}),
        prototype_(std::move(f)) {}

  void check_options() const override {}
  [[nodiscard]] bool copyable() const noexcept override { return false; }
  [[nodiscard]] bool input_copyable() const noexcept override { return true; }

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
    Run(SourceNode& node, const Wiring& wiring)
        : Instance(node, wiring), code_(node.prototype_.instances(1)) {}

   private:
    void run(WorkerContext& context, std::size_t worker) override {
      const Wiring& wiring = this->wiring();
      std::unique_ptr<OutPort<Out>> port_ptr =
          output_port<Out, false>(context, wiring, worker, context.counters());
      OutPort<Out>& port = *port_ptr;
      SourceBody<F, Out> body(std::move(code_[worker]));
      BusyClock clock(context);
      if constexpr (SourceBody<F, Out>::pulled) {
        // A pulled source fills whole batches in one loop when the port batches, and is
        // otherwise called item by item; either way it is not called again once a stop is
        // requested, and what it returned is delivered.
        if (port.pulls()) {
          (void)port.pull([&] { return body.next(); });
        } else {
          while (!context.cancelled() && !context.stop_requested()) {
            auto item = body.next();
            if (!item || !port.emit(std::move(*item))) break;
          }
        }
      } else {
        Emit<Out> emit(port, true);
        body.run(emit);
      }
      clock.record(0);
      if (!context.cancelled()) port.close();
    }

    std::vector<F> code_;
  };

  Prototype<F> prototype_;
};

// Checks shared by stages and sinks: the options of the edge into them, for items of type
// `item` (copyable or not). Throws std::invalid_argument.
void check_input_options(const NodeBase& node, const std::type_info& item, bool item_copyable);

template <class In>
void check_input_options(const NodeBase& node) {
  check_input_options(node, typeid(In), std::is_copy_constructible_v<In>);
}

// What every stage and sink node shares: the checks of the edge into it, and its code's
// prototype.
template <class In, class F>
class ConsumerNode : public NodeBase {
 public:
  ConsumerNode(Role role, F f, StageOptions options)
      : NodeBase(role, std::move(options)), prototype_(std::move(f)) {}

  void check_options() const override { check_input_options<In>(*this); }
  [[nodiscard]] bool copyable() const noexcept override { return std::is_copy_constructible_v<F>; }
  [[nodiscard]] bool input_copyable() const noexcept override {
    return std::is_copy_constructible_v<In>;
  }

 protected:
  Prototype<F> prototype_;
};

template <class In, class Out, class F>
class StageNode final : public ConsumerNode<In, F> {
 public:
  StageNode(F f, StageOptions options)
      : ConsumerNode<In, F>(Role::stage, std::move(f), std::move(options)) {}

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
    Run(StageNode& node, const Wiring& wiring)
        : Instance(node, wiring), code_(node.prototype_.instances(node.workers())) {}

    [[nodiscard]] std::unique_ptr<FusedStep> fused_step(WorkerContext& context,
                                                        std::size_t worker) override {
      return std::make_unique<Step>(*this, context, worker);
    }

   private:
    // The stage on the workers of the stage before it: items come from that stage's port.
    class Step final : public FusedInput<In> {
     public:
      Step(Run& run, WorkerContext& context, std::size_t worker)
          : context_(context),
            counters_(run.node().counters(worker)),
            out_(output_port<Out>(context, run.wiring(), worker, counters_)),
            emit_(*out_, false),
            body_(std::move(run.code_[worker])) {}

      bool push(In&& item) override {
        if (context_.cancelled()) return false;
        counters_.items_in.add(1);
        try {
          body_.process(std::move(item), emit_);
        } catch (...) {
          drop_failed(item);
          Instance::fail_fused(context_, counters_);
          return false;
        }
        return !context_.cancelled();
      }
      void begin_item(const Tag& tag) noexcept override { out_->begin_item(tag); }
      // What the port sends here may run user code too (a by_key function downstream).
      bool end_item() override {
        return guarded([&] { return out_->end_item(); });
      }
      bool flush() override {
        return guarded([&] { return out_->flush(); });
      }
      void finish() override {
        (void)guarded([&] {
          body_.flush(emit_);
          if (!context_.cancelled()) out_->close();
          return true;
        });
      }

     private:
      // Runs `call`; a throw from it is counted on this stage and fails the pipeline (false).
      template <class Call>
      bool guarded(Call&& call) {
        try {
          return call();
        } catch (...) {
          Instance::fail_fused(context_, counters_);
          return false;
        }
      }

      WorkerContext& context_;
      WorkerCounters& counters_;
      std::unique_ptr<OutPort<Out>> out_;
      Emit<Out> emit_;
      StageBody<F, In, Out> body_;
    };

    void run(WorkerContext& context, std::size_t worker) override {
      const Wiring& wiring = this->wiring();
      WorkerCounters& counters = context.counters();
      InPort<In> in = input_port<In>(context, wiring, worker);
      std::unique_ptr<OutPort<Out>> out_ptr =
          output_port<Out>(context, wiring, worker, context.counters());
      OutPort<Out>& out = *out_ptr;
      Emit<Out> emit(out, false);
      StageBody<F, In, Out> body(std::move(code_[worker]));
      auto flush_batches = [&] { out.flush(); };
      bool completed = false;
      if (node().mode() == Mode::serial_in_order && wiring.input_in_order) {
        ReorderBuffer<In> reorder(wiring.reorder_window);
        completed = consume_in_order(
            in, context, reorder, wiring.input_gate,
            [&](In&& item) {
              counters.items_in.add(1);
              body.process(std::move(item), emit);
            },
            flush_batches);
      } else {
        completed = consume_unordered(
            in, context,
            [&](Batch<In>& run) {
              if constexpr (StageBody<F, In, Out>::maps) {
                if (!out.takes_runs_of(run.size())) return false;
                map_run(run, body, in, out, counters);
                return true;
              } else {
                return false;
              }
            },
            [&](const Tag& tag, In* value) -> std::uint64_t {
              out.begin_item(tag);
              std::uint64_t given = 0;
              if (value != nullptr) {
                counters.items_in.add(1);
                body.process(std::move(*value), emit);
                given = 1;
              }
              out.end_item();
              return given;
            },
            flush_batches);
      }
      if (!completed) return;
      BusyClock clock(context);
      body.flush(emit);
      clock.record(0);
      if (!context.cancelled()) out.close();
    }

    // A mapping stage's run of inputs, in one loop: the outputs keep the run form and go out as
    // one batch. With the same input and output type the run is mapped in place (each output is
    // constructed where its input was, as the per-item path constructs it) and its storage goes on
    // downstream, while a batch that came back from downstream goes upstream instead (so that
    // neither side allocates). items_in counts what reached the code, a throwing item included.
    static void map_run(Batch<In>& run, StageBody<F, In, Out>& body, InPort<In>& in,
                        OutPort<Out>& out, WorkerCounters& counters) {
      std::vector<In>& inputs = run.values();
      if constexpr (std::is_same_v<In, Out> && std::is_nothrow_move_constructible_v<In>) {
        for_each_counted(inputs.size(), counters, true, [&](std::size_t i) {
          Out output = body.map(std::move(inputs[i]));
          std::destroy_at(&inputs[i]);
          std::construct_at(&inputs[i], std::move(output));
        });
        if (std::optional<Batch<In>> spare = out.returned_batch()) in.recycle(std::move(*spare));
        (void)out.send_run(std::move(run));
        run = Batch<In>();  // its storage went downstream: nothing to recycle
      } else {
        Batch<Out> mapped = out.fresh_batch();
        std::vector<Out>& outputs = mapped.extend_run(run.first());
        for_each_counted(inputs.size(), counters, true, [&](std::size_t i) {
          append_item(outputs, body.map(std::move(inputs[i])));
        });
        (void)out.send_run(std::move(mapped));
      }
    }

    std::vector<F> code_;
  };
};

template <class In, class F>
class SinkNode final : public ConsumerNode<In, F> {
 public:
  SinkNode(F f, StageOptions options)
      : ConsumerNode<In, F>(Role::sink, std::move(f), std::move(options)) {}

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
    Run(SinkNode& node, const Wiring& wiring)
        : Instance(node, wiring), code_(node.prototype_.instances(node.workers())) {}

    [[nodiscard]] std::unique_ptr<FusedStep> fused_step(WorkerContext& context,
                                                        std::size_t worker) override {
      return std::make_unique<Step>(*this, context, worker);
    }

   private:
    // The sink on the workers of the stage before it.
    class Step final : public FusedInput<In> {
     public:
      Step(Run& run, WorkerContext& context, std::size_t worker)
          : context_(context),
            counters_(run.node().counters(worker)),
            body_(std::move(run.code_[worker])) {}

      bool push(In&& item) override {
        if (context_.cancelled()) return false;
        counters_.items_in.add(1);
        try {
          body_.process(std::move(item));
        } catch (...) {
          drop_failed(item);
          Instance::fail_fused(context_, counters_);
          return false;
        }
        return !context_.cancelled();
      }
      // A sink emits nothing: no tags, no batches.
      void begin_item(const Tag& /*tag*/) noexcept override {}
      bool end_item() override { return true; }
      bool flush() override { return true; }
      void finish() override {
        try {
          body_.flush();
        } catch (...) {
          Instance::fail_fused(context_, counters_);
        }
      }

     private:
      WorkerContext& context_;
      WorkerCounters& counters_;
      SinkBody<F, In> body_;
    };

    void run(WorkerContext& context, std::size_t worker) override {
      const Wiring& wiring = this->wiring();
      WorkerCounters& counters = context.counters();
      InPort<In> in = input_port<In>(context, wiring, worker);
      SinkBody<F, In> body(std::move(code_[worker]));
      auto consume = [&](In&& item) {
        counters.items_in.add(1);
        body.process(std::move(item));
      };
      bool completed = false;
      if (node().mode() == Mode::serial_in_order && wiring.input_in_order) {
        ReorderBuffer<In> reorder(wiring.reorder_window);
        completed = consume_in_order(in, context, reorder, wiring.input_gate, consume, [] {});
      } else {
        completed = consume_unordered(
            in, context,
            [&](Batch<In>& run) {
              std::vector<In>& values = run.values();
              for_each_counted(values.size(), counters, false,
                               [&](std::size_t i) { body.process(std::move(values[i])); });
              return true;
            },
            [&](const Tag&, In* value) -> std::uint64_t {
              if (value == nullptr) return 0;
              consume(std::move(*value));
              return 1;
            },
            [] {});
      }
      if (!completed) return;
      BusyClock clock(context);
      body.flush();
      clock.record(0);
    }

    std::vector<F> code_;
  };
};

}  // namespace conveyor::detail
