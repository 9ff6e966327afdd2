#include "sim/topology.hpp"

#include <algorithm>
#include <deque>
#include <fmt/format.h>
#include <stdexcept>

namespace plumb::sim {
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t ecmp_hash(std::uint64_t src, std::uint64_t dst, std::uint64_t salt) { return splitmix64(splitmix64(src) ^ (dst << 32) ^ salt); }

Topology::Vertex Topology::add_vertex(VertexKind kind, std::string name) {
  Vertex v = static_cast<Vertex>(boost::add_vertex(VertexInfo{kind, std::move(name)}, graph_));
  if (kind == VertexKind::gpu) gpus_.push_back(v);
  hops_to_.clear();
  return v;
}

void Topology::connect(Vertex a, Vertex b, double bandwidth, Time latency) {
  if (!(bandwidth > 0)) throw std::invalid_argument("Topology: a link needs a positive bandwidth");
  for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    LinkInfo info{bandwidth, latency, static_cast<LinkId>(links_.size()), from, to};
    boost::add_edge(from, to, info, graph_);
    links_.push_back(info);
  }
  hops_to_.clear();
}

const std::vector<std::int32_t>& Topology::hops_to(Vertex dst) const {
  auto it = hops_to_.find(dst);
  if (it != hops_to_.end()) return it->second;
  // Breadth-first search backwards from dst; only the destination may be a GPU on the way.
  std::vector<std::int32_t> hops(vertex_count(), -1);
  std::deque<Vertex> queue{dst};
  hops[dst] = 0;
  while (!queue.empty()) {
    Vertex v = queue.front();
    queue.pop_front();
    if (v != dst && graph_[v].kind == VertexKind::gpu) continue;
    for (auto [e, end] = boost::in_edges(v, graph_); e != end; ++e) {
      Vertex u = static_cast<Vertex>(boost::source(*e, graph_));
      if (hops[u] < 0) {
        hops[u] = hops[v] + 1;
        queue.push_back(u);
      }
    }
  }
  return hops_to_.emplace(dst, std::move(hops)).first->second;
}

std::vector<LinkId> Topology::route(Vertex src, Vertex dst, std::uint64_t salt) const {
  std::vector<LinkId> path;
  if (src == dst) return path;
  const std::vector<std::int32_t>& hops = hops_to(dst);
  if (hops[src] < 0)
    throw std::runtime_error(fmt::format("Topology: no route from {} to {}", graph_[src].name, graph_[dst].name));
  std::uint64_t h = ecmp_hash(src, dst, salt);
  Vertex at = src;
  std::vector<std::pair<LinkId, Vertex>> choices;  // equal-cost next hops
  while (at != dst) {
    choices.clear();
    for (auto [e, end] = boost::out_edges(at, graph_); e != end; ++e) {
      Vertex next = static_cast<Vertex>(boost::target(*e, graph_));
      if (hops[next] == hops[at] - 1 && (next == dst || graph_[next].kind != VertexKind::gpu))
        choices.emplace_back(graph_[*e].id, next);
    }
    auto [link, next] = choices[h % choices.size()];
    h = splitmix64(h);
    path.push_back(link);
    at = next;
  }
  return path;
}

Time Topology::path_latency(const std::vector<LinkId>& path) const {
  Time total = 0;
  for (LinkId l : path) total += links_[l].latency;
  return total;
}

namespace {

// GPUs, one NVSwitch and (with a fabric) one NIC per GPU for node n; returns the NICs.
std::vector<Topology::Vertex> add_node(Topology& t, int n, const NodeShape& node, const FabricShape* fabric) {
  Topology::Vertex sw = t.add_vertex(VertexKind::nvswitch, fmt::format("node{}/nvswitch", n));
  std::vector<Topology::Vertex> nics;
  for (int g = 0; g < node.gpus; ++g) {
    Topology::Vertex gpu = t.add_vertex(VertexKind::gpu, fmt::format("node{}/gpu{}", n, g));
    t.connect(gpu, sw, node.nvlink_bandwidth, node.nvlink_latency);
    if (fabric) {
      Topology::Vertex nic = t.add_vertex(VertexKind::nic, fmt::format("node{}/nic{}", n, g));
      t.connect(gpu, nic, fabric->pcie_bandwidth, fabric->nic_latency);
      nics.push_back(nic);
    }
  }
  return nics;
}

void check_shape(int nodes, const NodeShape& node, const FabricShape& fabric) {
  if (nodes < 1 || node.gpus < 1 || fabric.nodes_per_leaf < 1 || !(fabric.oversubscription >= 1.0))
    throw std::invalid_argument("fabric: nodes, GPUs and nodes per leaf must be positive, oversubscription ≥ 1");
}

}  // namespace

