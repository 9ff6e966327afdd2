#include "models/step_builder.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "models/memory.hpp"
#include "models/pipeline_run.hpp"
#include "models/schedule_report.hpp"
#include "models/zero_bubble.hpp"

namespace plumb {
namespace {

sim::Time ticks(double seconds) { return static_cast<sim::Time>(std::llround(seconds * 1e12)); }
double seconds_of(sim::Time t) { return static_cast<double>(t) * 1e-12; }

struct RankStreams {
  sim::StreamId compute, comm, p2p, dp;
};

class StepOps final : public PipelineHooks {
 public:
  StepOps(const Job& job, const StepCosts& costs, StepSimulation& out) : job_(job), costs_(costs), out_(out) {
    const MemoryPlan plan = plan_memory(job);
    for (std::int64_t r = 0; r < job.layout.pp; ++r) {
      std::int32_t gpu = out.machine.add_gpu(fmt::format("pp rank {}", r), costs.sms);
      streams.push_back({out.machine.add_stream(gpu, "compute"), out.machine.add_stream(gpu, "comm (TP/EP/CP)"),
                         out.machine.add_stream(gpu, "pipeline send"), out.machine.add_stream(gpu, "data parallel")});
    }
    for (const StagePlan& s : plan.stages) activation_bytes.push_back(stage_activation_bytes(job, s));
  }

  // ZeRO-1/2 gathers the previous optimizer step's parameters as the step starts; a stage's first
  // forward waits for its first layer's bucket, the rest arrives while it computes.
  void add_param_gathers(const PipelineSchedule& s) {
    if (job_.layout.zero < 1 || job_.layout.zero > 2) return;
    for (std::int64_t r = 0; r < s.ranks; ++r)
      for (std::int64_t st : stages_of_rank(s.kind, r, job_.layout.pp, job_.layout.vp)) {
        double total = costs_.stages[static_cast<std::size_t>(st)].param_gather;
        if (total <= 0) continue;
        double layers = static_cast<double>(std::max<std::int64_t>(1, job_.layout.stage_layers[static_cast<std::size_t>(st)]));
        sim::TaskId first = comm_task(r, streams[static_cast<std::size_t>(r)].dp, fmt::format("param gather s{} (first bucket)", st),
                                      total / layers, CommKind::dp);
        if (layers > 1)
          comm_task(r, streams[static_cast<std::size_t>(r)].dp, fmt::format("param gather s{}", st), total - total / layers, CommKind::dp);
        first_gather[{r, st}] = first;
      }
  }

  OpTasks add_op(std::int64_t rank, const PipeOp& o) override {
    const auto first = static_cast<sim::TaskId>(out_.graph.size());
    OpTasks t = expand(rank, o);
    out_.op_tasks.resize(static_cast<std::size_t>(job_.layout.pp));
    out_.op_tasks[static_cast<std::size_t>(rank)].emplace_back(first, static_cast<sim::TaskId>(out_.graph.size()));
    return t;
  }

  OpTasks expand(std::int64_t rank, const PipeOp& o) {
    const StageCost& c = costs_.stages[static_cast<std::size_t>(o.work.stage)];
    OpTasks t;
    switch (o.kind) {
      case OpKind::forward: {
        auto [in, out] = chain(rank, {{&c.forward, fmt::format("F{}", o.work.mb)}}, o.work.stage)[0];
        t = {in, out, in, out};
        break;
      }
      case OpKind::backward:
      case OpKind::backward_input:
      case OpKind::weight: {
        const Pass& p = o.kind == OpKind::backward ? c.backward : o.kind == OpKind::weight ? c.weight_grad : c.input_grad;
        auto [in, out] = chain(rank, {{&p, fmt::format("{}{}", op_kind_symbol(o.kind), o.work.mb)}}, -1)[0];
        t = {in, out, in, out};
        break;
      }
      case OpKind::forward_backward: {
        const StageCost& b = costs_.stages[static_cast<std::size_t>(o.other.stage)];
        auto ends = chain(rank, {{&c.forward, fmt::format("F{}", o.work.mb)}, {&b.backward, fmt::format("B{}", o.other.mb)}},
                          o.work.stage);
        t = {ends[0].first, ends[0].second, ends[1].first, ends[1].second};
        break;
      }
    }
    // Activations live from the end of a forward to the end of the matching input gradient.
    if (o.kind == OpKind::forward || o.kind == OpKind::forward_backward)
      out_.graph.set_memory_delta(t.forward_out, static_cast<std::int64_t>(activation_bytes[static_cast<std::size_t>(o.work.stage)]));
    if (o.kind == OpKind::backward || o.kind == OpKind::backward_input || o.kind == OpKind::forward_backward) {
      const StageWork& w = o.kind == OpKind::forward_backward ? o.other : o.work;
      out_.graph.set_memory_delta(t.backward_out, -static_cast<std::int64_t>(activation_bytes[static_cast<std::size_t>(w.stage)]));
    }
    return t;
  }

