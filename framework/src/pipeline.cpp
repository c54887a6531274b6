// Pipeline: planning (workers, fusion, ordering runs, windows), wiring, launching on an executor,
// and the supervisor that carries out stop and abort requests.
#include "conveyor/framework/pipeline.hpp"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <pthread.h>

#include <algorithm>
#include <exception>
#include <latch>
#include <limits>
#include <string>
#include <thread>

#include "conveyor/framework/ack.hpp"
#include "conveyor/framework/detail/io_pool.hpp"
#include "conveyor/sync/detail/ticks.hpp"

namespace conveyor {

namespace detail {

namespace {

constexpr std::uint64_t max_window = std::uint64_t{1} << 16;

std::int64_t now_nanoseconds() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs the workers' jobs: a thread each, or tasks in a oneTBB arena.
class Launcher {
 public:
  virtual ~Launcher() = default;
  // Starts the jobs in order, and returns how many it started: all of them, or those before the
  // one it could not start (no thread, no memory), whose error goes to `error`.
  virtual std::size_t launch(std::vector<std::function<void()>> jobs,
                             std::exception_ptr& error) noexcept = 0;
  // Returns once every job it started has returned.
  virtual void join() = 0;
};

class ThreadLauncher final : public Launcher {
 public:
  std::size_t launch(std::vector<std::function<void()>> jobs,
                     std::exception_ptr& error) noexcept override {
    try {
      threads_.reserve(jobs.size());
      for (auto& job : jobs)
        threads_.emplace_back(std::move(job));
    } catch (...) {
      error = std::current_exception();
    }
    return threads_.size();
  }
  void join() override {
    for (auto& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }
  ~ThreadLauncher() override { join(); }

 private:
  std::vector<std::thread> threads_;
};

class ArenaLauncher final : public Launcher {
 public:
  // oneTBB lets a process use one worker thread fewer than it has cores unless told otherwise; the
  // global_control lets the arena have the threads it asks for while the pipeline runs.
  explicit ArenaLauncher(std::size_t threads)
      : parallelism_(tbb::global_control::max_allowed_parallelism,
                     std::max<std::size_t>(1, threads) + 1),
        arena_(static_cast<int>(std::max<std::size_t>(1, threads)), 0) {}

  std::size_t launch(std::vector<std::function<void()>> jobs,
                     std::exception_ptr& error) noexcept override {
    std::size_t launched = 0;
    try {
      done_ = std::make_shared<std::latch>(static_cast<std::ptrdiff_t>(jobs.size()));
    } catch (...) {
      error = std::current_exception();
      return 0;
    }
    try {
      for (auto& job : jobs) {
        // Enqueued, so that the workers (not this thread) run them, as tasks that may suspend.
        // The latch is shared with the tasks, so that it outlives the last one's count_down.
        arena_.enqueue([job = std::move(job), done = done_] {
          job();
          done->count_down();
        });
        ++launched;
      }
    } catch (...) {
      error = std::current_exception();
      done_->count_down(static_cast<std::ptrdiff_t>(jobs.size() - launched));
    }
    return launched;
  }
  void join() override {
    if (done_) done_->wait();
  }
  ~ArenaLauncher() override { join(); }

