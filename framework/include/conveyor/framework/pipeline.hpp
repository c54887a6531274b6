// Pipeline: a source, stages and a sink, chained with `|`, run by workers that hand items to each
// other through mailboxes and bounded queues.
//
//   conveyor::Pipeline p({.name = "ingest"});
//   p.source(read_lines)                                                   // () -> optional<Line>
//     | conveyor::stage(parse, {.mode = conveyor::Mode::parallel, .workers = 2})  // Line -> Record
//     | conveyor::sink(write, {.mode = conveyor::Mode::serial_in_order});         // Record
//   p.run();   // blocks until every item is delivered; rethrows the first exception
//
// Contract:
// - Build (source, `|`) from one thread, before `start()`. Each `|` continues from the last stage,
//   a sink ends the chain, and a tee (tee.hpp) or a route (route.hpp) splits it into branches that
//   each end in a sink. A type mismatch between neighbours does not compile.
// - A pipeline runs once: `run()` = `start()` + `wait()`. `wait()` returns once every worker has
//   returned, and rethrows the first exception a stage threw (the others are counted in the
//   stages' errors). Options that do not fit (a by_key function for another type, broadcast of
//   non-copyable items, serial_in_order after a broadcast to several workers) make `start()` throw
//   std::invalid_argument before any worker runs. A worker that cannot be started (no thread
//   left) fails the pipeline as a throw would: those that run are cancelled, and `wait()`
//   rethrows the std::system_error.
// - `request_stop()` ends the source's stream early: what is in flight is processed, flush hooks
//   run, and `wait()` returns normally. `abort()` drops what is in flight: every worker returns as
//   soon as it looks, and `wait()` returns (rethrowing nothing, unless a stage threw). Both may be
//   called from any thread, any number of times, and from a signal handler; an abort takes effect
//   once some thread is in `wait()` (docs/guide.md §7).
// - `fail_on_cancel(ledger)`: when the pipeline is cancelled (an abort, a stage's failure, or
//   destruction while it runs), the ledger's unsettled tokens fail before anything is dropped
//   (AckLedger::fail_outstanding), so that a checkpoint never passes what was in flight.
// - `stats()` may be called from any thread at any time, also after the pipeline finished.
// - The destructor aborts a pipeline that is still running and waits for its workers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/async_body.hpp"
#include "conveyor/framework/detail/body.hpp"
#include "conveyor/framework/detail/control.hpp"
#include "conveyor/framework/detail/dispatch_policy.hpp"
#include "conveyor/framework/detail/node.hpp"
#include "conveyor/framework/observer.hpp"
#include "conveyor/framework/options.hpp"
#include "conveyor/framework/stage.hpp"
#include "conveyor/framework/stats.hpp"

namespace conveyor {

class AckLedger;
class Pipeline;
class Completed;
template <class T>
class Flow;
template <class T, class F, class Key>
Completed operator|(const Flow<T>& flow, SinkSpec<F, Key> spec);

namespace detail {
struct Runtime;
struct Topology;
template <class>
inline constexpr bool always_false = false;
}  // namespace detail

// The end of a chain under construction, whose items are of type T.
template <class T>
class Flow {
 public:
  using item_type = T;

  [[nodiscard]] Pipeline& pipeline() const noexcept { return *pipeline_; }

 private:
  friend class Pipeline;
  Flow(Pipeline& pipeline, std::size_t node) noexcept : pipeline_(&pipeline), node_(node) {}

  Pipeline* pipeline_;
  std::size_t node_;
  // A merge (merge.hpp): the nodes whose items the next node takes, all of them (node_ is the
  // first); empty otherwise.
  std::vector<std::size_t> merged_;
};

// What `flow | sink(...)` returns: the chain is complete.
class Completed {
 public:
  [[nodiscard]] Pipeline& pipeline() const noexcept { return *pipeline_; }

 private:
  friend class Pipeline;
  template <class T, class F, class Key>
  friend Completed operator|(const Flow<T>& flow, SinkSpec<F, Key> spec);
  explicit Completed(Pipeline& pipeline) noexcept : pipeline_(&pipeline) {}
  Pipeline* pipeline_;
};

class Pipeline {
 public:
  explicit Pipeline(PipelineOptions options = {});
  ~Pipeline();

  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  Pipeline(Pipeline&&) = delete;
  Pipeline& operator=(Pipeline&&) = delete;

  // The first node. `source<Out>(f)` names the item type where it cannot be deduced.
  template <class Out = detail::deduce_output, class F>
  [[nodiscard]] Flow<detail::source_output_t<std::decay_t<F>, Out>> source(
      F&& code, SourceOptions options = {}) {
    using Code = std::decay_t<F>;
    using Output = detail::source_output_t<Code, Out>;
    if constexpr (!detail::source_body<Code, Output>) {
      static_assert(detail::always_false<Code>,
                    "conveyor: a source is f() -> std::optional<T> (called until it returns "
                    "nullopt), a class with next() -> std::optional<T>, or f(conveyor::Emit<T>&) "
                    "(for a generic lambda, name T: p.source<T>(f))");
      return Flow<Output>(*this, 0);
    } else {
      append(std::make_unique<detail::SourceNode<Output, Code>>(std::forward<F>(code),
                                                                std::move(options)),
             {});
      return Flow<Output>(*this, nodes_.size() - 1);
    }
  }

