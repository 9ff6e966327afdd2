#pragma once
// The physical network as a Boost.Graph: GPUs, NVSwitches, NICs and switches joined by directed
// links (one per direction) with a bandwidth and a latency. Routes are shortest paths; among
// equal-cost next hops one is chosen by a deterministic hash of (source, destination, salt), as
// ECMP hashes a flow's header. GPUs never forward traffic for others.
#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/time.hpp"

namespace plumb::sim {

// The hash an ECMP switch applies to a flow: splitmix64 (fixed, platform-independent) of the source,
// the destination and a salt; `splitmix64` steps it on for the next hop's choice.
std::uint64_t splitmix64(std::uint64_t x);
std::uint64_t ecmp_hash(std::uint64_t src, std::uint64_t dst, std::uint64_t salt);

enum class VertexKind : std::uint8_t { gpu, nvswitch, nic, leaf, spine, core };

struct VertexInfo {
  VertexKind kind = VertexKind::gpu;
  std::string name;
};

struct LinkInfo {
  double bandwidth = 0;  // bytes/s in this direction
  Time latency = 0;
  std::uint32_t id = 0;  // dense index of this directed link
  std::uint32_t from = 0, to = 0;
};

using LinkId = std::uint32_t;

class Topology {
 public:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, VertexInfo, LinkInfo>;
  using Vertex = std::uint32_t;

  Vertex add_vertex(VertexKind kind, std::string name);
  // A full-duplex link: two directed links of the same bandwidth and latency.
  void connect(Vertex a, Vertex b, double bandwidth, Time latency);

  std::size_t vertex_count() const { return boost::num_vertices(graph_); }
  std::size_t link_count() const { return links_.size(); }
  const VertexInfo& vertex(Vertex v) const { return graph_[v]; }
  const LinkInfo& link(LinkId l) const { return links_[l]; }
  const std::vector<Vertex>& gpus() const { return gpus_; }  // in creation order: gpus()[i] is GPU i

  // The directed links from src to dst (empty when src == dst); throws if dst is unreachable.
  std::vector<LinkId> route(Vertex src, Vertex dst, std::uint64_t salt = 0) const;
  Time path_latency(const std::vector<LinkId>& path) const;

 private:
  const std::vector<std::int32_t>& hops_to(Vertex dst) const;

  Graph graph_;
  std::vector<LinkInfo> links_;
  std::vector<Vertex> gpus_;
  mutable std::unordered_map<Vertex, std::vector<std::int32_t>> hops_to_;  // BFS distances per destination
};

// One node: `gpus` GPUs, each with one NVLink port of `nvlink_bandwidth` per direction into a
// single (aggregated) NVSwitch.
struct NodeShape {
  int gpus = 8;
  double nvlink_bandwidth = 450e9;
  Time nvlink_latency = 0;
};

// NICs and switches: every GPU has its own NIC (over PCIe); NIC i of every node joins the leaf of
// rail i ("rail-optimized"). Leaves take `nodes_per_leaf` nodes; the uplinks from each leaf carry
// 1/oversubscription of its downlink bandwidth, spread over the spines.
struct FabricShape {
  double nic_bandwidth = 50e9;
  double pcie_bandwidth = 64e9;
  Time nic_latency = 0;    // GPU↔NIC and NIC↔leaf hops
  Time switch_latency = 0; // switch↔switch hops
  int nodes_per_leaf = 32;
  int spines = 0;          // 0: as many as a leaf has downlinks (non-blocking radix)
  double oversubscription = 1.0;
  // Three tiers only: leaves per pod and the pod-to-core oversubscription.
  int leaves_per_pod = 0;
  double core_oversubscription = 1.0;
};

Topology nvswitch_node(const NodeShape& node);
// Two tiers: rail leaves and spines.
Topology rail_optimized_fat_tree(int nodes, const NodeShape& node, const FabricShape& fabric);
// Three tiers: leaves, pod spines (aggregation) and cores, oversubscribed at each level.
Topology three_tier_clos(int nodes, const NodeShape& node, const FabricShape& fabric);

}  // namespace plumb::sim
