#pragma once
// Flow-level network: each transfer is a flow on its route; link bandwidth is shared max-min fairly
// (progressive filling) and rates are recomputed whenever the set of flows changes. A flow's last
// byte arrives the path's latency after it leaves the source.
//
// Re-sharing is incremental and exact. Progressive filling freezes flows in order of their rate, so
// the freezes below some level λ depend only on what happens below λ: when flows stop, nothing below
// the least stopped rate changes (their links' shares only grow); when flows start, nothing below the
// least of cap / flows over the new flows' links (no such link can freeze earlier). Each re-share
// keeps the flows below λ as they are (their bandwidth taken off their links) and fills only the rest.
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
  // The flows whose finish estimate the last recompute() changed.
  const std::vector<FlowId>& changed() const { return changed_; }
  // Flows the last recompute() filled again (the rest kept their rates).
  std::size_t refilled() const { return refilled_; }

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
  void take(const Flow& f, double sign);  // adds (+1) or removes (−1) its rate on its links

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
  // Incremental state: per link the rates of its flows summed and how many flows cross it; the active
  // flows in the order their rates froze (nondecreasing rates, as frozen), and the level below which
  // the next re-share keeps every flow.
  std::vector<double> allocated_;
  std::vector<std::uint32_t> crossing_;
  std::vector<FlowId> order_;
  std::vector<double> order_rate_;
  std::vector<FlowId> started_;  // since the last re-share
  std::vector<std::uint8_t> stopped_;  // per flow: stopped since it was last ordered
  double keep_below_ = 0;
  std::vector<FlowId> changed_;
  std::size_t refilled_ = 0;
  bool dirty_ = false;
  std::uint64_t recomputes_ = 0;
};

}  // namespace plumb::sim
