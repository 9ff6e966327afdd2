#include <algorithm>
#include <array>
#include <fmt/format.h>

#include "models/schedule_report.hpp"
#include "models/step_builder.hpp"

// What a simulated step's timeline says: where each rank's time went, when each op ran, and the
// chain of work that set the step time.
namespace plumb {
namespace {

double seconds_of(sim::Time t) { return static_cast<double>(t) * 1e-12; }

}  // namespace

// Where each rank's time went, from its tasks' intervals: computing; else communicating (exposed,
// shared equally among the kinds running at that instant); else idle.
void account_step(StepSimulation& s) {
  const std::size_t gpus = s.gpu_pp.size();
  struct Edge {
    sim::Time at;
    int delta;
    std::int8_t kind;  // −1 compute
  };
  std::vector<std::vector<Edge>> edges(gpus);
  for (std::size_t t = 0; t < s.task_comm.size(); ++t) {
    if (s.graph.kind(static_cast<sim::TaskId>(t)) == sim::TaskKind::marker) continue;
    sim::Time a = s.result.start[t], b = s.result.end[t];
    if (b <= a) continue;
    auto& e = edges[static_cast<std::size_t>(s.task_gpu[t])];
    e.push_back({a, +1, s.task_comm[t]});
    e.push_back({b, -1, s.task_comm[t]});
  }
  // Each GPU's share goes to its pipeline rank, averaged over the GPUs at that rank.
  std::vector<double> weight(s.ranks.size(), 0.0);
  for (std::int32_t pp : s.gpu_pp) weight[static_cast<std::size_t>(pp)] += 1.0;
  for (std::size_t g = 0; g < gpus; ++g) {
    auto& e = edges[g];
    std::sort(e.begin(), e.end(), [](const Edge& x, const Edge& y) { return x.at < y.at; });
    std::array<int, kCommKinds + 1> active{};  // [0] compute, [1 + kind] communication
    RankStep mine;
    RankStep& out = mine;
    sim::Time at = 0;
    auto close = [&](sim::Time until) {
      double dt = seconds_of(until - at);
      if (dt <= 0) return;
      if (active[0] > 0) {
        out.compute += dt;
        return;
      }
      int kinds = 0;
      for (std::size_t k = 0; k < kCommKinds; ++k) kinds += active[k + 1] > 0;
      if (kinds == 0) {
        out.idle += dt;
        return;
      }
      for (std::size_t k = 0; k < kCommKinds; ++k)
        if (active[k + 1] > 0) out.exposed[k] += dt / kinds;
    };
    for (const Edge& x : e) {
      close(x.at);
      at = x.at;
      active[static_cast<std::size_t>(x.kind + 1)] += x.delta;
    }
    close(s.result.makespan);
    const auto pp = static_cast<std::size_t>(s.gpu_pp[g]);
    RankStep& rank = s.ranks[pp];
    const double w = 1.0 / weight[pp];
    rank.compute += w * mine.compute;
    rank.idle += w * mine.idle;
    for (std::size_t k = 0; k < kCommKinds; ++k) rank.exposed[k] += w * mine.exposed[k];
    rank.peak_bytes = std::max(rank.peak_bytes, static_cast<double>(s.result.peak_memory[g]));
  }
  for (RankStep& r : s.ranks) r.bubble_fraction = s.step_time > 0 ? r.idle / s.step_time : 0;
}


std::vector<std::vector<PlacedOp>> placed_step_ops(const StepSimulation& s) {
  std::vector<std::vector<PlacedOp>> rows(s.op_tasks.size());
  for (std::size_t r = 0; r < s.op_tasks.size(); ++r)
    for (std::size_t i = 0; i < s.op_tasks[r].size(); ++i) {
      auto [first, last] = s.op_tasks[r][i];
      sim::Time start = sim::kNever, end = 0;
      for (sim::TaskId t = first; t < last; ++t) {
        if (s.graph.kind(t) == sim::TaskKind::marker) continue;
        start = std::min(start, s.result.start[t]);
        end = std::max(end, s.result.end[t]);
      }
      if (start == sim::kNever) continue;
      rows[r].push_back({&s.schedule.ops[r][i], seconds_of(start), seconds_of(end)});
    }
  return rows;
}

std::vector<std::string> critical_path_summary(const StepSimulation& s) {
  std::vector<sim::TaskId> path = sim::critical_path(s.result);
  std::vector<std::string> lines;
  std::size_t i = 0;
  while (i < path.size()) {
    std::int32_t gpu = s.task_gpu[path[i]];
    std::array<double, kCommKinds> comm{};
    double compute = 0;
    sim::Time from = s.result.start[path[i]], to = from;
    std::string first = s.graph.label(path[i]), last = first;
    for (; i < path.size() && s.task_gpu[path[i]] == gpu; ++i) {
      sim::TaskId t = path[i];
      double d = seconds_of(s.result.end[t] - s.result.start[t]);
      if (s.task_comm[t] >= 0) comm[static_cast<std::size_t>(s.task_comm[t])] += d;
      else if (s.graph.kind(t) != sim::TaskKind::marker) compute += d;
      to = s.result.end[t];
      last = s.graph.label(t);
    }
    std::string kinds;
    for (std::size_t k = 0; k < kCommKinds; ++k)
      if (comm[k] > 0) kinds += fmt::format(", {} {:.2f} ms", comm_kind_name(static_cast<CommKind>(k)), comm[k] * 1e3);
    std::string who = s.full ? fmt::format("GPU {:>4} (pp {:>2})", gpu, s.gpu_pp[static_cast<std::size_t>(gpu)])
                             : fmt::format("pp rank {:>2}", gpu);
    lines.push_back(fmt::format("{}  {:>9.2f} → {:>9.2f} ms  {} … {}: compute {:.2f} ms{}", who, seconds_of(from) * 1e3,
                                seconds_of(to) * 1e3, first, last, compute * 1e3, kinds));
  }
  return lines;
}

}  // namespace plumb
