#include "models/step/fabric_congestion.hpp"

#include <algorithm>
#include <chrono>

#include "sim/fabric_tree.hpp"
#include "sim/network.hpp"

namespace plumb {
namespace {

sim::TreeShape tree_shape(const Cluster& c) {
  const FabricTopology& t = c.fabric.topology;
  sim::TreeShape s;
  s.nodes = c.nodes;
  s.gpus_per_node = c.fabric.gpus_per_node;
  s.nic_bandwidth = c.fabric.nic_rate;
  s.rail_optimized = t.shape == FabricShape::rail_optimized_fat_tree;
  s.planes = t.planes;
  // A 64-port leaf's 32 downlinks (FabricTopology): one rail of 32 nodes, or 32 NICs of whole nodes.
  s.nodes_per_leaf = t.nodes_per_leaf > 0 ? t.nodes_per_leaf
                     : s.rail_optimized  ? 32
                                         : std::max<std::int64_t>(1, 32 * s.planes / std::max<std::int64_t>(1, s.gpus_per_node));
  s.nodes_per_pod = t.tiers >= 3 ? (t.nodes_per_pod > 0 ? t.nodes_per_pod : 32 * s.nodes_per_leaf) : 0;
  s.leaf_oversubscription = t.oversubscription;
  s.pod_oversubscription = t.tiers >= 3 ? t.pod_oversubscription : 1.0;
  s.ecmp_uplinks = t.ecmp ? t.ecmp_uplinks : 0;
  return s;
}

// Each flow's rate when all of `pairs` run at once on `tree`.
std::vector<double> rates(const sim::FabricTree& tree, const std::vector<std::pair<std::int32_t, std::int32_t>>& pairs) {
  sim::Network net(tree.topology());
  std::vector<sim::Network::FlowId> ids;
  ids.reserve(pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) ids.push_back(net.start(tree.path(pairs[i].first, pairs[i].second, i), 1.0, 0));
  net.recompute(0);
  std::vector<double> out;
  out.reserve(ids.size());
  for (auto id : ids) out.push_back(net.rate(id));
  return out;
}

}  // namespace

FabricShares fabric_shares(const Cluster& cluster, const std::array<std::vector<std::vector<std::int32_t>>, kCommKinds>& groups,
                           const std::array<bool, kCommKinds>& all_to_all) {
  FabricShares out;
  const sim::TreeShape shape = tree_shape(cluster);
  out.share.assign(static_cast<std::size_t>(cluster.gpus()), {1, 1, 1, 1, 1});
  if (shape.leaf_oversubscription == 1.0 && shape.pod_oversubscription == 1.0 && shape.ecmp_uplinks == 0) return out;
  out.modelled = true;
  const auto start = std::chrono::steady_clock::now();
  sim::TreeShape ideal_shape = shape;
  ideal_shape.leaf_oversubscription = ideal_shape.pod_oversubscription = 1.0;
  ideal_shape.ecmp_uplinks = 0;
  const sim::FabricTree real(shape), ideal(ideal_shape);
  for (std::size_t k = 0; k < kCommKinds; ++k) {
    // The flows of every group of the kind that leave a node; per flow its group.
    std::vector<std::pair<std::int32_t, std::int32_t>> pairs;
    std::vector<std::size_t> group_of;
    const std::int64_t gpn = cluster.fabric.gpus_per_node;
    auto add = [&](std::int32_t a, std::int32_t b, std::size_t g) {
      if (a / gpn == b / gpn) return;
      pairs.emplace_back(a, b);
      group_of.push_back(g);
    };
    const auto& list = groups[k];
    for (std::size_t g = 0; g < list.size(); ++g) {
      const auto& m = list[g];
      if (m.size() < 2) continue;
      if (all_to_all[k]) {
        for (std::int32_t a : m)
          for (std::int32_t b : m)
            if (a != b) add(a, b, g);
      } else {
        for (std::size_t i = 0; i < m.size(); ++i) add(m[i], m[(i + 1) % m.size()], g);
      }
    }
    out.flows[k] = static_cast<std::int64_t>(pairs.size());
    if (pairs.empty()) continue;
    const std::vector<double> got = rates(real, pairs), alone = rates(ideal, pairs);
    std::vector<double> slowest(list.size(), -1), slowest_ideal(list.size(), -1);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      double& s = slowest[group_of[i]];
      double& t = slowest_ideal[group_of[i]];
      s = s < 0 ? got[i] : std::min(s, got[i]);
      t = t < 0 ? alone[i] : std::min(t, alone[i]);
    }
    std::vector<double> share(list.size(), 1.0);
    for (std::size_t g = 0; g < list.size(); ++g) {
      if (slowest[g] < 0) continue;
      share[g] = std::min(1.0, slowest[g] / slowest_ideal[g]);
      out.slowest[k] = std::min(out.slowest[k], share[g]);
    }
    // Under ECMP which groups collide is the luck of the hash, different for every group: each group is
    // given the slowest one's share (the step waits for its slowest collective of the kind), which keeps
    // alike GPUs alike. Adaptive routing's shares follow the structure (which rings cross a tier) and
    // stay per group.
    if (shape.ecmp_uplinks > 0) std::fill(share.begin(), share.end(), out.slowest[k]);
    for (std::size_t g = 0; g < list.size(); ++g)
      for (std::int32_t r : list[g]) out.share[static_cast<std::size_t>(r)][k] = share[g];
  }
  out.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace plumb
