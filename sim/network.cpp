#include "sim/network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace plumb::sim {

Network::Network(const Topology& topology)
    : topology_(topology),
      link_bytes_(topology.link_count(), 0.0),
      capacity_left_(topology.link_count(), 0.0),
      unfrozen_(topology.link_count(), 0),
      row_begin_(topology.link_count(), 0),
      row_length_(topology.link_count(), 0),
      allocated_(topology.link_count(), 0.0),
      crossing_(topology.link_count(), 0) {}

void Network::take(const Flow& f, double sign) {
  for (LinkId l : f.path) allocated_[l] = std::max(0.0, allocated_[l] + sign * f.rate);
}

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
  stopped_.push_back(0);
  started_.push_back(id);
  // Nothing freezes below the least fair share its links start with.
  double least = std::numeric_limits<double>::infinity();
  for (LinkId l : flows_[id].path) least = std::min(least, topology_.link(l).bandwidth / static_cast<double>(++crossing_[l]));
  keep_below_ = std::min(keep_below_, least);
  dirty_ = true;
  return id;
}

void Network::advance(Flow& f, Time now) {
  f.remaining -= std::min(f.remaining, f.rate * to_seconds(now - f.last));
  f.last = now;
}

void Network::stop(FlowId id, Time now) {
  Flow& f = flows_[id];
  for (LinkId l : f.path) {
    link_bytes_[l] += f.bytes;
    --crossing_[l];
  }
  take(f, -1);
  keep_below_ = std::min(keep_below_, f.rate);  // below its rate nothing changes
  stopped_[id] = 1;
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
  changed_.clear();
  // The flows to fill again: those ordered at or above the level kept, and the ones started since.
  const auto keep = static_cast<std::size_t>(std::lower_bound(order_rate_.begin(), order_rate_.end(), keep_below_) - order_rate_.begin());
  std::vector<FlowId> refill;
  for (std::size_t i = keep; i < order_.size(); ++i)
    if (!stopped_[order_[i]]) refill.push_back(order_[i]);
  for (std::size_t i = keep; i < order_.size(); ++i) stopped_[order_[i]] = 0;
  for (FlowId id : started_)
    if (!stopped_[id]) refill.push_back(id);
    else stopped_[id] = 0;
  started_.clear();
  order_.resize(keep);
  order_rate_.resize(keep);
  keep_below_ = std::numeric_limits<double>::infinity();
  refilled_ = refill.size();
  // Progressive filling over them, on what the kept flows leave of each link: repeatedly take the
  // link whose capacity left, shared equally among its not-yet-frozen flows, is smallest; those flows
  // get that share and are frozen.
  std::vector<LinkId> used;
  for (FlowId id : refill) {
    Flow& f = flows_[id];
    advance(f, now);
    take(f, -1);
    frozen_[id] = 0;
    for (LinkId l : f.path) unfrozen_[l]++;
  }
  for (FlowId id : refill)
    for (LinkId l : flows_[id].path)
      if (row_length_[l] != ~0u) {
        row_length_[l] = ~0u;  // seen
        used.push_back(l);
        capacity_left_[l] = std::max(0.0, topology_.link(l).bandwidth - allocated_[l]);
      }
  // Index the refilled flows of each used link in compressed rows.
  std::uint32_t total = 0;
  for (LinkId l : used) {
    row_begin_[l] = total;
    row_length_[l] = 0;
    total += unfrozen_[l];
  }
  rows_.resize(total);
  for (FlowId id : refill)
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
      Flow& f = flows_[id];
      f.rate = share;
      // Rates freeze in nondecreasing order; a share held up by the rounding guard keeps it so.
      order_rate_.push_back(order_rate_.empty() ? share : std::max(share, order_rate_.back()));
      order_.push_back(id);
      take(f, +1);
      for (LinkId j : f.path) {
        capacity_left_[j] = std::max(0.0, capacity_left_[j] - share);
        --unfrozen_[j];
      }
    }
  }
  for (LinkId l : used) row_length_[l] = 0;
  for (FlowId id : refill) {
    Flow& f = flows_[id];
    Time end = f.remaining <= 0 ? now : later(now, from_seconds(f.remaining / f.rate));
    if (end != f.end) {
      f.end = end;
      ++f.version;
      changed_.push_back(id);
    }
  }
}

}  // namespace plumb::sim
