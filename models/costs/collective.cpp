#include "models/costs/collective.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

namespace plumb {
namespace {

// NCCL's latency model, src/graph/tuning.cc (NCCL 2.19–2.21), microseconds, indexed {LL, LL128, Simple}:
// baseLat per algorithm, and hwLat per hop on NVLink and on the network.
constexpr std::array<double, 3> kRingBase{6.6, 14.0, 8.4};
constexpr std::array<double, 3> kTreeBase{6.8, 14.0, 8.4};
constexpr std::array<double, 3> kRingNvlinkHop{0.6, 1.9, 3.4};
constexpr std::array<double, 3> kRingNetHop{2.7, 4.0, 14.0};
constexpr std::array<double, 3> kTreeNvlinkHop{0.6, 1.25, 4.0};
constexpr std::array<double, 3> kTreeNetHop{5.0, 8.5, 14.0};
constexpr double kNvlsNvlinkLatency = 25.0;  // hwLat NVLS on NVLink (Simple only)
// The share of link bandwidth each protocol delivers: LL moves 4 bytes of data per 8-byte line and
// NCCL's model counts a quarter of the bandwidth for ring LL; LL128 carries 120 of every 128 bytes and
// NCCL applies 0.92; Simple uses the links fully (tuning.cc "model refinements").
constexpr std::array<double, 3> kProtocolShare{0.25, 0.92, 1.0};

constexpr double kMicro = 1e-6;

// A table's latency in seconds, with the fabric's calibrated scale: the base latency and NVLink hops
// scale together (a single-node measurement cannot tell them apart), network hops on their own.
double on_nvlink(double microseconds, const CollectiveLinks& l) { return microseconds * kMicro * l.nvlink_latency_scale; }
double on_network(double microseconds, const CollectiveLinks& l) { return microseconds * kMicro * l.network_latency_scale; }

std::size_t index(Protocol p) { return static_cast<std::size_t>(p); }

// Data each GPU sends, as a multiple of the buffer, for a ring-style algorithm: exactly nccl-tests'
// bus factor, which is defined so that busbw is that traffic over the time.
double ring_volume(CollectiveOp op, std::int64_t n) { return bus_factor(op, n); }

// Ring steps a collective takes (each crossing one hop); all-reduce is a reduce-scatter then an all-gather.
double ring_steps(CollectiveOp op, double n) {
  switch (op) {
    case CollectiveOp::all_reduce: return 2.0 * (n - 1);
    case CollectiveOp::send_recv: return 1.0;
    default: return n - 1;
  }
}

using Protocols = std::vector<Protocol>;
const Protocols kAllProtocols{Protocol::ll, Protocol::ll128, Protocol::simple};

struct Candidate {
  double seconds = std::numeric_limits<double>::infinity();
  Protocol protocol = Protocol::simple;
};

// Per-GPU bandwidth of a ring through every GPU. Nodes are joined by one network hop each, and NCCL
// runs one channel per NIC with the node boundary on a different GPU in each, so a node's share of
// the traffic spreads over the group's k NICs there: min(NVLink, k × NIC). With one GPU per node
// that is one NIC — nccl-tests' per-NIC figure.
double ring_bandwidth(const GroupPlacement& g, const CollectiveLinks& l) {
  return g.nodes > 1 ? std::min(l.nvlink, static_cast<double>(g.per_node()) * l.network) : l.nvlink;
}

// Flat ring through all n GPUs, k channels when it spans N > 1 nodes (one per NIC; in each channel N
// of the n hops cross nodes, on a different GPU per channel). Each step a GPU sends one chunk per
// channel; it sends chunk t+1 once chunk t has left it and its predecessor's chunk t has arrived. The
// longest such chain either stays on the slowest hop — steps × its transmit time with every channel
// sharing the links, then one arrival — or follows the ring — steps × the ring's mean of (transmit +
// latency), where a chunk mostly crosses NVLink alone because the other channels' chunks are still
// waiting on their predecessors. On a uniform ring both give steps × (T + L); on a mixed one the
// faster hops' slack hides their latency. Both regimes are checked against the flow-level simulation
// in tests/test_collectives.cpp.
Candidate ring(CollectiveOp op, double bytes, const GroupPlacement& g, const CollectiveLinks& l, const Protocols& protocols) {
  const double n = static_cast<double>(g.gpus), nodes = static_cast<double>(g.nodes);
  const double steps = ring_steps(op, n);
  const double per_step = ring_volume(op, g.gpus) * bytes / steps;  // bytes one GPU sends per step, all channels
  const double channels = g.nodes > 1 ? static_cast<double>(g.per_node()) : 1.0;
  const double chunk = per_step / channels;
  // Inside a node a GPU's NVLink carries its channels except the one leaving through its NIC.
  const double nvlink_flows = g.nodes > 1 ? std::max(1.0, channels - 1) : channels;
  Candidate best;
  for (Protocol p : protocols) {
    std::size_t i = index(p);
    double share = kProtocolShare[i];
    double t_nvl = chunk / (l.nvlink / nvlink_flows * share), l_nvl = on_nvlink(kRingNvlinkHop[i], l);
    double t = 0;
    if (g.nodes == 1) {
      t = steps * (t_nvl + l_nvl);
    } else {
      double t_net = chunk / (l.network * share), l_net = on_network(kRingNetHop[i], l);
      double nvlink_hops = n - nodes;
      double t_nvl_alone = chunk / (l.nvlink * share);
      double mean_hop = (nvlink_hops * (t_nvl_alone + l_nvl) + nodes * (t_net + l_net)) / n;
      double slowest = std::max(t_net, nvlink_hops > 0 ? t_nvl : 0.0);
      t = std::max(steps * slowest + l_net, steps * mean_hop);
    }
    t += on_nvlink(kRingBase[i], l);
    if (t < best.seconds) best = {t, p};
  }
  return best;
}

// Double binary tree (Sanders et al.; NCCL 2.4): a chain inside each node and two binary trees across
// nodes, pipelined; bandwidth-optimal like the ring, latency logarithmic in the node count.
Candidate tree(CollectiveOp op, double bytes, const GroupPlacement& g, const CollectiveLinks& l, const Protocols& protocols) {
  if (op != CollectiveOp::all_reduce && op != CollectiveOp::broadcast)
    throw std::invalid_argument(fmt::format("the tree algorithm runs all_reduce and broadcast, not {}", collective_op_name(op)));
  double bw = ring_bandwidth(g, l);
  double depth = std::ceil(std::log2(static_cast<double>(g.nodes)));
  double passes = op == CollectiveOp::all_reduce ? 2.0 : 1.0;  // reduce up, broadcast down
  Candidate best;
  for (Protocol p : protocols) {
    std::size_t i = index(p);
    double lat = on_nvlink(kTreeBase[i] + passes * static_cast<double>(g.per_node() - 1) * kTreeNvlinkHop[i], l) +
                 on_network(passes * depth * kTreeNetHop[i], l);
    double t = lat + ring_volume(op, g.gpus) * bytes / (bw * kProtocolShare[i]);
    if (t < best.seconds) best = {t, p};
  }
  return best;
}

// NVLS: the NVSwitch reduces (NVLink SHARP), so an all-reduce inside one node moves each byte once
// each way; its speed is the measured NVLS algbw.
Candidate nvls(CollectiveOp op, double bytes, const GroupPlacement& g, const CollectiveLinks& l) {
  if (op != CollectiveOp::all_reduce) throw std::invalid_argument("NVLS is modelled for all_reduce only");
  if (g.nodes != 1) throw std::invalid_argument("NVLS runs inside one NVSwitch node; use hierarchical across nodes");
  if (!l.nvls_algbw) throw std::invalid_argument("this fabric profile has no NVLS figure (nvls_allreduce_algbw)");
  return {on_nvlink(kNvlsNvlinkLatency, l) + bytes / *l.nvls_algbw, Protocol::simple};
}

// Two levels: inside each node over NVLink, across nodes over the network on every rail at once.
// All-reduce = reduce-scatter in the node, all-reduce of its 1/k shard across nodes, all-gather in
// the node. The other collectives split the same way.
Candidate hierarchical(CollectiveOp op, double bytes, const GroupPlacement& g, const CollectiveLinks& l,
                       const Protocols& protocols) {
  if (g.nodes == 1 || g.per_node() == 1) throw std::invalid_argument("hierarchical needs several nodes with several GPUs each");
  if (op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv)
    throw std::invalid_argument(fmt::format("hierarchical does not apply to {}", collective_op_name(op)));
  // Each GPU's rail (the same GPU index on every node) is a ring across nodes on its own NIC.
  GroupPlacement node{g.per_node(), 1}, rail{g.nodes, g.nodes};
  double k = static_cast<double>(g.per_node());
  auto within = [&](CollectiveOp o, double b) { return ring(o, b, node, l, protocols).seconds; };
  auto across = [&](CollectiveOp o, double b) { return ring(o, b, rail, l, protocols).seconds; };
  // Only a 1/k shard crosses the network: reduce (or scatter) inside the node first, gather last.
  double t = 0;
  switch (op) {
    case CollectiveOp::all_reduce:
      t = within(CollectiveOp::reduce_scatter, bytes) + across(CollectiveOp::all_reduce, bytes / k) +
          within(CollectiveOp::all_gather, bytes);
      break;
    case CollectiveOp::reduce_scatter:
      t = within(CollectiveOp::reduce_scatter, bytes) + across(CollectiveOp::reduce_scatter, bytes / k);
      break;
    case CollectiveOp::all_gather:
      t = across(CollectiveOp::all_gather, bytes / k) + within(CollectiveOp::all_gather, bytes);
      break;
    case CollectiveOp::broadcast:  // scatter in the root's node, broadcast shards on every rail, gather
      t = within(CollectiveOp::reduce_scatter, bytes) + across(CollectiveOp::broadcast, bytes / k) +
          within(CollectiveOp::all_gather, bytes);
      break;
    default: break;
  }
  return {t, Protocol::simple};
}

// All-to-all: every GPU sends (n−1)/n of its buffer, the share for other nodes through its own NIC —
// NCCL's all-to-all is point-to-point and cannot spread one GPU's traffic over several NICs.
Candidate all_to_all(double bytes, const GroupPlacement& g, const CollectiveLinks& l) {
  double n = static_cast<double>(g.gpus), k = static_cast<double>(g.per_node());
  double intra = (k - 1) / n * bytes, inter = (n - k) / n * bytes;
  std::size_t s = index(Protocol::simple);
  double lat = on_nvlink(kRingBase[s], l) + (g.nodes > 1 ? on_network(kRingNetHop[s], l) : on_nvlink(kRingNvlinkHop[s], l));
  double t = lat + std::max(intra / l.nvlink, g.nodes > 1 ? inter / l.network : 0.0);
  return {t, Protocol::simple};
}

}  // namespace

std::string_view collective_op_name(CollectiveOp op) {
  for (const auto& [name, o] : collective_op_names())
    if (o == op) return name;
  return "?";
}

std::string_view collective_algo_name(CollectiveAlgo a) {
  if (a == CollectiveAlgo::point_to_point) return "p2p";
  for (const auto& [name, x] : collective_algo_names())
    if (x == a) return name;
  return "?";
}

std::string_view protocol_name(Protocol p) {
  switch (p) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
  }
  return "?";
}