  std::optional<std::pair<sim::TaskId, sim::TaskId>> add_send(std::int64_t from, std::int64_t, StageWork w, bool forward) override {
    const StageCost& c = costs_.stages[static_cast<std::size_t>(w.stage)];
    if (c.p2p <= 0 || c.p2p_in_passes) return std::nullopt;  // blocking sends sit inside the ops
    const double seconds = c.p2p;
    sim::TaskId t = comm_task(from, streams[static_cast<std::size_t>(from)].p2p,
                              fmt::format("send {}{} s{}", forward ? "F" : "B", w.mb, w.stage), seconds, CommKind::pp);
    return std::pair{t, t};
  }

  sim::TaskId comm_task(std::int64_t rank, sim::StreamId stream, const std::string& label, double seconds, CommKind kind) {
    sim::TaskId t = out_.graph.add_compute(label, stream, ticks(seconds), costs_.comm_sms);
    note(rank, static_cast<std::int8_t>(kind));
    return t;
  }
  sim::TaskId compute_task(std::int64_t rank, const std::string& label, double seconds) {
    sim::TaskId t = out_.graph.add_compute(label, streams[static_cast<std::size_t>(rank)].compute, ticks(seconds));
    note(rank, -1);
    return t;
  }
  sim::TaskId marker(std::int64_t rank, const std::string& label) {
    sim::TaskId t = out_.graph.add_marker(label);
    note(rank, -1);
    return t;
  }

  std::vector<RankStreams> streams;
  std::vector<double> activation_bytes;
  std::map<std::pair<std::int64_t, std::int64_t>, sim::TaskId> first_gather;  // (rank, stage) → its first bucket

 private:
  // Per task, in creation order: which rank it runs on and what kind of communication it is.
  void note(std::int64_t rank, std::int8_t kind) {
    out_.task_comm.push_back(kind);
    out_.task_rank.push_back(static_cast<std::int32_t>(rank));
  }