 private:
  tbb::global_control parallelism_;
  tbb::task_arena arena_;
  std::shared_ptr<std::latch> done_;
};

// Why `node` cannot run on the workers of `before`'s fused group (`workers` of them, emitting in
// source order if `ordered`); empty if it can.
std::string fusion_obstacle(const NodeBase& before, const NodeBase& node, std::size_t workers,
                            bool ordered) {
  if (before.asynchronous() || node.asynchronous()) {
    return "asynchronous stages run their coroutines from workers of their own";
  }
  const detail::DispatchPolicy& dispatch = node.options().dispatch.policy();
  if (dispatch.keyed() || dispatch.copies()) {
    return "its dispatch decides which worker takes each item";
  }
  if (node.mode() != Mode::parallel && workers > 1) {
    return "a serial stage cannot run on " + std::to_string(workers) + " workers";
  }
  if (node.mode() == Mode::serial_in_order && !ordered) {
    return "its items would not arrive in order";
  }
  if (node.mode() == Mode::parallel && workers > 1 && !node.copyable()) {
    return "several workers need copyable stage code";
  }
  return {};
}

}  // namespace

struct Runtime {
  // First, so that it goes last: the stages' code may keep I/O objects of its context, and it
  // is finished (its coroutines destroyed) in Pipeline::wait(), before the instances go.
  std::unique_ptr<IoPool> io;
  std::vector<std::vector<std::unique_ptr<Doorbell>>> doorbells;  // per node, per worker
  std::vector<std::vector<std::unique_ptr<DeferredWakes>>> owed;  // per node, per worker
  // edges[i]: from node i to the nodes after it; null for a sink, where the next node is fused
  // into node i, and for the inputs of a merge but the first, which owns their shared edge.
  std::vector<std::unique_ptr<EdgeBase>> edges;
  // out_edges[i]: the edge out of node i (a merge's shared one too); null where edges[i] is.
  std::vector<EdgeBase*> out_edges;
  // inputs[i]: node i's first worker among the consumers of the edge into it.
  std::vector<std::size_t> input_offsets;
  // The dispatch of each tee's and route's edge.
  std::vector<std::unique_ptr<Dispatch>> branch_dispatches;
  // heads[i]: the first node of node i's fused group, whose workers run it (i if not fused).
  std::vector<std::size_t> heads;
  std::vector<std::unique_ptr<WindowGate>> gates;
  std::vector<std::unique_ptr<Instance>> instances;
  std::unique_ptr<Launcher> launcher;