const std::vector<std::pair<std::string, CollectiveOp>>& collective_op_names() {
  static const std::vector<std::pair<std::string, CollectiveOp>> names{
      {"all_reduce", CollectiveOp::all_reduce}, {"reduce_scatter", CollectiveOp::reduce_scatter},
      {"all_gather", CollectiveOp::all_gather}, {"all_to_all", CollectiveOp::all_to_all},
      {"broadcast", CollectiveOp::broadcast},   {"send_recv", CollectiveOp::send_recv}};
  return names;
}

const std::vector<std::pair<std::string, CollectiveAlgo>>& collective_algo_names() {
  static const std::vector<std::pair<std::string, CollectiveAlgo>> names{
      {"auto", CollectiveAlgo::automatic}, {"ring", CollectiveAlgo::ring}, {"tree", CollectiveAlgo::tree},
      {"nvls", CollectiveAlgo::nvls},      {"hier", CollectiveAlgo::hierarchical}};
  return names;
}

double bus_factor(CollectiveOp op, std::int64_t n) {
  double nn = static_cast<double>(n);
  switch (op) {
    case CollectiveOp::all_reduce: return 2.0 * (nn - 1) / nn;
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_gather:
    case CollectiveOp::all_to_all: return (nn - 1) / nn;
    case CollectiveOp::broadcast:
    case CollectiveOp::send_recv: return 1.0;
  }
  return 1.0;
}

