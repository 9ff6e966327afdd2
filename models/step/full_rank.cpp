#include "models/step/full_rank.hpp"

#include <algorithm>
#include <bit>
#include <map>

namespace plumb {
namespace {

// Global ranks that share every coordinate but `axis`, for the dense view (tp, cp, dp) or the expert
// view (ep), each group at one pipeline rank.
std::vector<std::vector<std::int32_t>> groups_along(const Placement& place, std::int64_t gpus, ParallelDim axis) {
  std::map<std::array<std::int64_t, 3>, std::vector<std::int32_t>> by_key;
  for (std::int64_t g = 0; g < gpus; ++g) {
    RankCoords c = place.coords(g);
    std::array<std::int64_t, 3> key{};
    if (axis == ParallelDim::tp) key = {c.cp, c.dp, c.pp};
    else if (axis == ParallelDim::cp) key = {c.tp, c.dp, c.pp};
    else if (axis == ParallelDim::ep) key = {c.etp, c.edp, c.pp};
    else key = {c.tp, c.cp, c.pp};  // dp
    by_key[key].push_back(static_cast<std::int32_t>(g));
  }
  std::vector<std::vector<std::int32_t>> out;
  out.reserve(by_key.size());
  for (auto& [_, members] : by_key) out.push_back(std::move(members));
  return out;
}

}  // namespace

FullRankLayout full_rank_layout(const Job& job, const Placement& place, ScheduleKind schedule,
                                const std::array<bool, kCommKinds>& crosses_nodes, const std::vector<std::int64_t>& ep_loads,
                                bool every_gpu) {
  const ParallelLayout& p = job.layout;
  const std::int64_t gpus = p.gpus();
  FullRankLayout out;
  out.conditions = gpu_conditions(job.perturbations, gpus);
  // Replicas: the GPUs of each pipeline rank in the order of their global ranks.
  std::vector<std::int32_t> replica_of(static_cast<std::size_t>(gpus)), pp_of(static_cast<std::size_t>(gpus));
  out.replicas.assign(static_cast<std::size_t>(gpus / p.pp), std::vector<std::int32_t>(static_cast<std::size_t>(p.pp), -1));
  out.replica_ep.assign(out.replicas.size(), 0);
  std::vector<std::size_t> filled(static_cast<std::size_t>(p.pp), 0);
  for (std::int64_t g = 0; g < gpus; ++g) {
    const RankCoords c = place.coords(g);
    const auto pp = static_cast<std::size_t>(c.pp);
    const std::size_t q = filled[pp]++;
    out.replicas[q][pp] = static_cast<std::int32_t>(g);
    out.replica_ep[q] = static_cast<std::int32_t>(c.ep);
    replica_of[static_cast<std::size_t>(g)] = static_cast<std::int32_t>(q);
    pp_of[static_cast<std::size_t>(g)] = static_cast<std::int32_t>(pp);
  }
  // Collective groups, each member's collectives at the group's slowest link.
  out.comm_scale.assign(static_cast<std::size_t>(gpus), {1, 1, 1, 1, 1});
  std::vector<sim::ItemGroup> groups;
  auto member = [&](std::int32_t g) { return sim::GroupMember{replica_of[static_cast<std::size_t>(g)], pp_of[static_cast<std::size_t>(g)]}; };
  std::array<std::vector<std::vector<std::int32_t>>, kCommKinds> by_kind;
  for (auto [kind, axis] : {std::pair{CommKind::tp, ParallelDim::tp}, std::pair{CommKind::cp, ParallelDim::cp},
                            std::pair{CommKind::ep, ParallelDim::ep}, std::pair{CommKind::dp, ParallelDim::dp}})
    by_kind[static_cast<std::size_t>(kind)] = groups_along(place, gpus, axis);
  for (const auto& rep : out.replicas)
    for (std::size_t r = 0; r + 1 < rep.size(); ++r) by_kind[static_cast<std::size_t>(CommKind::pp)].push_back({rep[r], rep[r + 1]});
  std::array<bool, kCommKinds> all_to_all{};
  all_to_all[static_cast<std::size_t>(CommKind::ep)] = true;
  out.fabric = fabric_shares(job.cluster, by_kind, all_to_all);
  for (auto kind : {CommKind::tp, CommKind::cp, CommKind::ep, CommKind::dp}) {
    const auto k = static_cast<std::size_t>(kind);
    for (const std::vector<std::int32_t>& members : by_kind[k]) {
      double slowest = 1.0;
      for (std::int32_t g : members) slowest = std::min(slowest, out.conditions[static_cast<std::size_t>(g)].network);
      sim::ItemGroup group{static_cast<std::int32_t>(kind), {}};
      for (std::int32_t g : members) {
        if (crosses_nodes[k] && members.size() > 1) out.comm_scale[static_cast<std::size_t>(g)][k] = 1.0 / slowest;
        group.members.push_back(member(g));
      }
      if (members.size() > 1) groups.push_back(std::move(group));
    }
  }
  // Pipeline sends: a link at either end of a hop slows it.
  const auto pp_kind = static_cast<std::size_t>(CommKind::pp);
  if (crosses_nodes[pp_kind])
    for (const auto& rep : out.replicas)
      for (std::size_t r = 0; r < rep.size(); ++r) {
        double slowest = out.conditions[static_cast<std::size_t>(rep[r])].network;
        if (r > 0) slowest = std::min(slowest, out.conditions[static_cast<std::size_t>(rep[r - 1])].network);
        if (r + 1 < rep.size()) slowest = std::min(slowest, out.conditions[static_cast<std::size_t>(rep[r + 1])].network);
        out.comm_scale[static_cast<std::size_t>(rep[r])][pp_kind] = 1.0 / std::min(1.0, slowest);
      }
  // The fabric's switches: each group's share of its NICs' rate where they hold it back.
  for (std::size_t g = 0; g < out.comm_scale.size(); ++g)
    for (std::size_t k = 0; k < kCommKinds; ++k)
      if (crosses_nodes[k]) out.comm_scale[g][k] /= out.fabric.share[g][k];
  out.fabric.share.clear();  // folded into comm_scale
  // Gradient reductions: per stage, every GPU holding it with the same tensor and context ranks.
  std::map<std::array<std::int64_t, 3>, sim::ItemGroup> reductions;
  for (std::int64_t g = 0; g < gpus; ++g) {
    const RankCoords c = place.coords(g);
    for (std::int64_t st : stages_of_rank(schedule, c.pp, p.pp, p.vp)) {
      sim::ItemGroup& group = reductions[{c.tp, c.cp, st}];
      group.kind = kReductionKind + static_cast<std::int32_t>(st);
      group.members.push_back(member(static_cast<std::int32_t>(g)));
    }
  }
  for (auto& [_, group] : reductions)
    if (group.members.size() > 1) groups.push_back(std::move(group));
  // What each replica runs: per pipeline rank its experts' load, its speed, its links, its failure.
  std::map<std::vector<std::uint64_t>, std::int64_t> kinds;
  std::vector<std::int64_t> colour(out.replicas.size());
  for (std::size_t q = 0; q < out.replicas.size(); ++q) {
    std::vector<std::uint64_t> key;
    if (every_gpu) key.push_back(q);
    key.push_back(ep_loads.empty() ? 0 : static_cast<std::uint64_t>(ep_loads[static_cast<std::size_t>(out.replica_ep[q])]));
    for (std::int32_t g : out.replicas[q]) {
      const GpuCondition& c = out.conditions[static_cast<std::size_t>(g)];
      key.push_back(std::bit_cast<std::uint64_t>(c.compute));
      key.push_back(std::bit_cast<std::uint64_t>(c.fails_at.value_or(-1.0)));
      for (double s : out.comm_scale[static_cast<std::size_t>(g)]) key.push_back(std::bit_cast<std::uint64_t>(s));
    }
    colour[q] = kinds.emplace(std::move(key), static_cast<std::int64_t>(kinds.size())).first->second;
  }
  out.classes = sim::equitable_classes(colour, groups);
  out.barriers = sim::class_groups(groups, out.classes);
  return out;
}

}  // namespace plumb