  // The doorbells of the workers that run node `node`.
  [[nodiscard]] std::vector<Doorbell*> bells_of(std::size_t node) const {
    std::vector<Doorbell*> bells;
    for (const auto& bell : doorbells[heads[node]])
      bells.push_back(bell.get());
    return bells;
  }
  // Those of the workers that run `nodes`, one after another (the consumers of an edge).
  [[nodiscard]] std::vector<Doorbell*> bells_of(const std::vector<std::size_t>& nodes) const {
    std::vector<Doorbell*> bells;
    for (const std::size_t node : nodes) {
      for (Doorbell* bell : bells_of(node))
        bells.push_back(bell);
    }
    return bells;
  }
};

Dispatch branch_dispatch(std::shared_ptr<const DispatchPolicy> policy) {
  const Dispatch::Kind kind = policy->keyed() ? Dispatch::Kind::by_key : Dispatch::Kind::broadcast;
  return Dispatch(kind, std::move(policy));
}

}  // namespace detail

Pipeline::Pipeline(PipelineOptions options) : options_(std::move(options)) {}

Pipeline::~Pipeline() {
  const PipelineState current = state();
  if ((current == PipelineState::running || current == PipelineState::stopping) && !waited_) {
    abort();
    try {
      wait();
    } catch (...) {
      // The destructor cannot report it; the stage's error count has it.
    }
  }
}

void Pipeline::append(std::unique_ptr<detail::NodeBase> node, std::vector<std::size_t> parents) {
  if (state() != PipelineState::idle) {
    throw std::logic_error("conveyor: a pipeline cannot be changed once it has started");
  }
  nodes_.push_back(std::move(node));
  for (const std::size_t parent : parents)
    next_[parent].push_back(nodes_.size() - 1);
  parents_.push_back(std::move(parents));
  fans_out_.push_back(false);
  next_.emplace_back();
  routes_.emplace_back();
}

void Pipeline::check_not_merged(const std::vector<std::size_t>& merged) {
  if (!merged.empty()) {
    throw std::logic_error(
        "conveyor: a tee or a route cannot follow a merge directly: put a stage between them");
  }
}

void Pipeline::check_continues(std::size_t node) const {
  if (nodes_[node]->role() == detail::Role::sink || (!fans_out_[node] && !next_[node].empty())) {
    throw std::logic_error(
        "conveyor: a pipeline is one chain: continue it from its last stage, before its sink (or "
        "split it with tee)");
  }
}

void Pipeline::fan_out(std::size_t node) {
  check_continues(node);
  fans_out_[node] = true;
}

void Pipeline::add_observer(std::shared_ptr<Observer> observer) {
  if (state() != PipelineState::idle) {
    throw std::logic_error("conveyor: add observers before the pipeline starts");
  }
  observers_.push_back(std::move(observer));
}

void Pipeline::fail_on_cancel(const std::shared_ptr<AckLedger>& ledger) {
  if (state() != PipelineState::idle) {
    throw std::logic_error("conveyor: tie ledgers to the pipeline before it starts");
  }
  ledgers_.push_back(ledger);
}

PipelineState Pipeline::state() const noexcept {
  return state_.load(std::memory_order_acquire);
}

void Pipeline::plan() {
  using detail::Role;
  if (nodes_.size() < 2 || nodes_.front()->role() != Role::source ||
      nodes_.back()->role() != Role::sink) {
    throw std::logic_error("conveyor: a pipeline needs a source, then stages, then a sink");
  }
  std::size_t sources = 0;
  std::size_t sinks = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (next_[i].empty() != (nodes_[i]->role() == Role::sink)) {
      throw std::logic_error(
          "conveyor: a pipeline needs a source, then stages, then a sink (in every branch)");
    }
    if (nodes_[i]->role() == Role::source) ++sources;
    if (nodes_[i]->role() == Role::sink) ++sinks;
    // A merge's edge has the workers of its inputs as its producers, and nothing else.
    for (const std::size_t parent : parents_[i]) {
      if (parents_[i].size() > 1 && (next_[parent].size() > 1 || routes(parent))) {
        throw std::logic_error(
            "conveyor: an input of a merge cannot also go elsewhere (a tee "
            "or route): put a stage between them");
      }
    }
    if (routes(i) && next_[i].size() != routes_[i].predicates + 1) {
      throw std::logic_error(
          "conveyor: a route has one branch per predicate and a default one, "
          "and nothing else continues from where it splits");
    }
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    detail::NodeBase& node = *nodes_[i];
    if (node.name().empty()) {
      // Unique, so that each stage has statistics and metrics of its own (the branches of a tee
      // or a route end in sinks of their own).
      std::string name = node.role() == Role::source
                             ? sources > 1 ? "source-" + std::to_string(i) : std::string("source")
                         : node.role() == Role::sink
                             ? sinks > 1 ? "sink-" + std::to_string(i) : std::string("sink")
                             : "stage-" + std::to_string(i);
      const std::lock_guard lock(names_mutex_);
      node.set_name(std::move(name));
    }
    std::size_t workers = 1;
    if (node.mode() == Mode::parallel) {
      workers = node.options().workers;
      if (workers == 0) workers = std::max(1U, std::thread::hardware_concurrency());
      // A stage fused with Fuse::always runs on its group's workers: fuse() checks it there.
      if (workers > 1 && !node.copyable() && node.options().fuse != Fuse::always) {
        throw std::invalid_argument("stage '" + node.name() +
                                    "': several workers need copyable stage code (each worker "
                                    "gets a copy); share state through a pointer or Shared<T>");
      }
    }
    node.prepare(workers);
  }
  fuse();
  for (const auto& node : nodes_)
    node->check_options();
}

std::string Pipeline::place_obstacle(std::size_t node, bool group_has_fused_branch) const {
  if (parents_[node].size() > 1) return "it merges several inputs, which reach it through channels";
  const std::size_t parent = parents_[node].front();
  if (next_[parent].size() == 1) return {};
  // A branch.
  if (routes(parent)) {
    return "it is a branch of a route, which sends each item through a channel";
  }
  if (nodes_[node]->options().fuse != Fuse::always) {
    return "it is one of several branches after it, which take its items through channels";
  }
  if (std::any_of(next_[parent].begin(), next_[parent].end(),
                  [&](std::size_t other) { return nodes_[other]->fused(); })) {
    return "another branch of the tee is fused into it: one branch at most";
  }
  if (group_has_fused_branch) {
    return "a branch of an earlier tee is fused into the same workers: one per group of fused "
           "stages";
  }
  return {};
}

void Pipeline::fuse() {
  using detail::NodeBase;
  std::size_t total = 0;
  for (const auto& node : nodes_)
    total += node->workers();
  const std::size_t hardware = std::max(1U, std::thread::hardware_concurrency());
  // Per node, the fused group that ends at it: its workers, and whether it emits in source order
  // (one worker, and a sequencer in it).
  std::vector<std::size_t> group_workers(nodes_.size());
  std::vector<bool> group_ordered(nodes_.size());
  // Per node, the first node of its group, and per first node, whether a branch of a tee is fused
  // into its group (one at most: each adds a port with lanes to the group's workers).
  std::vector<std::size_t> group_head(nodes_.size());
  std::vector<bool> has_fused_branch(nodes_.size(), false);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    NodeBase& node = *nodes_[i];
    group_head[i] = i;
    if (parents_[i].empty()) {  // a source
      group_workers[i] = node.workers();
      group_ordered[i] = node.sequencer();
      continue;
    }
    const std::size_t parent = parents_[i].front();
    const NodeBase& before = *nodes_[parent];
    std::size_t workers = group_workers[parent];
    bool ordered = group_ordered[parent];
    bool fused = false;
    if (node.options().fuse != Fuse::never) {
      // One branch of a tee may run on the workers before it, when asked (Fuse::always): it gets
      // a copy of each item there, and the others take theirs through the tee's channels.
      std::string obstacle = place_obstacle(i, has_fused_branch[group_head[parent]]);
      if (obstacle.empty()) obstacle = detail::fusion_obstacle(before, node, workers, ordered);
      if (node.options().fuse == Fuse::always) {
        if (!obstacle.empty()) {
          throw std::invalid_argument("stage '" + node.name() + "': cannot be fused into '" +
                                      before.name() + "': " + obstacle);
        }
        fused = true;
      } else {
        fused = obstacle.empty() && node.mode() == Mode::parallel &&
                before.mode() == Mode::parallel && node.workers() == workers && total > hardware;
      }
    }
    if (fused) {
      node.fuse(workers);
      ordered = ordered || node.sequencer();
      group_head[i] = group_head[parent];
      if (next_[parent].size() > 1) has_fused_branch[group_head[i]] = true;
    } else {
      workers = node.workers();
      ordered = node.sequencer();
    }
    group_workers[i] = workers;
    group_ordered[i] = ordered;
  }
}