CollectiveLinks CollectiveLinks::of(const GpuSpec& gpu, const FabricSpec& fabric) {
  CollectiveLinks l;
  l.nvlink = fabric.nvlink_effective_per_gpu.value_or(gpu.nvlink_bandwidth_per_direction);
  double per_nic = fabric.nic_effective.value_or(fabric.nic_rate);
  l.network = per_nic * static_cast<double>(fabric.nics_per_node) / static_cast<double>(fabric.gpus_per_node);
  l.nvls_algbw = fabric.nvls_allreduce_algbw;
  l.nvlink_latency_scale = fabric.nvlink_latency_scale.value_or(1.0);
  l.network_latency_scale = fabric.network_latency_scale.value_or(1.0);
  return l;
}

CollectiveCost collective_cost(CollectiveOp op, double bytes, const GroupPlacement& g, const CollectiveLinks& links,
                               CollectiveAlgo algo, std::optional<Protocol> protocol) {
  const Protocols protocols = protocol ? Protocols{*protocol} : kAllProtocols;
  if (g.gpus < 1 || g.nodes < 1 || g.gpus % g.nodes != 0)
    throw std::invalid_argument(fmt::format("a group of {} GPUs cannot spread evenly over {} nodes", g.gpus, g.nodes));
  if (g.nodes > 1 && !(links.network > 0)) throw std::invalid_argument("the group spans nodes but the fabric has no network");
  CollectiveCost c;
  if (g.gpus == 1 || bytes <= 0) {  // nothing to move
    c.algo = algo == CollectiveAlgo::automatic ? CollectiveAlgo::ring : algo;
    return c;
  }
  c.seconds = std::numeric_limits<double>::infinity();
  auto consider = [&](CollectiveAlgo a, const Candidate& x) {
    if (x.seconds < c.seconds) {
      c.seconds = x.seconds;
      c.algo = a;
      c.protocol = x.protocol;
    }
  };
  if (op == CollectiveOp::all_to_all) {
    if (algo != CollectiveAlgo::automatic)
      throw std::invalid_argument("all_to_all is point-to-point; choose auto");
    consider(CollectiveAlgo::point_to_point, all_to_all(bytes, g, links));
  } else if (op == CollectiveOp::send_recv) {
    if (g.gpus != 2) throw std::invalid_argument(fmt::format("send_recv is between 2 GPUs, not {}", g.gpus));
    consider(CollectiveAlgo::point_to_point, ring(op, bytes, g, links, protocols));
  } else if (algo == CollectiveAlgo::automatic) {
    consider(CollectiveAlgo::ring, ring(op, bytes, g, links, protocols));
    // The others where they apply (the same conditions their functions refuse with a message).
    if (op == CollectiveOp::all_reduce || op == CollectiveOp::broadcast)
      consider(CollectiveAlgo::tree, tree(op, bytes, g, links, protocols));
    if (op == CollectiveOp::all_reduce && g.nodes == 1 && links.nvls_algbw)
      consider(CollectiveAlgo::nvls, nvls(op, bytes, g, links));
    if (g.nodes > 1 && g.per_node() > 1) consider(CollectiveAlgo::hierarchical, hierarchical(op, bytes, g, links, protocols));
  } else {
    switch (algo) {
      case CollectiveAlgo::ring: consider(algo, ring(op, bytes, g, links, protocols)); break;
      case CollectiveAlgo::tree: consider(algo, tree(op, bytes, g, links, protocols)); break;
      case CollectiveAlgo::nvls: consider(algo, nvls(op, bytes, g, links)); break;
      case CollectiveAlgo::hierarchical: consider(algo, hierarchical(op, bytes, g, links, protocols)); break;
      case CollectiveAlgo::automatic:
      case CollectiveAlgo::point_to_point: break;
    }
  }
  c.algbw = bytes / c.seconds;
  c.busbw = c.algbw * bus_factor(op, g.gpus);
  return c;
}

