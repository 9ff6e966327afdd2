#pragma once
// Flow-level network: each transfer is a flow on its route; link bandwidth is shared max-min fairly
// (progressive filling) and rates are recomputed whenever the set of flows changes. A flow's last
// byte arrives the path's latency after it leaves the source.
#include <cstdint>
#include <vector>

#include "sim/time.hpp"
#include "sim/topology.hpp"

namespace plumb::sim {

class Network {
 public:
  using FlowId = std::uint32_t;

  explicit Network(const Topology& topology);

  // Starts a flow of `bytes` on `path` at `now`. Rates change only at the next recompute().
  FlowId start(std::vector<LinkId> path, double bytes, Time now);
  // Removes a flow whose bytes have all left (its finish_time has come).
  void stop(FlowId f, Time now);
  // Brings every active flow's remaining bytes up to `now` and shares bandwidth anew.
  void recompute(Time now);
  bool dirty() const { return dirty_; }

  // When the flow's last byte will have left the source at its current rate, and a counter that
  // changes whenever that estimate does (so a stale completion event can be recognised).
  Time transmit_end(FlowId f) const { return flows_[f].end; }
  std::uint32_t version(FlowId f) const { return flows_[f].version; }
  double rate(FlowId f) const { return flows_[f].rate; }  // bytes/s
  Time latency(FlowId f) const { return flows_[f].latency; }
  const std::vector<FlowId>& active() const { return active_; }

  double link_bytes(LinkId l) const { return link_bytes_[l]; }  // carried by flows that have stopped
  std::uint64_t recomputes() const { return recomputes_; }

 private:
  struct Flow {
    std::vector<LinkId> path;
    double bytes = 0;
    double remaining = 0;  // bytes not yet sent
    double rate = 0;
    Time last = 0;         // when `remaining` was last brought up to date
    Time end = kNever;
    Time latency = 0;
    std::uint32_t version = 0;
    std::uint32_t slot = 0;  // position in active_
  };
  void advance(Flow& f, Time now);

  const Topology& topology_;
  std::vector<Flow> flows_;
  std::vector<FlowId> active_;
  std::vector<double> link_bytes_;
  // Scratch for progressive filling, sized to the link count once: per link its capacity left, its
  // flows not yet frozen, and (compressed rows) the active flows crossing it.
  std::vector<double> capacity_left_;
  std::vector<std::uint32_t> unfrozen_;
  std::vector<std::uint32_t> row_begin_, row_length_;
  std::vector<FlowId> rows_;
  std::vector<std::uint8_t> frozen_;
  bool dirty_ = false;
  std::uint64_t recomputes_ = 0;
};

}  // namespace plumb::sim
