#include <algorithm>
#include <array>
#include <fmt/format.h>

#include "models/step/step_builder.hpp"
#include "sim/intervals.hpp"

// What a simulated step's timeline says: where each rank's time went, when each op ran, and the
// chain of work that set the step time.
namespace plumb {
namespace {


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
  for (std::size_t g = 0; g < gpus; ++g) weight[static_cast<std::size_t>(s.gpu_pp[g])] += static_cast<double>(s.gpu_count[g]);
  s.gpu_steps.assign(gpus, {});
  for (std::size_t g = 0; g < gpus; ++g) {
    auto& e = edges[g];
    std::sort(e.begin(), e.end(), [](const Edge& x, const Edge& y) { return x.at < y.at; });
    std::array<int, kCommKinds + 1> active{};  // [0] compute, [1 + kind] communication
    RankStep mine;
    RankStep& out = mine;
    sim::Time at = 0;
    auto close = [&](sim::Time until) {
      double dt = sim::to_seconds(until - at);
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
    mine.peak_bytes = static_cast<double>(s.result.peak_memory[g]);
    mine.bubble_fraction = s.step_time > 0 ? mine.idle / s.step_time : 0;
    s.gpu_steps[g] = mine;
    const auto pp = static_cast<std::size_t>(s.gpu_pp[g]);
    RankStep& rank = s.ranks[pp];
    const double w = static_cast<double>(s.gpu_count[g]) / weight[pp];
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
      rows[r].push_back({&s.schedule.ops[r][i], sim::to_seconds(start), sim::to_seconds(end)});
    }
  return rows;
}

double RankPhases::total() const {
  double t = before + waiting + after;
  for (double x : seconds) t += x;
  return t;
}

std::vector<RankPhases> rank_phases(const StepSimulation& s) {
  const std::vector<std::vector<PlacedOp>> rows = placed_step_ops(s);
  // The GPU each rank's ops ran on (full mode: its first replica's) and when that GPU was busy at all.
  std::vector<std::int32_t> gpu_of(rows.size(), -1);
  for (std::size_t r = 0; r < rows.size(); ++r)
    if (!s.op_tasks[r].empty()) gpu_of[r] = s.task_gpu[static_cast<std::size_t>(s.op_tasks[r].front().first)];
  std::vector<std::vector<std::pair<double, double>>> busy(s.gpu_pp.size());
  std::vector<bool> wanted(s.gpu_pp.size(), false);  // full mode: only the replica the ops were placed on
  for (std::int32_t g : gpu_of)
    if (g >= 0) wanted[static_cast<std::size_t>(g)] = true;
  for (std::size_t t = 0; t < s.task_gpu.size(); ++t) {
    const auto id = static_cast<sim::TaskId>(t);
    const auto g = static_cast<std::size_t>(s.task_gpu[t]);
    if (!wanted[g] || s.graph.kind(id) == sim::TaskKind::marker || s.result.end[t] <= s.result.start[t]) continue;
    busy[g].emplace_back(sim::to_seconds(s.result.start[t]), sim::to_seconds(s.result.end[t]));
  }
  std::vector<RankPhases> out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    // The GPU's busy time as disjoint intervals, to take the idle stretches inside an op's span out of it.
    const std::vector<std::pair<double, double>> merged =
        gpu_of[r] >= 0 ? sim::merged_intervals(busy[static_cast<std::size_t>(gpu_of[r])]) : std::vector<std::pair<double, double>>{};
    auto busy_within = [&, next = std::size_t{0}](double from, double to) mutable {
      while (next < merged.size() && merged[next].second <= from) ++next;
      double t = 0;
      for (std::size_t i = next; i < merged.size() && merged[i].first < to; ++i)
        t += std::min(to, merged[i].second) - std::max(from, merged[i].first);
      return t;
    };
    RankPhases p;
    double cursor = 0;
    for (const PlacedOp& o : rows[r]) {
      const double from = std::max(o.start, cursor), to = std::max(o.end, from);
      (&o == &rows[r].front() ? p.before : p.waiting) += from - cursor;
      const auto k = static_cast<std::size_t>(o.op->kind);
      const double worked = busy_within(from, to);
      p.seconds[k] += worked;
      p.waiting += (to - from) - worked;
      ++p.count[k];
      cursor = to;
    }
    p.after = std::max(0.0, s.step_time - cursor);
    out.push_back(p);
  }
  return out;
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
      double d = sim::to_seconds(s.result.end[t] - s.result.start[t]);
      if (s.task_comm[t] >= 0) comm[static_cast<std::size_t>(s.task_comm[t])] += d;
      else if (s.graph.kind(t) != sim::TaskKind::marker) compute += d;
      to = s.result.end[t];
      last = s.graph.label(t);
    }
    std::string kinds;
    for (std::size_t k = 0; k < kCommKinds; ++k)
      if (comm[k] > 0) kinds += fmt::format(", {} {:.2f} ms", comm_kind_name(static_cast<CommKind>(k)), comm[k] * 1e3);
    std::string who = s.full ? fmt::format("GPU {:>4} (pp {:>2})", s.gpu_rank[static_cast<std::size_t>(gpu)], s.gpu_pp[static_cast<std::size_t>(gpu)])
                             : fmt::format("pp rank {:>2}", gpu);
    lines.push_back(fmt::format("{}  {:>9.2f} → {:>9.2f} ms  {} … {}: compute {:.2f} ms{}", who, sim::to_seconds(from) * 1e3,
                                sim::to_seconds(to) * 1e3, first, last, compute * 1e3, kinds));
  }
  return lines;
}

}  // namespace plumb