CollectiveLinks shared_links(const CollectiveLinks& links, int concurrent) {
  if (concurrent < 1) throw std::invalid_argument("at least one collective shares the links");
  CollectiveLinks l = links;
  double c = static_cast<double>(concurrent);
  l.nvlink /= c;
  l.network /= c;
  if (l.nvls_algbw) *l.nvls_algbw /= c;
  return l;
}

double groups_reached(double groups, double picks) { return groups * (1 - std::pow(1 - 1 / groups, picks)); }

DispatchCost moe_dispatch_cost(const DispatchShape& d, const GroupPlacement& g, const CollectiveLinks& l) {
  if (g.gpus < 1 || g.nodes < 1 || g.gpus % g.nodes != 0)
    throw std::invalid_argument(fmt::format("an EP group of {} GPUs cannot spread evenly over {} nodes", g.gpus, g.nodes));
  const double nodes = static_cast<double>(g.nodes), per_node = static_cast<double>(g.per_node());
  const double k = static_cast<double>(d.top_k);
  // Nodes a token reaches: node-limited routing picks min(M, N) of them; otherwise every node that
  // holds one of k experts chosen uniformly: N·(1 − (1 − 1/N)^k). One of them is its own with
  // probability (nodes reached)/N, and that one costs no network hop.
  double reached = d.max_nodes > 0 ? std::min(static_cast<double>(d.max_nodes), nodes) : groups_reached(nodes, k);
  double remote = reached * (1 - 1 / nodes);
  // Every expert copy then moves over NVLink unless its expert sits on the GPU it arrived at.
  double forwarded = k * (1 - 1 / per_node);
  DispatchCost c;
  c.network_bytes = d.tokens * d.bytes_per_token * remote;
  c.nvlink_bytes = d.tokens * d.bytes_per_token * forwarded;
  double t_net = g.nodes > 1 ? c.network_bytes / l.network : 0.0;
  double t_nvl = per_node > 1 ? c.nvlink_bytes / l.nvlink : 0.0;
  c.network_bound = t_net >= t_nvl;
  // Network and NVLink stages pipeline (DeepSeek's kernels forward chunks as they arrive): the slower sets the pace.
  std::size_t s = index(Protocol::simple);
  c.seconds = on_nvlink(kRingBase[s] + kRingNvlinkHop[s], l) + (g.nodes > 1 ? on_network(kRingNetHop[s], l) : 0.0) + std::max(t_net, t_nvl);
  return c;
}

double collective_seconds(CollectiveOp op, double bytes, const GroupPlacement& group, const CollectiveLinks& links) {
  if (group.gpus <= 1 || bytes <= 0) return 0;
  return collective_cost(op, bytes, group, links).seconds;
}

}  // namespace plumb
