// HeavyHitters: an open-addressing index over the keys held, a min-heap of their counts (bounded
// mode only), and an arena of key bytes that is compacted when evicted keys waste most of it.
#include "conveyor/stages/heavy_hitters.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

namespace conveyor::stages {

namespace {

// Key bytes, in blocks: freeing the arena frees its blocks, whatever the number of keys.
class KeyArena {
 public:
  std::string_view copy(std::string_view key) {
    if (key.size() > left_) {
      const std::size_t size = std::max(block_size, key.size());
      blocks_.push_back(std::make_unique<char[]>(size));
      cursor_ = blocks_.back().get();
      left_ = size;
      reserved_ += size;
    }
    if (!key.empty()) std::memcpy(cursor_, key.data(), key.size());
    const std::string_view copied(cursor_, key.size());
    cursor_ += key.size();
    left_ -= key.size();
    return copied;
  }
  [[nodiscard]] std::size_t reserved() const noexcept { return reserved_; }

 private:
  static constexpr std::size_t block_size = std::size_t{64} << 10U;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* cursor_ = nullptr;
  std::size_t left_ = 0;
  std::size_t reserved_ = 0;
};

// Items are numbered in 32 bits in the table's slots (0 meaning empty) and the heap.
constexpr std::size_t max_items = std::numeric_limits<std::uint32_t>::max() - 1;

}  // namespace

struct HeavyHitters::State {
  struct Item {
    std::string_view key;
    std::uint64_t hash = 0;
    std::uint64_t count = 0;
    std::uint64_t error = 0;
    std::uint32_t heap_position = 0;
  };

  bool bounded = false;
  std::uint64_t floor = 0;           // no key that is not held occurred more often than this
  std::vector<std::uint64_t> table;  // 0: empty; else (hash >> 32) << 32 | (item + 1)
  std::vector<Item> items;
  std::vector<std::uint32_t> heap;  // items by count, smallest first (bounded mode)
  KeyArena arena;
  std::size_t live_bytes = 0;  // key bytes of the items held

  static std::uint64_t slot_value(std::uint64_t hash, std::size_t item) noexcept {
    return (hash >> 32U << 32U) | (static_cast<std::uint64_t>(item) + 1);
  }
  static std::uint32_t item_of(std::uint64_t slot) noexcept {
    return static_cast<std::uint32_t>(slot) - 1;
  }
  [[nodiscard]] std::size_t mask() const noexcept { return table.size() - 1; }

  // The slot that holds `key`, or the empty slot where it would go.
  [[nodiscard]] std::size_t probe(std::string_view key, std::uint64_t hash) const noexcept {
    const std::uint64_t tag = hash >> 32U;
    for (std::size_t i = hash & mask();; i = (i + 1) & mask()) {
      const std::uint64_t slot = table[i];
      if (slot == 0 || ((slot >> 32U) == tag && items[item_of(slot)].key == key)) return i;
    }
  }

  void grow_table() {
    std::vector<std::uint64_t> old = std::move(table);
    table.assign(std::max<std::size_t>(16, old.size() * 2), 0);
    for (const std::uint64_t slot : old) {
      if (slot == 0) continue;
      std::size_t i = items[item_of(slot)].hash & mask();
      while (table[i] != 0)
        i = (i + 1) & mask();
      table[i] = slot;
    }
  }

  // Removes `item` from the table, shifting back the entries probed past it.
  void unlink(std::uint32_t item) noexcept {
    const std::uint64_t hash = items[item].hash;
    std::size_t hole = hash & mask();
    while (item_of(table[hole]) != item)
      hole = (hole + 1) & mask();
    for (std::size_t next = (hole + 1) & mask(); table[next] != 0; next = (next + 1) & mask()) {
      const std::size_t home = items[item_of(table[next])].hash & mask();
      // The entry at `next` may move into the hole unless its home lies cyclically in (hole, next].
      const bool stays =
          hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
      if (stays) continue;
      table[hole] = table[next];
      hole = next;
    }
    table[hole] = 0;
  }