void Pipeline::start() {
  if (state() != PipelineState::idle) {
    throw std::logic_error("conveyor: a pipeline runs once");
  }
  plan();

  const std::size_t count = nodes_.size();
  auto runtime = std::make_unique<detail::Runtime>();
  const bool cooperative = options_.executor.kind() == Executor::Kind::tbb_arena;

  // Fused groups: heads[i] is the group's first node, tails[i] its last, and numbers[i] whether a
  // node of the group up to i numbers its items (a sequencer), so the group's port does.
  auto fused = [&](std::size_t i) { return nodes_[i]->fused(); };
  runtime->heads.resize(count);
  std::vector<std::size_t> tails(count);
  std::vector<bool> numbers(count);
  // A fused node is its parent's only next node; every node comes after its parent.
  auto fused_next = [&](std::size_t i) { return next_[i].size() == 1 && fused(next_[i].front()); };
  for (std::size_t i = 0; i < count; ++i) {
    // A fused node has one parent.
    runtime->heads[i] = fused(i) ? runtime->heads[parents_[i].front()] : i;
    numbers[i] = nodes_[i]->sequencer() || (fused(i) && numbers[parents_[i].front()]);
  }
  for (std::size_t i = count; i-- > 0;) {
    tails[i] = fused_next(i) ? tails[next_[i].front()] : i;
  }
  // Before a tee: the branch fused into node i, if one is (`count` if none). The nodes that take
  // node i's items through its output edge: those after it that are not fused into it.
  std::vector<std::size_t> fused_branch(count, count);
  std::vector<std::vector<std::size_t>> channel_next(count);
  for (std::size_t i = 0; i < count; ++i) {
    for (const std::size_t after : next_[i]) {
      if (!fused(after)) {
        channel_next[i].push_back(after);
      } else if (next_[i].size() > 1) {
        fused_branch[i] = after;
      }
    }
  }

  std::size_t total_workers = 0;
  runtime->doorbells.resize(count);
  runtime->owed.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (fused(i)) continue;
    for (std::size_t w = 0; w < nodes_[i]->workers(); ++w) {
      runtime->doorbells[i].push_back(std::make_unique<sync::Doorbell>(cooperative));
      runtime->owed[i].push_back(std::make_unique<sync::DeferredWakes>());
    }
    total_workers += nodes_[i]->workers();
  }

  // Which edges an in-order stage reads (ordered_in[i]: the edge into node i). A group with a
  // sequencer starts with one (fuse()), so only its first node decides.
  std::vector<bool> ordered_in(count, false);
  auto ordered_after = [&](std::size_t i) {
    return std::any_of(next_[i].begin(), next_[i].end(),
                       [&](std::size_t after) { return static_cast<bool>(ordered_in[after]); });
  };
  for (std::size_t i = count - 1; i >= 1; --i) {
    if (fused(i) || parents_[i].empty()) continue;
    const detail::NodeBase& node = *nodes_[i];
    if (parents_[i].size() > 1) {
      // A merged stream has no common order: a serial_in_order stage at the merge numbers it as
      // it arrives, for the in-order stages after it.
      if (!node.sequencer() && ordered_after(tails[i])) {
        throw std::invalid_argument(
            "stage '" + node.name() +
            "': the serial_in_order stage after it needs the order of one stream, and a merge "
            "has none: make the stage at the merge serial_in_order, which numbers the merged "
            "stream as it arrives");
      }
      continue;
    }
    ordered_in[i] =
        node.mode() == Mode::serial_in_order || (!node.sequencer() && ordered_after(tails[i]));
    if (ordered_in[i] && node.mode() != Mode::serial_in_order &&
        node.options().dispatch.policy().copies() && node.workers() > 1) {
      throw std::invalid_argument("stage '" + node.name() +
                                  "': a serial_in_order stage after it cannot restore the order "
                                  "of items broadcast to several workers");
    }
  }

  std::vector<detail::Wiring> wirings(count);
  runtime->edges.resize(count);
  runtime->out_edges.assign(count, nullptr);
  runtime->input_offsets.assign(count, 0);
  // A merge's edge: the workers of all its inputs, one input after another, are its producers.
  for (std::size_t m = 0; m < count; ++m) {
    if (parents_[m].size() < 2) continue;
    std::size_t producers = 0;
    for (const std::size_t parent : parents_[m]) {
      wirings[parent].output_offset = producers;
      producers += nodes_[parent]->workers();
    }
    const StageOptions& options = nodes_[m]->options();
    const std::size_t owner = parents_[m].front();
    runtime->edges[owner] = nodes_[owner]->make_output_edge(
        producers, std::vector<std::size_t>(nodes_[m]->workers(), options.channel.capacity()));
    for (const std::size_t parent : parents_[m]) {
      runtime->out_edges[parent] = runtime->edges[owner].get();
      wirings[parent].output_dispatch = &options.dispatch;
      wirings[parent].output_batch = options.batch;
    }
    wirings[m].input_in_order = false;
  }
  for (std::size_t i = 0; i < count; ++i) {
    // The tagging of the edge out of the group, for every port of the group.
    const std::size_t tail = tails[i];
    if (!next_[tail].empty()) {
      wirings[i].output_tagging = !ordered_after(tail) ? detail::Tagging::none
                                  : numbers[tail]      ? detail::Tagging::sequencer
                                                       : detail::Tagging::forward;
    }
    if (channel_next[i].empty() || runtime->out_edges[i] != nullptr) continue;
    // The consumers: the workers of each next node, one node after another.
    std::vector<std::size_t> capacities;
    std::vector<std::size_t> starts;
    std::size_t batch = std::numeric_limits<std::size_t>::max();
    // Several branches take this edge (a tee's or a route's policy), and each branch's head how
    // it spreads them over its lanes.
    const bool branches = channel_next[i].size() > 1 || routes(i);
    detail::BranchHeads heads;
    for (const std::size_t after : channel_next[i]) {
      const StageOptions& options = nodes_[after]->options();
      runtime->input_offsets[after] = capacities.size();
      starts.push_back(capacities.size());
      capacities.insert(capacities.end(), nodes_[after]->workers(), options.channel.capacity());
      batch = std::min(batch, options.batch);
      const Dispatch::Kind kind = options.dispatch.kind();
      if (branches && kind == Dispatch::Kind::least_loaded && nodes_[after]->workers() > 1) {
        throw std::invalid_argument("stage '" + nodes_[after]->name() +
                                    "': the first stage of a branch that shares the tee's or "
                                    "route's edge cannot take its items least loaded (give it "
                                    "round-robin, by_key or broadcast)");
      }
      // A keyed or broadcast head of several workers picks its lanes from each item: one item
      // per parcel. With one worker, every dispatch comes to the same lane.
      const bool placed = kind == Dispatch::Kind::by_key || kind == Dispatch::Kind::broadcast;
      heads.push_back(placed && nodes_[after]->workers() > 1 ? &options.dispatch.policy()
                                                             : nullptr);
      if (branches && heads.back() != nullptr) batch = 1;
    }
    runtime->edges[i] = nodes_[i]->make_output_edge(nodes_[i]->workers(), capacities);
    runtime->out_edges[i] = runtime->edges[i].get();
    if (!branches) {
      wirings[i].output_dispatch = &nodes_[channel_next[i].front()]->options().dispatch;
    } else {
      starts.push_back(capacities.size());
      std::shared_ptr<const detail::DispatchPolicy> policy;
      if (!routes(i)) {
        policy = detail::tee_dispatch(std::move(starts), std::move(heads));
      } else {
        std::vector<bool> ordered;
        for (const std::size_t after : channel_next[i])
          ordered.push_back(ordered_in[after]);
        policy = detail::route_dispatch(std::move(starts), routes_[i], std::move(ordered),
                                        std::move(heads));
        wirings[i].route_port = routes_[i].make_port;
        wirings[i].route_item = routes_[i].item;
      }
      runtime->branch_dispatches.push_back(
          std::make_unique<Dispatch>(detail::branch_dispatch(std::move(policy))));
      wirings[i].output_dispatch = runtime->branch_dispatches.back().get();
    }
    wirings[i].output_batch = batch;
  }
  // A fused branch numbers nothing: the order of the stream and the window that bounds it belong
  // to the tee's channel edge.
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t branch = fused_branch[i];
    if (branch != count && wirings[branch].output_tagging != detail::Tagging::none) {
      throw std::invalid_argument("stage '" + nodes_[branch]->name() +
                                  "': a tee branch fused into '" + nodes_[i]->name() +
                                  "' cannot lead to a serial_in_order stage: fuse a branch "
                                  "without one, or give this one workers of its own");
    }
  }

  // A window gate between every in-order stage and the sequencer whose numbers it reads, sized to
  // what the channels between them hold plus one per worker. After a tee, the in-order stages of
  // the branches share their sequencer's window, the largest any of them needs, and it waits for
  // the slowest of them.
  // A fused in-order stage gets its items in order from its group, and needs neither.
  std::vector<std::uint64_t> windows(count, 0);  // per sequencer
  std::vector<std::size_t> sequencer_of(count, 0);
  // A source and a stage at a merge read no numbered edge.
  auto reads_in_order = [&](std::size_t k) {
    return nodes_[k]->mode() == Mode::serial_in_order && !fused(k) && parents_[k].size() == 1;
  };
  for (std::size_t k = 1; k < count; ++k) {
    if (!reads_in_order(k)) continue;
    std::uint64_t window = 1;
    std::size_t m = k;
    for (;;) {
      // Up to the sequencer, through nodes of one parent (a merge is one only if it numbers).
      const std::size_t parent = parents_[m].front();
      const StageOptions& options = nodes_[m]->options();
      if (!fused(m)) {
        window += nodes_[parent]->workers() * nodes_[m]->workers() * options.channel.capacity() *
                  options.batch;
      }
      // An asynchronous stage holds up to in_flight items per worker.
      if (m != k) window += nodes_[m]->workers() * nodes_[m]->in_flight();
      if (nodes_[parent]->sequencer()) break;
      m = parent;
    }
    const std::size_t j = parents_[m].front();
    sequencer_of[k] = j;
    windows[j] = std::max(windows[j], std::clamp<std::uint64_t>(window, 2, detail::max_window));
  }
  std::vector<detail::WindowGate*> leaders(count, nullptr);
  for (std::size_t k = 1; k < count; ++k) {
    if (!reads_in_order(k)) continue;
    const std::size_t j = sequencer_of[k];
    if (leaders[j] == nullptr) {
      // The sequencer's group numbers at its end, on its first node's worker.
      runtime->gates.push_back(std::make_unique<detail::WindowGate>(
          windows[j], *runtime->doorbells[runtime->heads[j]].front()));
      leaders[j] = runtime->gates.back().get();
      wirings[tails[j]].output_gate = leaders[j];
    } else {
      runtime->gates.push_back(std::make_unique<detail::WindowGate>(*leaders[j]));
    }
    wirings[k].reorder_window = windows[j];
    wirings[k].input_gate = runtime->gates.back().get();
  }

  if (std::any_of(nodes_.begin(), nodes_.end(),
                  [](const auto& node) { return node->asynchronous(); })) {
    runtime->io = std::make_unique<detail::IoPool>(options_.io_threads);
  }

  // A group's workers owe wake-ups to the consumers of the edges out of the group: the one at
  // its end, and before a tee with a fused branch, the tee's too. By the group's head.
  std::vector<std::vector<sync::Doorbell*>> owed_to(count);
  for (std::size_t k = 0; k < count; ++k) {
    const std::vector<sync::Doorbell*> bells = runtime->bells_of(channel_next[k]);
    std::vector<sync::Doorbell*>& consumers = owed_to[runtime->heads[k]];
    consumers.insert(consumers.end(), bells.begin(), bells.end());
  }
  std::vector<sync::Doorbell*> all_bells;
  for (std::size_t i = 0; i < count; ++i) {
    detail::Wiring& wiring = wirings[i];
    wiring.control = &control_;
    wiring.io = runtime->io.get();
    wiring.own = runtime->bells_of(i);
    if (!parents_[i].empty() && !fused(i)) {
      wiring.upstream = runtime->bells_of(parents_[i]);
      wiring.input = runtime->out_edges[parents_[i].front()];
      wiring.input_offset = runtime->input_offsets[i];
    }
    if (!channel_next[i].empty()) {
      wiring.downstream = runtime->bells_of(channel_next[i]);
      wiring.output = runtime->out_edges[i];
    }
    if (!fused(i) && !owed_to[i].empty()) {
      for (const auto& owed : runtime->owed[i]) {
        owed->set_consumers(owed_to[i]);
        wiring.owed.push_back(owed.get());
      }
    }
    if (!fused(i)) all_bells.insert(all_bells.end(), wiring.own.begin(), wiring.own.end());
  }
  // Last to first, so that a node's fused successor exists when it is instantiated.
  runtime->instances.resize(count);
  for (std::size_t i = count; i-- > 0;) {
    if (fused_next(i)) wirings[i].fused_next = runtime->instances[next_[i].front()].get();
    if (fused_branch[i] != count) {
      wirings[i].fused_next = runtime->instances[fused_branch[i]].get();
    }
    runtime->instances[i] = nodes_[i]->instantiate(wirings[i]);
  }
  control_.set_doorbells(std::move(all_bells));
  control_.set_failure_handler(options_.on_failure);
  std::vector<std::function<void()>> on_cancel;
  for (const std::weak_ptr<AckLedger>& tied : ledgers_) {
    on_cancel.emplace_back([tied] {
      if (const std::shared_ptr<AckLedger> ledger = tied.lock()) ledger->fail_outstanding();
    });
  }
  control_.set_cancel_handlers(std::move(on_cancel));
  control_.expect_workers(static_cast<std::int32_t>(total_workers));

  std::vector<std::function<void()>> jobs;
  for (std::size_t i = 0; i < count; ++i) {
    if (fused(i)) continue;
    detail::Instance* instance = runtime->instances[i].get();
    for (std::size_t w = 0; w < nodes_[i]->workers(); ++w) {
      // The thread's name in top -H, gdb and perf: the stage's name and the worker's index.
      std::string name = nodes_[i]->name().substr(0, 11) + "/" + std::to_string(w);
      jobs.emplace_back([instance, w, control = &control_, cooperative, name = std::move(name)] {
        if (!cooperative) pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
        instance->run_worker(w);
        control->worker_finished();
      });
    }
  }
  if (cooperative) {
    runtime->launcher = std::make_unique<detail::ArenaLauncher>(options_.executor.thread_count());
  } else {
    runtime->launcher = std::make_unique<detail::ThreadLauncher>();
  }

  runtime_ = std::move(runtime);
  started_ns_.store(detail::now_nanoseconds(), std::memory_order_relaxed);
  // Release: the runtime, for stats() on other threads, which load the state with acquire.
  state_.store(PipelineState::running, std::memory_order_release);
  const std::size_t jobs_count = jobs.size();
  std::exception_ptr launch_error;
  const std::size_t launched = runtime_->launcher->launch(std::move(jobs), launch_error);
  if (launched < jobs_count) {
    // The pipeline fails as if a stage had thrown: the workers that run are cancelled, and wait()
    // rethrows the error once they have returned. Those that never started are finished.
    control_.fail(launch_error);
    for (std::size_t i = launched; i < jobs_count; ++i)
      control_.worker_finished();
  }
  for (const auto& observer : observers_) {
    try {
      observer->on_start(*this);
    } catch (...) {
      // An observer cannot fail the pipeline.
    }
  }
}

