// How a stage runs and how items reach it: execution mode, channel, dispatch and batching.
//
// The options of a stage describe the stage itself (mode, workers) and the edge that feeds it
// (channel, dispatch, batch): the stage before it fills the channel the way `dispatch` says.
//
//   conveyor::stage(parse, {.mode = conveyor::Mode::parallel, .workers = 4,
//                           .channel = conveyor::Channel::queue(1024), .batch = 64})
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

#include "conveyor/framework/detail/dispatch_policy.hpp"
#include "conveyor/framework/detail/signature.hpp"

namespace conveyor {

enum class Mode {
  // One worker; items arrive in the order of the source (or of the last serial_in_order stage
  // before it), even after parallel stages.
  serial_in_order,
  // One worker; items in the order they arrive.
  serial_out_of_order,
  // `workers` workers, each with its own copy of the stage.
  parallel,
};

// The channel between each producer worker and each consumer worker of an edge.
class Channel {
 public:
  // One slot (seed 002's mailbox): the producer hands over one item and goes on only once the
  // consumer has taken it.
  static constexpr Channel mailbox() noexcept { return Channel(1); }
  // A bounded queue of `capacity` parcels (items, or batches when batching is on).
  static constexpr Channel queue(std::size_t capacity) noexcept { return Channel(capacity); }

  [[nodiscard]] constexpr std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] constexpr bool is_mailbox() const noexcept { return capacity_ == 1; }

 private:
  explicit constexpr Channel(std::size_t capacity) noexcept : capacity_(capacity) {}
  std::size_t capacity_;
};

template <class Item>
class KeyedDispatch;
class Dispatch;

namespace detail {
// The dispatch of an edge into several branches (a tee's or a route's), with the policy the
// planner made for it (dispatch_policy.hpp).
Dispatch branch_dispatch(std::shared_ptr<const DispatchPolicy> policy);
}  // namespace detail

// Which worker of a stage gets an item. Each kind is a policy of its own
// (detail/dispatch_policy.hpp), which the Dispatch holds.
class Dispatch {
 public:
  enum class Kind { round_robin, by_key, broadcast, least_loaded };

  // The next worker whose channel has room, starting after the last one served (seed 002).
  static Dispatch round_robin();
  // Every worker gets every item (the items must be copyable).
  static Dispatch broadcast();
  // The worker whose channel holds the fewest parcels, ties taking turns: for items whose cost
  // varies, so that a worker stuck on a slow item is not handed more.
  static Dispatch least_loaded();

  // The worker chosen by a hash of `key(item)`, so that all items with one key meet on one worker
  // and per-key state needs no lock. `key` is a data member pointer (&Record::status), a member
  // function pointer, or a callable taking the item; for a generic lambda name the item type:
  // Dispatch::by_key<Record>([](const auto& r) { return r.host; }). Given to stage() or sink()
  // as their third argument, the key's item type is checked when the stage is chained, at
  // compile time; in StageOptions::dispatch, by start().
  template <class Item = void, class Key>
  static auto by_key(Key key) {
    using item_type = std::conditional_t<std::is_void_v<Item>, detail::key_argument_t<Key>, Item>;
    static_assert(!std::is_void_v<item_type>,
                  "Dispatch::by_key: cannot tell which item type the key function takes; name "
                  "it: Dispatch::by_key<Item>(key)");
    Dispatch dispatch(Kind::by_key,
                      detail::keyed_dispatch([key = std::move(key)](const void* item) {
                        const auto& value = *static_cast<const item_type*>(item);
                        const auto& k = std::invoke(key, value);
                        return mix(std::hash<std::decay_t<decltype(k)>>{}(k));
                      }));
    dispatch.item_type_ = typeid(item_type);
    return KeyedDispatch<item_type>(std::move(dispatch));
  }

  // Worker `partition(item) % workers`, for items that already carry a partition number (a hash
  // their producer computed, say): numbers 0..n-1 spread evenly over the workers, where hashing
  // them again could put most of a few partitions on one worker. The same key function forms as
  // by_key; the partition is an unsigned integer. Items of one partition meet on one worker.
  template <class Item = void, class Key>
  static auto by_partition(Key key) {
    using item_type = std::conditional_t<std::is_void_v<Item>, detail::key_argument_t<Key>, Item>;
    static_assert(!std::is_void_v<item_type>,
                  "Dispatch::by_partition: cannot tell which item type the key function takes; "
                  "name it: Dispatch::by_partition<Item>(key)");
    Dispatch dispatch(
        Kind::by_key, detail::keyed_dispatch([key = std::move(key)](const void* item) {
          const auto& value = *static_cast<const item_type*>(item);
          const auto partition = std::invoke(key, value);
          using partition_type = std::decay_t<decltype(partition)>;
          static_assert(std::is_unsigned_v<partition_type> && !std::is_same_v<partition_type, bool>,
                        "Dispatch::by_partition: the partition must be an unsigned integer");
          return static_cast<std::uint64_t>(partition);
        }));
    dispatch.item_type_ = typeid(item_type);
    return KeyedDispatch<item_type>(std::move(dispatch));
  }

  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  // by_key: the type the key function takes.
  [[nodiscard]] std::type_index item_type() const noexcept { return item_type_; }
  // The policy that places parcels on the edge's lanes.
  [[nodiscard]] const detail::DispatchPolicy& policy() const noexcept { return *policy_; }

