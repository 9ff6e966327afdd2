#include "sim/fabric_tree.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace plumb::sim {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

FabricTree::FabricTree(const TreeShape& shape) : shape_(shape) {
  const TreeShape& s = shape_;
  if (s.nodes < 1 || s.gpus_per_node < 1 || s.planes < 1 || s.nodes_per_leaf < 1 || s.nodes_per_pod < 0 || s.ecmp_uplinks < 0 ||
      !(s.nic_bandwidth > 0) || !(s.leaf_oversubscription >= 1) || !(s.pod_oversubscription >= 1))
    throw std::invalid_argument("fabric tree: nodes, GPUs, planes and nodes per leaf must be positive, oversubscriptions ≥ 1");
  const std::int64_t gpus = s.nodes * s.gpus_per_node;
  leaf_groups_ = ceil_div(s.nodes, s.nodes_per_leaf);
  const std::int64_t keys = s.rail_optimized ? s.gpus_per_node : s.planes;  // leaves per node group
  const std::int64_t leaves = keys * leaf_groups_;
  const std::int64_t pods = s.nodes_per_pod > 0 ? ceil_div(s.nodes, s.nodes_per_pod) : 1;
  const std::int64_t w = ways();
  // NICs, and each leaf's NIC count (its uplinks carry that many NICs' bandwidth / oversubscription).
  std::vector<Topology::Vertex> leaf_vertex;
  for (std::int64_t l = 0; l < leaves; ++l) leaf_vertex.push_back(topology_.add_vertex(VertexKind::leaf, fmt::format("leaf{}", l)));
  std::vector<std::int64_t> nics_under(static_cast<std::size_t>(leaves), 0);
  leaf_pod_.assign(static_cast<std::size_t>(leaves), 0);
  for (std::int64_t g = 0; g < gpus; ++g) {
    const Topology::Vertex nic =
        topology_.add_vertex(VertexKind::nic, fmt::format("node{}/nic{}", g / s.gpus_per_node, g % s.gpus_per_node));
    const auto leaf = static_cast<std::size_t>(leaf_of(g));
    topology_.connect(nic, leaf_vertex[leaf], s.nic_bandwidth, s.nic_latency);
    nic_up_.push_back(static_cast<LinkId>(topology_.link_count() - 2));
    nic_down_.push_back(static_cast<LinkId>(topology_.link_count() - 1));
    ++nics_under[leaf];
    leaf_pod_[leaf] = pod_of(g);
  }
  if (leaves == 1) return;
  // Spines per (plane, pod, way) and their uplinks to the core per (plane, way).
  std::vector<Topology::Vertex> spine(static_cast<std::size_t>(s.planes * pods * w));
  for (std::size_t i = 0; i < spine.size(); ++i) spine[i] = topology_.add_vertex(VertexKind::spine, fmt::format("spine{}", i));
  std::vector<double> spine_down(spine.size(), 0.0);
  leaf_up_.resize(static_cast<std::size_t>(leaves * w));
  leaf_down_.resize(static_cast<std::size_t>(leaves * w));
  for (std::int64_t l = 0; l < leaves; ++l) {
    const std::int64_t key = l / leaf_groups_;
    const std::int64_t plane = s.rail_optimized ? (s.planes > 1 ? key % s.planes : 0) : key;
    const double up = static_cast<double>(nics_under[static_cast<std::size_t>(l)]) * s.nic_bandwidth / (s.leaf_oversubscription * static_cast<double>(w));
    if (!(up > 0)) continue;  // a leaf group past the last node
    for (std::int64_t k = 0; k < w; ++k) {
      const auto sp = static_cast<std::size_t>((plane * pods + leaf_pod_[static_cast<std::size_t>(l)]) * w + k);
      topology_.connect(leaf_vertex[static_cast<std::size_t>(l)], spine[sp], up, s.switch_latency);
      leaf_up_[static_cast<std::size_t>(l * w + k)] = static_cast<LinkId>(topology_.link_count() - 2);
      leaf_down_[static_cast<std::size_t>(l * w + k)] = static_cast<LinkId>(topology_.link_count() - 1);
      spine_down[sp] += up;
    }
  }
  if (pods == 1) return;
  pod_up_.resize(spine.size());
  pod_down_.resize(spine.size());
  for (std::int64_t plane = 0; plane < s.planes; ++plane)
    for (std::int64_t k = 0; k < w; ++k) {
      const Topology::Vertex core = topology_.add_vertex(VertexKind::core, fmt::format("core{}/{}", plane, k));
      for (std::int64_t pod = 0; pod < pods; ++pod) {
        const auto sp = static_cast<std::size_t>((plane * pods + pod) * w + k);
        if (!(spine_down[sp] > 0)) continue;
        topology_.connect(spine[sp], core, spine_down[sp] / s.pod_oversubscription, s.switch_latency);
        pod_up_[sp] = static_cast<LinkId>(topology_.link_count() - 2);
        pod_down_[sp] = static_cast<LinkId>(topology_.link_count() - 1);
      }
    }
}

std::int64_t FabricTree::plane_of(std::int64_t nic) const {
  return shape_.planes > 1 ? (nic % shape_.gpus_per_node) % shape_.planes : 0;
}

std::int64_t FabricTree::leaf_of(std::int64_t nic) const {
  const std::int64_t node = nic / shape_.gpus_per_node;
  const std::int64_t key = shape_.rail_optimized ? nic % shape_.gpus_per_node : plane_of(nic);
  return key * leaf_groups_ + node / shape_.nodes_per_leaf;
}

std::int64_t FabricTree::pod_of(std::int64_t nic) const {
  return shape_.nodes_per_pod > 0 ? (nic / shape_.gpus_per_node) / shape_.nodes_per_pod : 0;
}

std::vector<LinkId> FabricTree::path(std::int64_t a, std::int64_t b, std::uint64_t salt) const {
  const std::int64_t gpn = shape_.gpus_per_node;
  if (a / gpn == b / gpn) return {};
  const std::int64_t src = (a / gpn) * gpn + b % gpn;  // the NIC on b's rail at a's node
  std::vector<LinkId> out{nic_up_[static_cast<std::size_t>(src)]};
  const std::int64_t l1 = leaf_of(src), l2 = leaf_of(b);
  if (l1 != l2) {
    const std::int64_t w = ways();
    const std::int64_t k =
        w > 1 ? static_cast<std::int64_t>(ecmp_hash(static_cast<std::uint64_t>(a), static_cast<std::uint64_t>(b), salt) % static_cast<std::uint64_t>(w)) : 0;
    out.push_back(leaf_up_[static_cast<std::size_t>(l1 * w + k)]);
    const std::int64_t pods = shape_.nodes_per_pod > 0 ? ceil_div(shape_.nodes, shape_.nodes_per_pod) : 1;
    const std::int64_t p1 = leaf_pod_[static_cast<std::size_t>(l1)], p2 = leaf_pod_[static_cast<std::size_t>(l2)];
    if (p1 != p2) {
      const std::int64_t plane = plane_of(b);
      out.push_back(pod_up_[static_cast<std::size_t>((plane * pods + p1) * w + k)]);
      out.push_back(pod_down_[static_cast<std::size_t>((plane * pods + p2) * w + k)]);
    }
    out.push_back(leaf_down_[static_cast<std::size_t>(l2 * w + k)]);
  }
  out.push_back(nic_down_[static_cast<std::size_t>(b)]);
  return out;
}

}  // namespace plumb::sim