void Pipeline::supervise() {
  bool cancelled = false;
  auto next_sample = std::chrono::steady_clock::now() + options_.sample_interval;
  for (;;) {
    const std::int32_t requests = control_.requests();
    if ((requests & detail::Control::finished_bit) != 0) return;
    if ((requests & (detail::Control::stop_bit | detail::Control::abort_bit)) != 0) {
      PipelineState expected = PipelineState::running;
      state_.compare_exchange_strong(expected, PipelineState::stopping, std::memory_order_acq_rel);
    }
    if ((requests & detail::Control::abort_bit) != 0 && !cancelled) {
      cancelled = true;
      control_.cancel();
    }
    // Wake-ups that producers busy elsewhere still owe (deferred_wakes.hpp).
    for (const auto& node : runtime_->owed) {
      for (const auto& owed : node)
        owed->deliver();
    }
    const auto next_sweep = std::chrono::steady_clock::now() + sync::DeferredWakes::sweep_interval;
    if (options_.sample_interval.count() > 0) {
      if (std::chrono::steady_clock::now() >= next_sample) {
        const PipelineStats snapshot = stats();
        for (const auto& observer : observers_) {
          try {
            observer->on_sample(*this, snapshot);
          } catch (...) {
            // An observer cannot fail the pipeline.
          }
        }
        next_sample += options_.sample_interval;
      }
      control_.wait_for_change_until(requests, std::min(next_sample, next_sweep));
    } else {
      control_.wait_for_change_until(requests, next_sweep);
    }
  }
}