  // Appends a stage after `from` (the chain's last node).
  template <class In, class Out, class F>
  [[nodiscard]] Flow<Out> then(const Flow<In>& from, F&& code, StageOptions options) {
    return then_node<Out>(from, std::make_unique<detail::StageNode<In, Out, std::decay_t<F>>>(
                                    std::forward<F>(code), std::move(options)));
  }

  template <class In, class F>
  Completed finish(const Flow<In>& from, F&& code, StageOptions options) {
    return finish_node(from, std::make_unique<detail::SinkNode<In, std::decay_t<F>>>(
                                 std::forward<F>(code), std::move(options)));
  }

  // The same with a node already made (an asynchronous one, say).
  template <class Out, class In>
  [[nodiscard]] Flow<Out> then_node(const Flow<In>& from, std::unique_ptr<detail::NodeBase> node) {
    append(std::move(node), parents_of(from));
    return Flow<Out>(*this, nodes_.size() - 1);
  }

  template <class In>
  Completed finish_node(const Flow<In>& from, std::unique_ptr<detail::NodeBase> node) {
    append(std::move(node), parents_of(from));
    return Completed(*this);
  }

  void run() {
    start();
    wait();
  }
  void start();
  void wait();

  void request_stop() noexcept { control_.request_stop(); }
  void abort() noexcept { control_.request_abort(); }

  [[nodiscard]] PipelineStats stats() const;
  [[nodiscard]] PipelineState state() const noexcept;
  [[nodiscard]] const std::string& name() const noexcept { return options_.name; }

  // Before start(). The pipeline keeps a weak reference: a ledger gone by then is skipped.
  void fail_on_cancel(const std::shared_ptr<AckLedger>& ledger);

  // Observers are told when the pipeline starts and finishes, and given snapshots every
  // `PipelineOptions::sample_interval` in between. Add them before start().
  void add_observer(std::shared_ptr<Observer> observer);

  // A shared resource (see shared.hpp) whose statistics stats() reports. `resource` must outlive
  // the pipeline, or at least every call to stats().
  template <class Resource>
  void track(const Resource& resource) {
    std::lock_guard lock(resources_mutex_);
    resources_.push_back([&resource] { return resource.stats(); });
  }

 private:
  friend struct detail::Topology;

  // Flows whose items the next stage takes together (merge.hpp): all of this pipeline, and none
  // continued yet.
  template <class T, class... More>
  [[nodiscard]] Flow<T> merged(const Flow<T>& first, const More&... more) {
    Flow<T> flow(*this, first.node_);
    flow.merged_ = {first.node_, more.node_...};
    if (first.pipeline_ != this || ((more.pipeline_ != this) || ...)) {
      throw std::logic_error("conveyor: a merge joins flows of one pipeline");
    }
    for (const std::size_t node : flow.merged_)
      check_continues(node);
    return flow;
  }

  // Lets several chains continue from `at`, each getting every item (tee.hpp).
  template <class T>
  void branch_at(const Flow<T>& at) {
    check_not_merged(at.merged_);
    fan_out(at.node_);
  }

  // Lets several chains continue from `at`, each item going to the branch `cases` picks: the
  // first whose predicate it matches (predicate b for the b-th chain added), or else the one added
  // last (route.hpp).
  template <class T>
  void route_at(const Flow<T>& at, detail::RouteCases&& cases) {
    check_not_merged(at.merged_);
    fan_out(at.node_);
    routes_[at.node_] = std::move(cases);
  }

  // The nodes a node after `from` takes its items from, each checked to be continuable.
  template <class T>
  std::vector<std::size_t> parents_of(const Flow<T>& from) const {
    std::vector<std::size_t> parents =
        from.merged_.empty() ? std::vector<std::size_t>{from.node_} : from.merged_;
    for (const std::size_t parent : parents)
      check_continues(parent);
    return parents;
  }
  void append(std::unique_ptr<detail::NodeBase> node, std::vector<std::size_t> parents);
  void check_continues(std::size_t node) const;
  static void check_not_merged(const std::vector<std::size_t>& merged);
  void fan_out(std::size_t node);
  // Whether node `node` splits into the branches of a route.
  [[nodiscard]] bool routes(std::size_t node) const { return routes_[node].classify != nullptr; }
  void plan();  // validates the chain and sizes the workers
  void fuse();  // decides which stages run on the workers of the stage before them
  // Why node `node` cannot run on the workers of the stage before it because of its place in the
  // graph (after a merge, as a branch), where that group of workers already runs a fused branch
  // if `group_has_fused_branch`; empty if its place allows it.
  [[nodiscard]] std::string place_obstacle(std::size_t node, bool group_has_fused_branch) const;
  void supervise();
  void finish_observers();