  void sift_down(std::uint32_t position) noexcept {
    const auto n = static_cast<std::uint32_t>(heap.size());
    const std::uint32_t item = heap[position];
    const std::uint64_t count = items[item].count;
    for (;;) {
      std::uint32_t child = 2 * position + 1;
      if (child >= n) break;
      if (child + 1 < n && items[heap[child + 1]].count < items[heap[child]].count) ++child;
      if (items[heap[child]].count >= count) break;
      heap[position] = heap[child];
      items[heap[position]].heap_position = position;
      position = child;
    }
    heap[position] = item;
    items[item].heap_position = position;
  }

  void sift_up(std::uint32_t position) noexcept {
    const std::uint32_t item = heap[position];
    const std::uint64_t count = items[item].count;
    while (position > 0) {
      const std::uint32_t parent = (position - 1) / 2;
      if (items[heap[parent]].count <= count) break;
      heap[position] = heap[parent];
      items[heap[position]].heap_position = position;
      position = parent;
    }
    heap[position] = item;
    items[item].heap_position = position;
  }

  // Copies every key into a fresh arena when the evicted ones take most of the old one.
  void compact_if_wasteful() {
    if (arena.reserved() < 4 * live_bytes + (1U << 20U)) return;
    KeyArena fresh;
    for (Item& item : items)
      item.key = fresh.copy(item.key);
    arena = std::move(fresh);
  }

  // Room for `count` items without growing.
  void reserve(std::size_t count) {
    items.reserve(count);
    while (table.size() < 2 * (count + 1))
      grow_table();
  }

