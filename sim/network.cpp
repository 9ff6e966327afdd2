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
      row_begin_(topology.link_count(), 0),
      row_length_(topology.link_count(), 0),
      touched_at_(topology.link_count(), 0) {}

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
  using Entry = std::pair<double, LinkId>;  // (fair share, link); stale entries are skipped
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  for (LinkId l : used) heap.emplace(capacity_left_[l] / unfrozen_[l], l);
  std::vector<LinkId> touched;
  while (!heap.empty()) {
    auto [share, l] = heap.top();
    heap.pop();
    if (unfrozen_[l] == 0 || share != capacity_left_[l] / unfrozen_[l]) continue;
    share = std::max(share, 1.0);  // guards against rounding driving a share to zero
    const FlowId* row = rows_.data() + row_begin_[l];
    touched.clear();
    const std::uint64_t step = ++fill_steps_;  // every filling step ever gets its own stamp
    for (std::uint32_t k = 0; k < row_length_[l]; ++k) {
      FlowId id = row[k];
      if (frozen_[id]) continue;
      frozen_[id] = 1;
      flows_[id].rate = share;
      for (LinkId j : flows_[id].path) {
        capacity_left_[j] = std::max(0.0, capacity_left_[j] - share);
        --unfrozen_[j];
        if (j != l && touched_at_[j] != step) {
          touched_at_[j] = step;
          touched.push_back(j);
        }
      }
    }
    // Each link whose share changed goes back on the heap once, with its new share.
    for (LinkId j : touched)
      if (unfrozen_[j] > 0) heap.emplace(capacity_left_[j] / unfrozen_[j], j);
  }
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
