// ResourceTotals: shared resources' figures per object, settled when their runs finish.
#include "conveyor/prometheus/detail/resource_totals.hpp"

#include <algorithm>
#include <utility>

namespace conveyor::prometheus::detail {

namespace {

std::uint64_t less(std::uint64_t value, std::uint64_t minus) noexcept {
  return value > minus ? value - minus : 0;
}

std::vector<ResourceStats>::iterator named(std::vector<ResourceStats>& resources,
                                           const std::string& name) {
  return std::find_if(resources.begin(), resources.end(),
                      [&](const ResourceStats& each) { return each.name == name; });
}

// `into` gains `more`'s figures, under its name, group by group.
void add(std::vector<ResourceStats>& into, const ResourceStats& more) {
  const auto same = named(into, more.name);
  if (same == into.end()) {
    into.push_back(more);
    into.back().id = 0;
    return;
  }
  for (const GroupStats& group : more.groups) {
    const auto total =
        std::find_if(same->groups.begin(), same->groups.end(),
                     [&](const GroupStats& each) { return each.name == group.name; });
    if (total == same->groups.end()) {
      same->groups.push_back(group);
      continue;
    }
    total->entries += group.entries;
    total->aces += group.aces;
    total->waits += group.waits;
    for (std::size_t i = 0; i < total->wait.counts.size(); ++i)
      total->wait.counts[i] += group.wait.counts[i];
    total->wait.count += group.wait.count;
    total->wait.sum_seconds += group.wait.sum_seconds;
  }
}

// The figures that follow from the others, as Shared::stats() makes them: the waits are the
// histogram's count, the entries the aces and the waits. Arithmetic on readings works on the
// others only, so that the three always agree.
void derive(GroupStats& group) noexcept {
  group.wait.count = 0;
  for (const std::uint64_t count : group.wait.counts)
    group.wait.count += count;
  group.waits = group.wait.count;
  group.entries = group.aces + group.waits;
}

// What one object's figures `now` added since its figures `before`.
ResourceStats since(const ResourceStats& now, const ResourceStats& before) {
  ResourceStats added = now;
  for (GroupStats& group : added.groups) {
    const auto earlier =
        std::find_if(before.groups.begin(), before.groups.end(),
                     [&](const GroupStats& each) { return each.name == group.name; });
    if (earlier == before.groups.end()) continue;
    group.aces = less(group.aces, earlier->aces);
    for (std::size_t i = 0; i < group.wait.counts.size(); ++i)
      group.wait.counts[i] = less(group.wait.counts[i], earlier->wait.counts[i]);
    group.wait.sum_seconds = std::max(0.0, group.wait.sum_seconds - earlier->wait.sum_seconds);
    derive(group);
  }
  return added;
}

void replace(std::vector<ResourceStats>& into, const ResourceStats& latest) {
  const auto same = named(into, latest.name);
  if (same == into.end()) {
    into.push_back(latest);
  } else {
    *same = latest;
  }
}

std::uint64_t entries(const ResourceStats& resource) noexcept {
  std::uint64_t total = 0;
  for (const GroupStats& group : resource.groups)
    total += group.entries;
  return total;
}

// Two figures of one object, field by field the larger: every field only grows, but a reading
// takes them one at a time, so of two readings at once neither need be ahead in every field.
ResourceStats later(const ResourceStats& one, const ResourceStats& other) {
  ResourceStats result = one;
  if (result.name.empty()) result.name = other.name;
  result.id = one.id != 0 ? one.id : other.id;
  for (const GroupStats& group : other.groups) {
    const auto same = std::find_if(result.groups.begin(), result.groups.end(),
                                   [&](const GroupStats& each) { return each.name == group.name; });
    if (same == result.groups.end()) {
      result.groups.push_back(group);
      continue;
    }
    same->aces = std::max(same->aces, group.aces);
    for (std::size_t i = 0; i < same->wait.counts.size(); ++i)
      same->wait.counts[i] = std::max(same->wait.counts[i], group.wait.counts[i]);
    same->wait.sum_seconds = std::max(same->wait.sum_seconds, group.wait.sum_seconds);
    derive(*same);
  }
  return result;
}

}  // namespace

ResourceTotals::Seen* ResourceTotals::find(std::uint64_t id) {
  const auto at =
      std::find_if(seen_.begin(), seen_.end(), [&](const Seen& each) { return each.id == id; });
  return at == seen_.end() ? nullptr : &*at;
}

const ResourceTotals::Seen* ResourceTotals::find(std::uint64_t id) const {
  const auto at =
      std::find_if(seen_.begin(), seen_.end(), [&](const Seen& each) { return each.id == id; });
  return at == seen_.end() ? nullptr : &*at;
}

// The object `id`, moved to the most recently used end (added if it was not there).
ResourceTotals::Seen& ResourceTotals::use(std::uint64_t id) {
  Seen used;
  used.id = id;
  if (Seen* seen = find(id)) {
    used = std::move(*seen);
    seen_.erase(seen_.begin() + (seen - seen_.data()));
  }
  seen_.push_back(std::move(used));
  return seen_.back();
}

void ResourceTotals::forget_the_oldest() {
  std::size_t idle = 0;
  for (const Seen& seen : seen_)
    idle += seen.runs == 0 ? 1 : 0;
  for (auto at = seen_.begin(); idle > remembered && at != seen_.end();) {
    if (at->runs == 0) {
      at = seen_.erase(at);
      --idle;
    } else {
      ++at;
    }
  }
}

void ResourceTotals::tracks(const void* run, const std::vector<ResourceStats>& resources) {
  std::vector<std::uint64_t>& ids = runs_[run];
  for (const ResourceStats& resource : resources) {
    if (resource.id == 0 || std::find(ids.begin(), ids.end(), resource.id) != ids.end()) continue;
    ++use(resource.id).runs;
    ids.push_back(resource.id);
  }
}

void ResourceTotals::finished(const void* run, const std::vector<ResourceStats>& resources) {
  std::vector<std::uint64_t> ids;
  if (const auto mine = runs_.find(run); mine != runs_.end()) {
    ids = std::move(mine->second);
    runs_.erase(mine);
  }
  for (const ResourceStats& resource : resources) {
    if (resource.id == 0) {
      replace(unidentified_, resource);
      continue;
    }
    Seen& seen = use(resource.id);
    const ResourceStats last = later(resource, seen.shown);
    add(settled_, since(last, seen.counted));
    seen.counted = later(seen.counted, last);
    // Once per run, however often the run tracked it.
    if (const auto mine = std::find(ids.begin(), ids.end(), resource.id); mine != ids.end()) {
      ids.erase(mine);
      if (seen.runs > 0) --seen.runs;
    }
  }
  // Tracked after the run's final figures were taken (a scrape saw it since): what the scrape
  // showed is settled, and the run uses it no more.
  for (const std::uint64_t id : ids) {
    Seen* seen = find(id);
    if (seen == nullptr) continue;
    add(settled_, since(seen->shown, seen->counted));
    seen->counted = later(seen->counted, seen->shown);
    if (seen->runs > 0) --seen->runs;
  }
  forget_the_oldest();
}

std::vector<ResourceStats> ResourceTotals::total(
    const std::vector<std::vector<ResourceStats>>& live) const {
  std::vector<ResourceStats> result = settled_;
  std::vector<ResourceStats> unidentified = unidentified_;
  // Each object once, however many live runs track it: its latest figures.
  std::map<std::uint64_t, const ResourceStats*> now;
  for (const std::vector<ResourceStats>& run : live) {
    for (const ResourceStats& resource : run) {
      if (resource.id == 0) {
        replace(unidentified, resource);
        continue;
      }
      const ResourceStats*& latest = now[resource.id];
      if (latest == nullptr || entries(resource) > entries(*latest)) latest = &resource;
    }
  }
  for (const auto& [id, resource] : now) {
    const Seen* seen = find(id);
    if (seen == nullptr) {
      add(result, *resource);
      continue;
    }
    seen->shown = later(seen->shown, *resource);
    add(result, since(seen->shown, seen->counted));
  }
  for (const ResourceStats& resource : unidentified)
    add(result, resource);
  for (ResourceStats& resource : result) {
    for (GroupStats& group : resource.groups) {
      double& last = exported_seconds_[{resource.name, group.name}];
      group.wait.sum_seconds = std::max(group.wait.sum_seconds, last);
      last = group.wait.sum_seconds;
    }
  }
  return result;
}

}  // namespace conveyor::prometheus::detail