void Pipeline::wait() {
  if (state() == PipelineState::idle) {
    throw std::logic_error("conveyor: wait() on a pipeline that has not started");
  }
  if (waited_) {
    if (auto error = control_.first_error()) std::rethrow_exception(error);
    return;
  }
  supervise();
  runtime_->launcher->join();
  // Coroutines that workers returned from (on an abort or a failure) are destroyed here.
  if (runtime_->io) runtime_->io->finish();
  waited_ = true;
  finished_ns_.store(detail::now_nanoseconds(), std::memory_order_relaxed);
  const std::exception_ptr error = control_.first_error();
  state_.store(error ? PipelineState::failed : PipelineState::finished, std::memory_order_release);
  const PipelineStats final_stats = stats();
  for (const auto& observer : observers_) {
    try {
      observer->on_finish(*this, final_stats, error);
    } catch (...) {
      // An observer cannot fail the pipeline.
    }
  }
  if (error) std::rethrow_exception(error);
}

PipelineStats Pipeline::stats() const {
  PipelineStats result;
  result.name = options_.name;
  result.state = state();
  const bool started = result.state != PipelineState::idle;
  if (started) {
    const std::int64_t start = started_ns_.load(std::memory_order_relaxed);
    std::int64_t end = finished_ns_.load(std::memory_order_relaxed);
    if (end == 0) end = detail::now_nanoseconds();
    result.elapsed_seconds = static_cast<double>(end - start) * 1e-9;
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const detail::NodeBase& node = *nodes_[i];
    StageStats stage;
    {
      const std::lock_guard lock(names_mutex_);
      stage.name = node.name();
    }
    stage.mode = node.mode();
    if (started) {
      stage.workers = node.workers();
      for (std::size_t w = 0; w < node.workers(); ++w)
        detail::add_to(stage, node.counters(w));
      if (!parents_[i].empty() && !node.fused()) {
        const detail::EdgeBase& input = *runtime_->out_edges[parents_[i].front()];
        const std::size_t first = runtime_->input_offsets[i];
        stage.channel_depth = input.depth(first, node.workers());
        stage.channel_capacity = input.capacity(first, node.workers());
      }
      if (node.fused()) stage.fused_into = nodes_[runtime_->heads[i]]->name();
    }
    result.stages.push_back(std::move(stage));
  }
  std::lock_guard lock(resources_mutex_);
  for (const auto& resource : resources_)
    result.resources.push_back(resource());
  return result;
}

}  // namespace conveyor
