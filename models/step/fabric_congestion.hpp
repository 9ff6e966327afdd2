#pragma once
// What the switches of the cluster's fabric do to the full-rank step's collectives: every group of a
// kind runs its collective at once (all DP rings of the gradient reduction, every pipeline hop), each
// as flows between its members (a ring: each member to the next; EP's all-to-all: every pair) routed
// over the fabric's tiers (sim/fabric_tree), bandwidth shared max-min fairly (sim/network). A group's
// share is its slowest flow's rate over the same flow's rate on a non-blocking, adaptively routed
// fabric with the same NICs: 1 when the switches never hold it back, 0.5 when a 2:1 oversubscribed
// leaf or two ECMP flows on one spine uplink halve it. The NICs themselves are priced by the costs.
// Under ECMP every group of a kind takes the slowest group's share (which groups collide is the hash's
// luck); under adaptive routing each group keeps its own.
#include <array>
#include <cstdint>
#include <vector>

#include "models/costs/step_costs.hpp"
#include "models/hardware/hardware.hpp"

namespace plumb {

struct FabricShares {
  bool modelled = false;  // false: the fabric is non-blocking and adaptively routed (every share 1)
  std::vector<std::array<double, kCommKinds>> share;  // per global rank, per CommKind
  std::array<double, kCommKinds> slowest{1, 1, 1, 1, 1};  // the least share of any group, per kind
  std::array<std::int64_t, kCommKinds> flows{};             // network flows solved, per kind
  double solve_seconds = 0;                                  // wall time of the max-min solves
};

// `groups[k]`: the groups of CommKind k in global ranks (members in ring order); `all_to_all[k]`:
// whether kind k's collective is an all-to-all (every pair) rather than a ring.
FabricShares fabric_shares(const Cluster& cluster, const std::array<std::vector<std::vector<std::int32_t>>, kCommKinds>& groups,
                           const std::array<bool, kCommKinds>& all_to_all);

}  // namespace plumb