  // A new item for `key` (not held), when there is room, at the slot probe() gave.
  void append(std::string_view key, std::uint64_t hash, std::uint64_t count, std::uint64_t error,
              std::size_t slot) {
    const std::size_t item = items.size();
    items.push_back({arena.copy(key), hash, count, error, 0});
    live_bytes += key.size();
    table[slot] = slot_value(hash, item);
    if (bounded) {
      heap.push_back(static_cast<std::uint32_t>(item));
      sift_up(static_cast<std::uint32_t>(heap.size() - 1));
    }
  }
};

HeavyHitters::HeavyHitters(std::size_t capacity)
    : state_(std::make_unique<State>()), capacity_(capacity) {
  if (capacity > max_items) throw std::length_error("HeavyHitters: capacity too large");
  state_->bounded = capacity != unbounded;
}
HeavyHitters::HeavyHitters(const HeavyHitters& other)
    : state_(std::make_unique<State>()), capacity_(other.capacity_), total_(other.total_) {
  const State& theirs = *other.state_;
  State& ours = *state_;
  ours.bounded = theirs.bounded;
  ours.floor = theirs.floor;
  ours.reserve(theirs.items.size());
  for (const State::Item& item : theirs.items)
    ours.append(item.key, item.hash, item.count, item.error, ours.probe(item.key, item.hash));
}
HeavyHitters& HeavyHitters::operator=(const HeavyHitters& other) {
  if (this != &other) *this = HeavyHitters(other);
  return *this;
}
HeavyHitters::HeavyHitters(HeavyHitters&&) noexcept = default;
HeavyHitters& HeavyHitters::operator=(HeavyHitters&&) noexcept = default;
HeavyHitters::~HeavyHitters() = default;

std::size_t HeavyHitters::size() const noexcept {
  return state_->items.size();
}

std::uint64_t HeavyHitters::floor() const noexcept {
  return state_->floor;
}

std::uint64_t HeavyHitters::max_error() const noexcept {
  std::uint64_t most = 0;
  for (const State::Item& item : state_->items)
    most = std::max(most, item.error);
  return most;
}

void HeavyHitters::add(std::string_view key, std::uint64_t hash, std::uint64_t count) {
  if (count == 0) return;  // a held key has a count of at least 1
  State& s = *state_;
  if (s.items.size() >= max_items && s.table[s.probe(key, hash)] == 0 &&
      (!s.bounded || s.items.size() < capacity_)) {
    throw std::length_error("HeavyHitters: more keys than an item index holds");
  }
  total_ += count;
  if (s.table.size() < 2 * (s.items.size() + 1)) s.grow_table();
  const std::size_t slot = s.probe(key, hash);
  if (s.table[slot] != 0) {
    const std::uint32_t item = State::item_of(s.table[slot]);
    s.items[item].count += count;
    if (s.bounded) s.sift_down(s.items[item].heap_position);
    return;
  }
  if (!s.bounded || s.items.size() < capacity_) {
    s.append(key, hash, s.floor + count, s.floor, slot);
    return;
  }
  // Full: the key takes the place of the smallest count, which becomes its error.
  const std::uint32_t victim = s.heap.front();
  State::Item& item = s.items[victim];
  s.floor = std::max(s.floor, item.count);
  s.unlink(victim);
  s.live_bytes -= item.key.size();
  s.live_bytes += key.size();
  item.key = s.arena.copy(key);
  item.hash = hash;
  item.error = s.floor;
  item.count = s.floor + count;
  s.table[s.probe(key, hash)] = State::slot_value(hash, victim);
  s.sift_down(0);
  s.compact_if_wasteful();
}

HeavyHitters::Entry HeavyHitters::find(std::string_view key) const {
  const State& s = *state_;
  if (s.table.empty()) return {key, 0, 0};
  const std::uint64_t slot = s.table[s.probe(key, hash_key(key))];
  if (slot == 0) return {key, 0, 0};
  const State::Item& item = s.items[State::item_of(slot)];
  return {item.key, item.count, item.error};
}

void HeavyHitters::merge(const HeavyHitters& other) {
  if (capacity_ != other.capacity_) {
    // The bounds are stated for one capacity; an unbounded summary would take a lossy one's
    // estimates for exact counts.
    throw std::invalid_argument("HeavyHitters: merging summaries of different capacities");
  }
  const State& theirs = *other.state_;
  if (!state_->bounded) {
    const std::uint64_t total = total_ + other.total_;
    for (const State::Item& item : theirs.items)
      add(item.key, item.hash, item.count);
    total_ = total;
    return;
  }
  // Each side's count of a key, or that side's floor where it does not hold the key; then the
  // largest `capacity_` of the sums. The floor of what is dropped is the largest dropped sum.
  State& ours = *state_;
  struct Sum {
    std::string_view key;
    std::uint64_t hash;
    std::uint64_t count;
    std::uint64_t error;
  };
  std::vector<Sum> sums;
  sums.reserve(ours.items.size() + theirs.items.size());
  for (const State::Item& item : ours.items) {
    const Entry match = other.find(item.key);
    const bool held = match.count != 0;
    sums.push_back({item.key, item.hash, item.count + (held ? match.count : theirs.floor),
                    item.error + (held ? match.error : theirs.floor)});
  }
  for (const State::Item& item : theirs.items) {
    if (find(item.key).count != 0) continue;
    sums.push_back({item.key, item.hash, item.count + ours.floor, item.error + ours.floor});
  }
  std::uint64_t floor = ours.floor + theirs.floor;
  if (sums.size() > capacity_) {
    const auto larger = [](const Sum& a, const Sum& b) { return a.count > b.count; };
    std::nth_element(sums.begin(), sums.begin() + static_cast<std::ptrdiff_t>(capacity_),
                     sums.end(), larger);
    for (std::size_t i = capacity_; i < sums.size(); ++i)
      floor = std::max(floor, sums[i].count);
    sums.resize(capacity_);
  }
  auto merged = std::make_unique<State>();
  merged->bounded = true;
  merged->floor = floor;
  merged->reserve(sums.size());
  for (const Sum& sum : sums)
    merged->append(sum.key, sum.hash, sum.count, sum.error, merged->probe(sum.key, sum.hash));
  state_ = std::move(merged);
  total_ += other.total_;
}

std::vector<HeavyHitters::Entry> HeavyHitters::top(std::size_t n) const {
  std::vector<Entry> rows;
  rows.reserve(state_->items.size());
  for (const State::Item& item : state_->items)
    rows.push_back({item.key, item.count, item.error});
  const auto larger = [](const Entry& a, const Entry& b) {
    return a.count != b.count ? a.count > b.count : a.key < b.key;
  };
  const std::size_t k = std::min(n, rows.size());
  std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(k), rows.end(),
                    larger);
  rows.resize(k);
  return rows;
}

}  // namespace conveyor::stages