 private:
  friend Dispatch detail::branch_dispatch(std::shared_ptr<const detail::DispatchPolicy> policy);

  Dispatch(Kind kind, std::shared_ptr<const detail::DispatchPolicy> policy)
      : kind_(kind), policy_(std::move(policy)) {}

  // A dispatch of a kind whose policy has no state: one policy object serves every edge.
  template <class Policy>
  static Dispatch stateless(Kind kind) {
    static const auto policy = std::make_shared<const Policy>();
    return Dispatch(kind, policy);
  }

  // std::hash of an integer is the integer; spread it over the high bits as well.
  static std::uint64_t mix(std::uint64_t value) noexcept {
    value ^= value >> 30;
    value *= 0xbf58476d1ce4e5b9ULL;
    value ^= value >> 27;
    value *= 0x94d049bb133111ebULL;
    return value ^ (value >> 31);
  }

  Kind kind_;
  std::type_index item_type_ = typeid(void);
  std::shared_ptr<const detail::DispatchPolicy> policy_;
};

// What Dispatch::by_key and by_partition return: a Dispatch that names, in its type, the item
// type its key function takes, so that stage(code, options, dispatch) can check it against the
// stage's items at compile time. It converts to a plain Dispatch for StageOptions::dispatch.
template <class Item>
class KeyedDispatch : public Dispatch {
 public:
  using item_type = Item;
  explicit KeyedDispatch(Dispatch dispatch) : Dispatch(std::move(dispatch)) {}
};

// Whether a stage runs on the workers of the stage before it, its code called from there with no
// channel in between ("fusion", as Flink chains operators and oneTBB carries a token). Its
// statistics stay its own. See docs/design/fusion.md for when it pays.
enum class Fuse {
  // Fused when the stage and the one before it are both parallel with as many workers, and the
  // pipeline has more workers than the machine has hardware threads (a worker of its own could
  // not add CPU time, and fusing saves a hand-over per item).
  automatic,
  // Always fused; start() throws std::invalid_argument if that would change what the stage sees
  // (a serial stage after several workers, an in-order stage after an unordered one, by_key or
  // broadcast dispatch, asynchronous stages). A parallel stage takes the worker count of the
  // stage it is fused into. The first stage of one branch of a tee may be fused: it gets a copy
  // of each item on the worker that emitted it (not a route's branch, not a second branch on the
  // same workers, not a branch that leads to a serial_in_order stage).
  always,
  // Never fused: the stage has workers and a channel of its own.
  never,
};

struct StageOptions {
  // Names the stage in errors, statistics and metrics; "stage-<position>" if empty.
  std::string name{};
  Mode mode = Mode::serial_out_of_order;
  // Mode::parallel only: how many workers (0: one per hardware thread). Serial stages have one.
  std::size_t workers = 0;
  Channel channel = Channel::queue(128);
  Dispatch dispatch = Dispatch::round_robin();
  // Items per parcel on the edge into this stage: 1 sends every item on its own; B > 1 groups up
  // to B items, so that one hand-over (and at most one wake-up) carries B items.
  std::size_t batch = 1;
  // Asynchronous stages (code that returns an asio::awaitable): how many items each worker may
  // have awaiting at once. Synchronous stages take one item at a time and leave it at 1.
  std::size_t in_flight = 1;
  Fuse fuse = Fuse::automatic;
};

struct SourceOptions {
  std::string name{};
};

// Where the workers run.
class Executor {
 public:
  enum class Kind { threads, tbb_arena };

  // A dedicated thread per worker; a blocked worker blocks its thread. The default.
  static Executor threads() noexcept { return Executor(Kind::threads, 0); }
  // Tasks in a oneTBB task_arena of `threads` threads; a blocked worker suspends its task and the
  // thread runs another, so a pipeline may have more workers than the arena has threads. The
  // threads are oneTBB's workers (the thread that runs the pipeline waits): the pipeline raises
  // oneTBB's max_allowed_parallelism to `threads` + 1 while it runs, but a tbb::global_control of
  // the caller's with a lower limit wins (oneTBB takes the smallest) and leaves it fewer threads.
  static Executor tbb(std::size_t threads) noexcept { return Executor(Kind::tbb_arena, threads); }

  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  [[nodiscard]] std::size_t thread_count() const noexcept { return threads_; }

 private:
  Executor(Kind kind, std::size_t threads) noexcept : kind_(kind), threads_(threads) {}
  Kind kind_;
  std::size_t threads_;
};

struct PipelineOptions {
  // Names the pipeline in statistics and metrics.
  std::string name = "pipeline";
  Executor executor = Executor::threads();
  // How often observers get a snapshot while the pipeline runs (0: only at the start and end).
  std::chrono::milliseconds sample_interval{0};
  // Threads of the I/O context that runs asynchronous stages' coroutines; started only when the
  // pipeline has such a stage.
  std::size_t io_threads = 1;
  // Called once, with the first error, by the thread that caught it, before the pipeline cancels
  // its stages: a source that checkpoints (what it emitted is acknowledged, ack.hpp) hears of the
  // failure before the items in flight are dropped. It should return quickly; what it throws is
  // dropped.
  std::function<void(const std::exception_ptr&)> on_failure{};
};

}  // namespace conveyor