  PipelineOptions options_;
  std::vector<std::unique_ptr<detail::NodeBase>> nodes_;
  // Per node: the nodes it takes its items from (none for a source, several after a merge),
  // whether several chains continue from it (a tee), and the nodes that take its items, in the
  // order they were added.
  std::vector<std::vector<std::size_t>> parents_;
  std::vector<bool> fans_out_;
  std::vector<std::vector<std::size_t>> next_;
  // Per node: a route's cases (without `classify` if the node is no route).
  std::vector<detail::RouteCases> routes_;
  detail::Control control_;
  std::unique_ptr<detail::Runtime> runtime_;
  // steady_clock nanoseconds; 0 until set.
  std::atomic<std::int64_t> started_ns_{0};
  std::atomic<std::int64_t> finished_ns_{0};
  std::atomic<PipelineState> state_{PipelineState::idle};
  bool waited_ = false;
  std::vector<std::shared_ptr<Observer>> observers_;
  std::vector<std::weak_ptr<AckLedger>> ledgers_;  // fail_on_cancel
  mutable std::mutex resources_mutex_;
  std::vector<std::function<ResourceStats()>> resources_;
  // The stages' names, which start() fills in for those left unnamed while stats() may read them.
  mutable std::mutex names_mutex_;
};

namespace detail {
// How merge(), tee() and route() (merge.hpp, tee.hpp, route.hpp) shape a pipeline's graph: calls
// that keep the graph valid only as those make them, and so are not a pipeline's public ones.
struct Topology {
  template <class T, class... More>
  [[nodiscard]] static Flow<T> merged(const Flow<T>& first, const More&... more) {
    return first.pipeline().merged(first, more...);
  }
  template <class T>
  static void branch_at(const Flow<T>& at) {
    at.pipeline().branch_at(at);
  }
  template <class T>
  static void route_at(const Flow<T>& at, RouteCases&& cases) {
    at.pipeline().route_at(at, std::move(cases));
  }
};

// A keyed dispatch given to stage() or sink() names its key function's item type (Key; void when
// there is none): it must be the type of the items the stage receives.
template <class Key, class T>
constexpr void check_key_type() {
  static_assert(std::is_void_v<Key> || std::is_same_v<Key, T>,
                "conveyor: the key function of this stage's Dispatch::by_key or by_partition "
                "takes another type than the items the stage receives (the instantiation of "
                "check_key_type above names both: Key is the key function's item type, T the "
                "items')");
}
}  // namespace detail

template <class T, class F, class Out, class Key>
auto operator|(const Flow<T>& flow, StageSpec<F, Out, Key> spec) {
  detail::check_key_type<Key, T>();
  if constexpr (detail::async_stage_code<F, T>) {
    using Nodes = detail::AsyncNodes<T, detail::async_stage_output_t<F, T>, F>;
    static_assert(detail::complete_type<Nodes>,
                  "conveyor: a stage whose code returns an asio::awaitable runs on the pipeline's "
                  "I/O threads: #include <conveyor/framework/async.hpp>");
    return flow.pipeline().template then_node<detail::async_stage_output_t<F, T>>(
        flow, Nodes::stage(std::move(spec.code), std::move(spec.options)));
  } else if constexpr (!detail::stage_body<F, T, detail::stage_output_t<F, T, Out>>) {
    static_assert(detail::always_false<F>,
                  "conveyor: this stage cannot take the items the stage before it emits. For "
                  "items of type T a stage is f(T) -> U, f(T) -> std::optional<U>, "
                  "f(T, conveyor::Emit<U>&), or a class with process(T) -> U or "
                  "process(T, conveyor::Emit<U>&) (or any of these returning an "
                  "asio::awaitable); see the instantiation of operator| below for T and f (for a "
                  "generic lambda that takes auto& emit, name U: stage<U>(f))");
    return flow;
  } else {
    return flow.pipeline().template then<T, detail::stage_output_t<F, T, Out>>(
        flow, std::move(spec.code), std::move(spec.options));
  }
}

template <class T, class F, class Key>
Completed operator|(const Flow<T>& flow, SinkSpec<F, Key> spec) {
  detail::check_key_type<Key, T>();
  if constexpr (detail::async_sink_code<F, T>) {
    using Nodes = detail::AsyncNodes<T, void, F>;
    static_assert(detail::complete_type<Nodes>,
                  "conveyor: a sink whose code returns an asio::awaitable runs on the pipeline's "
                  "I/O threads: #include <conveyor/framework/async.hpp>");
    return flow.pipeline().finish_node(flow,
                                       Nodes::sink(std::move(spec.code), std::move(spec.options)));
  } else if constexpr (!detail::sink_body<F, T>) {
    static_assert(detail::always_false<F>,
                  "conveyor: this sink cannot take the items the stage before it emits. For "
                  "items of type T a sink is f(T) or a class with process(T) (or either "
                  "returning an asio::awaitable<void>); see the instantiation of operator| below "
                  "for T and f");
    return Completed(flow.pipeline());
  } else {
    return flow.pipeline().template finish<T>(flow, std::move(spec.code), std::move(spec.options));
  }
}

}  // namespace conveyor
