#include "sim/network.hpp"

#include <algorithm>
#include <cmath>
#include <queue>
#include <stdexcept>

namespace plumb::sim {

Network::Network(const Topology& topology)
    : topology_(topology),
      link_bytes_(topology.link_count(), 0.0),
      capacity_left_(topology.link_count(), 0.0),
      unfrozen_(topology.link_count(), 0),
      flows_on_link_(topology.link_count()) {}

Network::FlowId Network::start(std::vector<LinkId> path, double bytes, Time now) {
  if (path.empty()) throw std::invalid_argument("Network: a flow needs at least one link");
  Flow f;
  f.latency = topology_.path_latency(path);
  f.path = std::move(path);
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
  double sent = std::min(f.remaining, f.rate * to_seconds(now - f.last));
  f.remaining -= sent;
  for (LinkId l : f.path) link_bytes_[l] += sent;
  f.last = now;
}

void Network::stop(FlowId id, Time now) {
  Flow& f = flows_[id];
  advance(f, now);
  for (LinkId l : f.path) link_bytes_[l] += f.remaining;  // rounding leftovers count as carried
  f.remaining = 0;
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
      if (flows_on_link_[l].empty()) {
        used.push_back(l);
        capacity_left_[l] = topology_.link(l).bandwidth;
        unfrozen_[l] = 0;
      }
      flows_on_link_[l].push_back(id);
      ++unfrozen_[l];
    }
  }
  using Entry = std::pair<double, LinkId>;  // (fair share, link); stale entries are skipped
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  for (LinkId l : used) heap.emplace(capacity_left_[l] / unfrozen_[l], l);
  while (!heap.empty()) {
    auto [share, l] = heap.top();
    heap.pop();
    if (unfrozen_[l] == 0 || share != capacity_left_[l] / unfrozen_[l]) continue;
    share = std::max(share, 1.0);  // guards against rounding driving a share to zero
    for (FlowId id : flows_on_link_[l]) {
      if (frozen_[id]) continue;
      frozen_[id] = 1;
      flows_[id].rate = share;
      for (LinkId k : flows_[id].path) {
        capacity_left_[k] = std::max(0.0, capacity_left_[k] - share);
        if (--unfrozen_[k] > 0 && k != l) heap.emplace(capacity_left_[k] / unfrozen_[k], k);
      }
    }
  }
  for (LinkId l : used) flows_on_link_[l].clear();
  for (FlowId id : active_) {
    Flow& f = flows_[id];
    Time end = f.remaining <= 0 ? now : now + from_seconds(f.remaining / f.rate);
    if (end != f.end) {
      f.end = end;
      ++f.version;
    }
  }
}

}  // namespace plumb::sim
