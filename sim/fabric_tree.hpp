#pragma once
// A cluster's scale-out network as the tiers of a fat tree, built to route at any size: each GPU's NIC
// joins a leaf; leaves join the spine layer of their pod; pods join the core. Paths come from the
// structure, not from per-destination tables, so a 100K-GPU cluster routes in a few operations per
// flow. A flow from GPU a to GPU b leaves a's node from the NIC on b's rail (NCCL's PXN: the data
// crosses NVLink first), so every network path joins two NICs of one rail.
//
// Leaves: rail-optimized, the NICs of one rail of `nodes_per_leaf` nodes share a leaf (NVIDIA DGX
// SuperPOD); otherwise a group of whole nodes' NICs does. Planes: with planes > 1 rail r is on plane
// r % planes and each plane has its own switches (DeepSeek's multi-plane fat tree). Each tier's
// uplinks carry its downlinks' bandwidth / oversubscription. Routing: adaptive (a leaf's uplinks act
// as one, as adaptive routing or packet spraying spreads a flow) or ECMP over `uplinks` spines, the
// spine chosen by a hash of the flow, so flows can collide on one uplink.
#include <cstdint>
#include <vector>

#include "sim/topology.hpp"

namespace plumb::sim {

struct TreeShape {
  std::int64_t nodes = 1, gpus_per_node = 8;
  double nic_bandwidth = 50e9;        // bytes/s per NIC, each direction
  bool rail_optimized = true;
  std::int64_t planes = 1;
  std::int64_t nodes_per_leaf = 32;   // nodes whose NICs (of one rail, rail-optimized) share a leaf
  std::int64_t nodes_per_pod = 0;     // 0: two tiers; else pods of this many nodes under a core tier
  double leaf_oversubscription = 1.0; // leaf down : up
  double pod_oversubscription = 1.0;  // pod spine down : up (three tiers)
  std::int64_t ecmp_uplinks = 0;      // 0: adaptive routing; else ECMP over this many spines per pod
  Time nic_latency = 0, switch_latency = 0;
};

class FabricTree {
 public:
  // Throws std::invalid_argument on a shape that cannot be built (no nodes, a factor below 1).
  explicit FabricTree(const TreeShape& shape);

  const Topology& topology() const { return topology_; }
  const TreeShape& shape() const { return shape_; }
  // The network links from GPU a to GPU b (global GPU indices); empty within a node. `salt` varies
  // the ECMP hash between flows of the same pair.
  std::vector<LinkId> path(std::int64_t a, std::int64_t b, std::uint64_t salt = 0) const;

 private:
  std::int64_t leaf_of(std::int64_t nic) const;
  std::int64_t plane_of(std::int64_t nic) const;
  std::int64_t pod_of(std::int64_t nic) const;
  std::int64_t ways() const { return shape_.ecmp_uplinks > 0 ? shape_.ecmp_uplinks : 1; }

  TreeShape shape_;
  Topology topology_;
  std::int64_t leaf_groups_ = 0;                 // leaves per rail (rail-optimized) or per plane
  std::vector<LinkId> nic_up_, nic_down_;        // per NIC (= per GPU)
  std::vector<LinkId> leaf_up_, leaf_down_;      // per leaf × way
  std::vector<LinkId> pod_up_, pod_down_;        // per (plane, pod) × way
  std::vector<std::int64_t> leaf_pod_;           // per leaf: its pod index within its plane
};

}  // namespace plumb::sim