  // Expands one or two passes (two: DualPipe's F&B) into tasks. Segments are created in the order
  // (position, pass) on the rank's one compute and one communication stream: each pass's
  // communication hides under the other's compute, and the order can never deadlock. Returns each
  // pass's (entry, exit). `gather_stage` ≥ 0: the first forward of that stage on this rank waits for
  // its parameter gather.
  std::vector<std::pair<sim::TaskId, sim::TaskId>> chain(std::int64_t rank, const std::vector<std::pair<const Pass*, std::string>>& passes,
                                                         std::int64_t gather_stage) {
    const RankStreams& st = streams[static_cast<std::size_t>(rank)];
    std::vector<sim::TaskId> entry, last;
    std::vector<std::pair<sim::TaskId, sim::TaskId>> ends;
    for (const auto& [pass, label] : passes) {
      sim::TaskId in = marker(rank, label + " start");
      entry.push_back(in);
      last.push_back(in);
    }
    if (gather_stage >= 0) {
      auto g = first_gather.find({rank, gather_stage});
      if (g != first_gather.end()) {
        out_.graph.add_dependency(g->second, entry[0]);
        first_gather.erase(g);  // only the stage's first forward waits
      }
    }
    std::vector<sim::TaskId> background(passes.size(), sim::kNoTask);
    for (std::size_t p = 0; p < passes.size(); ++p)
      if (passes[p].first->background > 0) {
        background[p] = comm_task(rank, st.dp, passes[p].second + " ZeRO-3 gather/scatter", passes[p].first->background, CommKind::dp);
        out_.graph.add_dependency(entry[p], background[p]);
      }
    std::size_t n = 0;
    for (const auto& pp : passes) n = std::max(n, pp.first->segments.size());
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t p = 0; p < passes.size(); ++p) {
        const auto& segs = passes[p].first->segments;
        if (i >= segs.size()) continue;
        const Segment& g = segs[i];
        sim::TaskId before = last[p];
        sim::TaskId compute = sim::kNoTask, comm = sim::kNoTask;
        if (g.compute > 0) {
          compute = compute_task(rank, passes[p].second, g.compute);
          out_.graph.add_dependency(before, compute);
        }
        if (g.comm > 0) {
          comm = comm_task(rank, st.comm, fmt::format("{} {}", comm_kind_name(g.kind), passes[p].second), g.comm, g.kind);
          out_.graph.add_dependency(g.overlapped || compute == sim::kNoTask ? before : compute, comm);
        }
        if (g.overlapped && compute != sim::kNoTask && comm != sim::kNoTask) {
          sim::TaskId join = marker(rank, passes[p].second);
          out_.graph.add_dependency(compute, join);
          out_.graph.add_dependency(comm, join);
          last[p] = join;
        } else {
          last[p] = comm != sim::kNoTask ? comm : compute != sim::kNoTask ? compute : before;
        }
      }
    for (std::size_t p = 0; p < passes.size(); ++p) {
      sim::TaskId out = last[p];
      if (background[p] != sim::kNoTask) {
        out = marker(rank, passes[p].second + " end");
        out_.graph.add_dependency(last[p], out);
        out_.graph.add_dependency(background[p], out);
      }
      ends.emplace_back(entry[p], out);
    }
    return ends;
  }

  const Job& job_;
  const StepCosts& costs_;
  StepSimulation& out_;
};

// Where each rank's time went, from its tasks' intervals: computing; else communicating (exposed,
// shared equally among the kinds running at that instant); else idle.
void account(StepSimulation& s, std::size_t ranks) {
  struct Edge {
    sim::Time at;
    int delta;
    std::int8_t kind;  // −1 compute
  };
  std::vector<std::vector<Edge>> edges(ranks);
  for (std::size_t t = 0; t < s.task_comm.size(); ++t) {
    if (s.graph.kind(static_cast<sim::TaskId>(t)) == sim::TaskKind::marker) continue;
    sim::Time a = s.result.start[t], b = s.result.end[t];
    if (b <= a) continue;
    auto& e = edges[static_cast<std::size_t>(s.task_rank[t])];
    e.push_back({a, +1, s.task_comm[t]});
    e.push_back({b, -1, s.task_comm[t]});
  }
  for (std::size_t r = 0; r < ranks; ++r) {
    auto& e = edges[r];
    std::sort(e.begin(), e.end(), [](const Edge& x, const Edge& y) { return x.at < y.at; });
    std::array<int, kCommKinds + 1> active{};  // [0] compute, [1 + kind] communication
    RankStep& out = s.ranks[r];
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
    out.bubble_fraction = s.step_time > 0 ? out.idle / s.step_time : 0;
  }
}

}  // namespace

