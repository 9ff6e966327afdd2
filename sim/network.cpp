#include "sim/network.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace plumb::sim {

Network::Network(const Topology& topology)
    : topology_(topology),
      link_bytes_(topology.link_count(), 0.0),
      capacity_left_(topology.link_count(), 0.0),
      unfrozen_(topology.link_count(), 0),
      row_begin_(topology.link_count(), 0),
      row_length_(topology.link_count(), 0) {}

Network::FlowId Network::start(std::vector<LinkId> path, double bytes, Time now) {
  if (path.empty()) throw std::invalid_argument("Network: a flow needs at least one link");
  Flow f;
  f.latency = topology_.path_latency(path);
  f.path = std::move(path);
  f.bytes = bytes;
  f.remaining = bytes;
  f.last = now;
  f.slot = static_cast<std::uint32_t>(active_.size());
  flows_.push_back(std::move(f));
  FlowId id = static_cast<FlowId>(flows_.size() - 1);
  active_.push_back(id);
  frozen_.push_back(0);
  dirty_ = true;
  return id;
}

void Network::advance(Flow& f, Time now) {
  f.remaining -= std::min(f.remaining, f.rate * to_seconds(now - f.last));
  f.last = now;
}

void Network::stop(FlowId id, Time now) {
  Flow& f = flows_[id];
  for (LinkId l : f.path) link_bytes_[l] += f.bytes;
  f.remaining = 0;
  f.last = now;
  FlowId last = active_.back();
  active_[f.slot] = last;
  flows_[last].slot = f.slot;
  active_.pop_back();
  f.rate = 0;
  f.end = kNever;
  ++f.version;
  std::vector<LinkId>().swap(f.path);  // a finished flow keeps no route
  dirty_ = true;
}

void Network::recompute(Time now) {
  dirty_ = false;
  ++recomputes_;
  // Progressive filling: repeatedly take the link whose remaining capacity, shared equally among its
  // not-yet-frozen flows, is smallest; those flows get that share and are frozen.
  std::vector<LinkId> used;
  for (FlowId id : active_) {
    Flow& f = flows_[id];
    advance(f, now);
    frozen_[id] = 0;
    for (LinkId l : f.path) {
      if (unfrozen_[l]++ == 0) {
        used.push_back(l);
        capacity_left_[l] = topology_.link(l).bandwidth;
      }
    }
  }
  // Index the flows of each used link in compressed rows.
  std::uint32_t total = 0;
  for (LinkId l : used) {
    row_begin_[l] = total;
    row_length_[l] = 0;
    total += unfrozen_[l];
  }
  rows_.resize(total);
  for (FlowId id : active_)
    for (LinkId l : flows_[id].path) rows_[row_begin_[l] + row_length_[l]++] = id;
  // A link's fair share only grows as flows through it freeze (they freeze at the least share, at
  // most its own), so each link stays in the heap once: an entry found stale when it comes to the
  // top goes back with the link's current share.
  using Entry = std::pair<double, LinkId>;  // (fair share when pushed, link)
  std::vector<Entry> heap;
  heap.reserve(used.size());
  for (LinkId l : used) heap.emplace_back(capacity_left_[l] / unfrozen_[l], l);
  std::make_heap(heap.begin(), heap.end(), std::greater<>{});
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    auto [share, l] = heap.back();
    heap.pop_back();
    if (unfrozen_[l] == 0) continue;
    double current = capacity_left_[l] / unfrozen_[l];
    if (current > share) {
      heap.emplace_back(current, l);
      std::push_heap(heap.begin(), heap.end(), std::greater<>{});
      continue;
    }
    share = std::max(current, 1.0);  // guards against rounding driving a share to zero
    const FlowId* row = rows_.data() + row_begin_[l];
    for (std::uint32_t k = 0; k < row_length_[l]; ++k) {
      FlowId id = row[k];
      if (frozen_[id]) continue;
      frozen_[id] = 1;
      flows_[id].rate = share;
      for (LinkId j : flows_[id].path) {
        capacity_left_[j] = std::max(0.0, capacity_left_[j] - share);
        --unfrozen_[j];
      }
    }
  }
  for (FlowId id : active_) {
    Flow& f = flows_[id];
    Time end = f.remaining <= 0 ? now : later(now, from_seconds(f.remaining / f.rate));
    if (end != f.end) {
      f.end = end;
      ++f.version;
    }
  }
}

}  // namespace plumb::sim