Topology nvswitch_node(const NodeShape& node) {
  Topology t;
  add_node(t, 0, node, nullptr);
  return t;
}

Topology rail_optimized_fat_tree(int nodes, const NodeShape& node, const FabricShape& fabric) {
  check_shape(nodes, node, fabric);
  Topology t;
  std::vector<std::vector<Topology::Vertex>> nics;
  for (int n = 0; n < nodes; ++n) nics.push_back(add_node(t, n, node, &fabric));
  int groups = (nodes + fabric.nodes_per_leaf - 1) / fabric.nodes_per_leaf;
  std::vector<Topology::Vertex> leaves;
  for (int rail = 0; rail < node.gpus; ++rail)
    for (int g = 0; g < groups; ++g) {
      Topology::Vertex leaf = t.add_vertex(VertexKind::leaf, fmt::format("leaf/rail{}/group{}", rail, g));
      leaves.push_back(leaf);
      for (int n = g * fabric.nodes_per_leaf; n < std::min(nodes, (g + 1) * fabric.nodes_per_leaf); ++n)
        t.connect(nics[static_cast<std::size_t>(n)][static_cast<std::size_t>(rail)], leaf, fabric.nic_bandwidth,
                  fabric.nic_latency);
    }
  if (leaves.size() == 1) return t;
  int spines = fabric.spines > 0 ? fabric.spines : fabric.nodes_per_leaf;
  double uplink = fabric.nic_bandwidth * fabric.nodes_per_leaf / (fabric.oversubscription * spines);
  std::vector<Topology::Vertex> spine;
  for (int s = 0; s < spines; ++s) spine.push_back(t.add_vertex(VertexKind::spine, fmt::format("spine{}", s)));
  for (Topology::Vertex leaf : leaves)
    for (Topology::Vertex s : spine) t.connect(leaf, s, uplink, fabric.switch_latency);
  return t;
}

Topology three_tier_clos(int nodes, const NodeShape& node, const FabricShape& fabric) {
  check_shape(nodes, node, fabric);
  if (fabric.leaves_per_pod < 1 || !(fabric.core_oversubscription >= 1.0))
    throw std::invalid_argument("three_tier_clos: leaves_per_pod must be positive, core oversubscription ≥ 1");
  Topology t;
  std::vector<Topology::Vertex> nics;  // every NIC of every node, in node order
  for (int n = 0; n < nodes; ++n)
    for (Topology::Vertex nic : add_node(t, n, node, &fabric)) nics.push_back(nic);
  int per_leaf = fabric.nodes_per_leaf * node.gpus;  // NIC ports per leaf
  int leaves = (static_cast<int>(nics.size()) + per_leaf - 1) / per_leaf;
  int pods = (leaves + fabric.leaves_per_pod - 1) / fabric.leaves_per_pod;
  int pod_spines = fabric.spines > 0 ? fabric.spines : fabric.leaves_per_pod;
  double leaf_up = fabric.nic_bandwidth * per_leaf / (fabric.oversubscription * pod_spines);
  double pod_down = leaf_up * fabric.leaves_per_pod;  // what one pod spine receives from its leaves
  int cores = pod_spines;
  double pod_up = pod_down / (fabric.core_oversubscription * cores);
  std::vector<Topology::Vertex> core;
  for (int c = 0; c < cores; ++c) core.push_back(t.add_vertex(VertexKind::core, fmt::format("core{}", c)));
  for (int p = 0; p < pods; ++p) {
    std::vector<Topology::Vertex> spines;
    for (int s = 0; s < pod_spines; ++s) {
      spines.push_back(t.add_vertex(VertexKind::spine, fmt::format("pod{}/spine{}", p, s)));
      if (pods > 1)
        for (Topology::Vertex c : core) t.connect(spines.back(), c, pod_up, fabric.switch_latency);
    }
    for (int l = p * fabric.leaves_per_pod; l < std::min(leaves, (p + 1) * fabric.leaves_per_pod); ++l) {
      Topology::Vertex leaf = t.add_vertex(VertexKind::leaf, fmt::format("pod{}/leaf{}", p, l));
      for (int i = l * per_leaf; i < std::min(static_cast<int>(nics.size()), (l + 1) * per_leaf); ++i)
        t.connect(nics[static_cast<std::size_t>(i)], leaf, fabric.nic_bandwidth, fabric.nic_latency);
      for (Topology::Vertex s : spines) t.connect(leaf, s, leaf_up, fabric.switch_latency);
    }
  }
  return t;
}

}  // namespace plumb::sim