StepSimulation simulate_step(const Job& job, const StepCosts& costs) {
  StepSimulation out;
  const ParallelLayout& p = job.layout;
  out.schedule = make_schedule(p.schedule, p.pp, job.microbatches(), p.vp);
  if (p.schedule == ScheduleKind::zb_h1 || p.schedule == ScheduleKind::zb_h2 || p.schedule == ScheduleKind::zb_v) {
    // Zero-bubble schedules are ordered for the job's own op times (the slowest stage's).
    ZeroBubbleSettings z{0, 0, 0, 0, {}};
    for (const StageCost& c : costs.stages) {
      z.f = std::max(z.f, c.forward.span());
      z.b = std::max(z.b, c.input_grad.span());
      z.w = std::max(z.w, c.weight_grad.span());
      z.comm = std::max(z.comm, c.p2p);
    }
    try {
      PipelineSchedule tuned = out.schedule;
      zero_bubble(tuned, z);
      out.schedule = std::move(tuned);
    } catch (const ScheduleError&) {
      // The greedy heuristic can stall under the memory limits with very unequal times (ZB-V); the
      // equal-time schedule then stands.
    }
  }
  const PipelineSchedule& s = out.schedule;
  StepOps ops(job, costs, out);
  ops.add_param_gathers(s);
  PipelineTasks tasks = build_pipeline_graph(s, out.graph, ops);
  // Per rank, the gradient reduction of each stage it holds, issued in the order the rank finishes
  // the stages' weight gradients; then the optimizer once all of them are done.
  for (std::int64_t r = 0; r < s.ranks; ++r) {
    std::vector<std::pair<std::size_t, std::int32_t>> finish;  // (index of the rank's last W op of the stage, stage)
    const auto& list = s.ops[static_cast<std::size_t>(r)];
    for (std::int64_t st : stages_of_rank(s.kind, r, p.pp, p.vp)) {
      std::size_t last = 0;
      for (std::size_t i = 0; i < list.size(); ++i) {
        const PipeOp& o = list[i];
        bool weights = (o.kind == OpKind::backward || o.kind == OpKind::weight) ? o.work.stage == st
                       : o.kind == OpKind::forward_backward                      ? o.other.stage == st
                                                                                 : false;
        if (weights) last = i;
      }
      finish.emplace_back(last, static_cast<std::int32_t>(st));
    }
    std::sort(finish.begin(), finish.end());
    double optimizer_seconds = 0;
    std::vector<sim::TaskId> syncs;
    for (const auto& [index, st] : finish) {
      const StageCost& c = costs.stages[static_cast<std::size_t>(st)];
      optimizer_seconds += c.optimizer;
      if (c.grad_sync <= 0) continue;
      sim::TaskId sync = ops.comm_task(r, ops.streams[static_cast<std::size_t>(r)].dp, fmt::format("grad reduce s{}", st),
                                       c.grad_sync, CommKind::dp);
      // A stage's gradients are complete when every micro-batch's W is (on both mirror ranks for DualPipe).
      for (std::int32_t mb = 0; mb < s.microbatches; ++mb) out.graph.add_dependency(tasks.weight_grad(mb, st), sync);
      syncs.push_back(sync);
    }
    sim::TaskId optimizer = ops.compute_task(r, "optimizer", optimizer_seconds);
    for (sim::TaskId sync : syncs) out.graph.add_dependency(sync, optimizer);
    for (const auto& [index, st] : finish)
      for (std::int32_t mb = 0; mb < s.microbatches; ++mb)
        if (s.rank_of(st, mb) == r) out.graph.add_dependency(tasks.weight_grad(mb, st), optimizer);
  }
  out.graph.finalize();
  try {
    out.result = sim::simulate(out.graph, out.machine);
  } catch (const sim::DeadlockError& e) {
    throw ScheduleError(fmt::format("the {} step cannot run: {}", schedule_name(s.kind), e.what()));
  }
  out.step_time = seconds_of(out.result.makespan);
  out.ranks.resize(static_cast<std::size_t>(s.ranks));
  account(out, static_cast<std::size_t>(s.ranks));
  const MemoryPlan plan = plan_memory(job);
  std::vector<std::int64_t> inflight = peak_activations(s);
  for (std::size_t r = 0; r < out.ranks.size(); ++r) {
    const RankMemory& m = plan.ranks[r];
    out.ranks[r].peak_bytes = m.total_bytes() - m.activations_bytes + static_cast<double>(out.result.peak_memory[r]);
    out.ranks[r].peak_inflight = inflight[r];
  }
  return out;
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
    std::int32_t rank = s.task_rank[path[i]];
    std::array<double, kCommKinds> comm{};
    double compute = 0;
    sim::Time from = s.result.start[path[i]], to = from;
    std::string first = s.graph.label(path[i]), last = first;
    for (; i < path.size() && s.task_rank[path[i]] == rank; ++i) {
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
    lines.push_back(fmt::format("pp rank {:>2}  {:>9.2f} → {:>9.2f} ms  {} … {}: compute {:.2f} ms{}", rank, seconds_of(from) * 1e3,
                                seconds_of(to) * 1e3, first, last, compute * 1e3, kinds));
  }
  return lines;
}

}  // namespace plumb
