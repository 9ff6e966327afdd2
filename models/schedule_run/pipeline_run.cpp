#include "models/schedule_run/pipeline_run.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "models/schedules/registry.hpp"

namespace plumb {

namespace {

std::string describe(OpKind kind, StageWork w) {
  return fmt::format("{} of micro-batch {} on stage {}", op_kind_symbol(kind), w.mb, w.stage);
}

// Per (micro-batch, stage), who ran its forward, its input gradient and its weight gradient: the rank
// (while checking a schedule) or the op's tasks (while building its graph).
template <class T>
struct Slots {
  std::int64_t stages = 0;
  std::vector<T> forward, input_grad, weight_grad;
  Slots(const PipelineSchedule& s, T none)
      : stages(s.stages),
        forward(static_cast<std::size_t>(s.stages * s.microbatches), none),
        input_grad(forward.size(), none),
        weight_grad(forward.size(), none) {}
  std::size_t at(StageWork w) const { return static_cast<std::size_t>(w.mb) * static_cast<std::size_t>(stages) + static_cast<std::size_t>(w.stage); }
};

// One part of an op in the graph: the task taking its input, the task delivering its result, and
// which op it was (so that the two halves of one full backward are never made to wait on each other).
struct Ends {
  sim::TaskId in = sim::kNoTask, out = sim::kNoTask;
  std::int64_t op = -1;
};

}  // namespace

double OpCosts::of(OpKind kind, std::int32_t stage) const {
  const StageCosts& c = per_stage.empty() ? static_cast<const StageCosts&>(*this) : per_stage[static_cast<std::size_t>(stage)];
  switch (kind) {
    case OpKind::forward: return c.f;
    case OpKind::backward: return c.b;
    case OpKind::backward_input: return c.b - c.w;
    case OpKind::weight: return c.w;
    case OpKind::forward_backward: return c.fb;
  }
  return 0;
}

std::vector<std::int64_t> peak_activations(const PipelineSchedule& s) {
  std::vector<std::int64_t> peaks;
  for (const auto& ops : s.ops) {
    std::int64_t alive = 0, peak = 0;
    for (const PipeOp& o : ops) {
      if (o.kind == OpKind::forward || o.kind == OpKind::forward_backward) peak = std::max(peak, ++alive);
      if (o.kind == OpKind::backward || o.kind == OpKind::backward_input || o.kind == OpKind::forward_backward) --alive;
    }
    peaks.push_back(peak);
  }
  return peaks;
}

std::vector<std::string> check_schedule(const PipelineSchedule& s) {
  std::vector<std::string> problems;
  Slots<std::int64_t> slots(s, -1);
  auto claim = [&](std::vector<std::int64_t>& slot, OpKind kind, StageWork w, std::int64_t rank) {
    if (w.mb < 0 || w.mb >= s.microbatches || w.stage < 0 || w.stage >= s.stages) {
      problems.push_back(fmt::format("rank {}: {} is outside {} micro-batches × {} stages", rank, describe(kind, w),
                                     s.microbatches, s.stages));
      return;
    }
    if (s.rank_of(w) != rank)
      problems.push_back(fmt::format("rank {} runs {}, which belongs to rank {}", rank, describe(kind, w),
                                     s.rank_of(w)));
    if (slot[slots.at(w)] >= 0) problems.push_back(fmt::format("{} appears twice", describe(kind, w)));
    slot[slots.at(w)] = rank;
  };
  for (std::int64_t r = 0; r < s.ranks; ++r) {
    for (const PipeOp& o : s.ops[static_cast<std::size_t>(r)]) {
      switch (o.kind) {
        case OpKind::forward: claim(slots.forward, o.kind, o.work, r); break;
        case OpKind::backward:
          claim(slots.input_grad, o.kind, o.work, r);
          claim(slots.weight_grad, o.kind, o.work, r);
          break;
        case OpKind::backward_input: claim(slots.input_grad, o.kind, o.work, r); break;
        case OpKind::weight: claim(slots.weight_grad, o.kind, o.work, r); break;
        case OpKind::forward_backward:
          claim(slots.forward, OpKind::forward, o.work, r);
          claim(slots.input_grad, OpKind::backward, o.other, r);
          claim(slots.weight_grad, OpKind::backward, o.other, r);
          break;
      }
    }
  }
  for (std::int32_t mb = 0; mb < s.microbatches; ++mb)
    for (std::int32_t st = 0; st < s.stages; ++st) {
      std::size_t i = slots.at({mb, st});
      if (slots.forward[i] < 0) problems.push_back(fmt::format("no F of micro-batch {} on stage {}", mb, st));
      if (slots.input_grad[i] < 0) problems.push_back(fmt::format("no B of micro-batch {} on stage {}", mb, st));
      if (slots.weight_grad[i] < 0) problems.push_back(fmt::format("no W of micro-batch {} on stage {}", mb, st));
    }
  if (!problems.empty()) return problems;
  // Order and deadlock: run the schedule with unit costs; the engine names what waits for what.
  try {
    OpCosts unit;
    unit.w = 1;
    run_schedule(s, unit);
  } catch (const ScheduleError& e) {
    problems.push_back(e.what());
  }
  return problems;
}

PipelineTasks build_pipeline_graph(const PipelineSchedule& s, sim::TaskGraph& g, PipelineHooks& hooks) {
  Slots<Ends> slots(s, Ends{});
  std::int64_t op_number = 0;
  // Ops are created rank by rank in op order, so each rank's streams run its list in order.
  for (std::int64_t r = 0; r < s.ranks; ++r)
    for (const PipeOp& o : s.ops[static_cast<std::size_t>(r)]) {
      OpTasks t = hooks.add_op(r, o);
      Ends fwd{t.forward_in, t.forward_out, op_number}, bwd{t.backward_in, t.backward_out, op_number};
      ++op_number;
      switch (o.kind) {
        case OpKind::forward: slots.forward[slots.at(o.work)] = fwd; break;
        case OpKind::backward: slots.input_grad[slots.at(o.work)] = slots.weight_grad[slots.at(o.work)] = bwd; break;
        case OpKind::backward_input: slots.input_grad[slots.at(o.work)] = bwd; break;
        case OpKind::weight: slots.weight_grad[slots.at(o.work)] = bwd; break;
        case OpKind::forward_backward:
          slots.forward[slots.at(o.work)] = fwd;
          slots.input_grad[slots.at(o.other)] = slots.weight_grad[slots.at(o.other)] = bwd;
          break;
      }
    }
  auto depend = [&](const Ends& before, const Ends& after) {
    if (before.op != after.op) g.add_dependency(before.out, after.in);
  };
  // Stage edges: within a rank plain dependencies; across ranks the hooks' send sits between
  // producer and consumer, posted in the order the sender runs its ops.
  auto link = [&](const Ends& from, const Ends& to, std::int64_t from_rank, std::int64_t to_rank, StageWork w, bool forward) {
    auto send = from_rank == to_rank ? std::nullopt : hooks.add_send(from_rank, to_rank, w, forward);
    if (!send) return depend(from, to);
    g.add_dependency(from.out, send->first);
    g.add_dependency(send->second, to.in);
  };
  auto outputs = [&](std::int64_t rank, OpKind kind, StageWork w) {
    std::size_t i = slots.at(w);
    if (kind == OpKind::forward && w.stage + 1 < s.stages) {
      StageWork next{w.mb, w.stage + 1};
      link(slots.forward[i], slots.forward[slots.at(next)], rank, s.rank_of(next), w, true);
    }
    if ((kind == OpKind::backward || kind == OpKind::backward_input) && w.stage > 0) {
      StageWork prev{w.mb, w.stage - 1};
      link(slots.input_grad[i], slots.input_grad[slots.at(prev)], rank, s.rank_of(prev), w, false);
    }
  };
  for (std::int64_t r = 0; r < s.ranks; ++r)
    for (const PipeOp& o : s.ops[static_cast<std::size_t>(r)]) {
      outputs(r, o.kind == OpKind::forward_backward ? OpKind::forward : o.kind, o.work);
      if (o.kind == OpKind::forward_backward) outputs(r, OpKind::backward, o.other);
    }
  // Within a stage: F before its input gradient, the input gradient before W.
  PipelineTasks out;
  out.stages = s.stages;
  for (std::int32_t mb = 0; mb < s.microbatches; ++mb)
    for (std::int32_t st = 0; st < s.stages; ++st) {
      std::size_t i = slots.at({mb, st});
      depend(slots.forward[i], slots.input_grad[i]);
      depend(slots.input_grad[i], slots.weight_grad[i]);
    }
  for (const Ends& e : slots.weight_grad) out.weight_grad_out.push_back(e.out);
  return out;
}

namespace {

// run_schedule's expansion: one compute task per op on the rank's compute stream, one task per send.
class UnitOps final : public PipelineHooks {
 public:
  UnitOps(const PipelineSchedule& s, const OpCosts& costs, ScheduleRun& run)
      : costs_(costs), run_(run), op_index_(static_cast<std::size_t>(s.ranks), 0) {
    for (std::int64_t r = 0; r < s.ranks; ++r) {
      std::int32_t gpu = run.machine.add_gpu(fmt::format("rank {}", r), 1);
      compute.push_back(run.machine.add_stream(gpu, "compute"));
      links.push_back(run.machine.add_stream(gpu, "p2p"));
    }
  }
  OpTasks add_op(std::int64_t rank, const PipeOp& o) override {
    std::string label = o.kind == OpKind::forward_backward ? fmt::format("F{}&B{}", o.work.mb, o.other.mb)
                                                           : fmt::format("{}{}", op_kind_symbol(o.kind), o.work.mb);
    sim::TaskId t = run_.graph.add_compute(label, compute[static_cast<std::size_t>(rank)], ticks(costs_.of(o.kind, o.work.stage)), 1);
    run_.task_op.emplace_back(rank, op_index_[static_cast<std::size_t>(rank)]++);
    return {t, t, t, t};
  }
  std::optional<std::pair<sim::TaskId, sim::TaskId>> add_send(std::int64_t from, std::int64_t, StageWork, bool) override {
    if (costs_.p2p <= 0) return std::nullopt;
    sim::TaskId send = run_.graph.add_compute("p2p", links[static_cast<std::size_t>(from)], ticks(costs_.p2p), 1);
    run_.task_op.emplace_back(-1, 0);
    return std::pair{send, send};
  }
  static sim::Time ticks(double units) {
    sim::check_duration(units * kPicosPerCostUnit * sim::kSecondsPerPico, "an op");
    return static_cast<sim::Time>(std::llround(units * kPicosPerCostUnit));
  }

  std::vector<sim::StreamId> compute, links;

 private:
  const OpCosts& costs_;
  ScheduleRun& run_;
  std::vector<std::size_t> op_index_;  // per rank, its next op
};

}  // namespace

ScheduleRun run_schedule(const PipelineSchedule& s, const OpCosts& costs) {
  if (!costs.per_stage.empty() && static_cast<std::int64_t>(costs.per_stage.size()) != s.stages)
    throw ScheduleError(fmt::format("costs given for {} stages, but the schedule has {}", costs.per_stage.size(), s.stages));
  ScheduleRun run;
  sim::TaskGraph& g = run.graph;
  UnitOps hooks(s, costs, run);
  PipelineTasks tasks = build_pipeline_graph(s, g, hooks);
  // DualPipe: each stage lives on two mirror ranks; their gradients are summed once both are done.
  if (s.layout == StageLayout::mirrored && costs.grad_sync > 0) {
    for (std::int64_t r = 0; r < s.ranks; ++r)
      for (std::int32_t st : {static_cast<std::int32_t>(r), static_cast<std::int32_t>(s.ranks - 1 - r)}) {
        sim::TaskId sync = g.add_compute(fmt::format("grad sync s{}", st), hooks.links[static_cast<std::size_t>(r)],
                                         UnitOps::ticks(costs.grad_sync), 1);
        run.task_op.emplace_back(-1, 0);
        for (std::int32_t mb = 0; mb < s.microbatches; ++mb) g.add_dependency(tasks.weight_grad(stage_work(mb, st)), sync);
      }
  }
  const std::vector<sim::StreamId>& compute = hooks.compute;
  g.finalize();
  try {
    run.result = sim::simulate(g, run.machine);
  } catch (const sim::DeadlockError& e) {
    throw ScheduleError(fmt::format("the {} schedule cannot run: {}", schedule_name(s.kind), e.what()));
  }
  run.makespan = static_cast<double>(run.result.makespan) / kPicosPerCostUnit;
  std::vector<sim::Time> first(static_cast<std::size_t>(s.ranks), sim::kNever), last(static_cast<std::size_t>(s.ranks), 0);
  for (std::size_t t = 0; t < run.task_op.size(); ++t) {
    std::int64_t r = run.task_op[t].first;
    if (r < 0) continue;
    first[static_cast<std::size_t>(r)] = std::min(first[static_cast<std::size_t>(r)], run.result.start[t]);
    last[static_cast<std::size_t>(r)] = std::max(last[static_cast<std::size_t>(r)], run.result.end[t]);
  }
  std::vector<std::int64_t> peaks = peak_activations(s);
  for (std::int64_t r = 0; r < s.ranks; ++r) {
    std::size_t ri = static_cast<std::size_t>(r);
    RankTiming t;
    t.busy = static_cast<double>(run.result.stream_busy[static_cast<std::size_t>(compute[ri])]) / kPicosPerCostUnit;
    t.bubble = run.makespan - t.busy;
    t.bubble_fraction = run.makespan > 0 ? t.bubble / run.makespan : 0;
    t.span = first[ri] == sim::kNever ? 0.0 : static_cast<double>(last[ri] - first[ri]) / kPicosPerCostUnit;
    t.span_bubble = t.span - t.busy;
    t.peak_activations = peaks[ri];
    run.ranks.push_back(t);
  }
  return run;
}

double ScheduleRun::max_bubble() const {
  double worst = 0;
  for (const RankTiming& t : ranks) worst = std::max(worst, t.bubble);
  return worst;
}

double ScheduleRun::longest_span_bubble() const {
  const RankTiming* longest = nullptr;
  for (const RankTiming& t : ranks)
    if (!longest || t.span > longest->span) longest = &t;
  return longest ? longest->span_bubble : 0.0;
}

std::vector<std::vector<PlacedOp>> placed_ops(const PipelineSchedule& s, const ScheduleRun& run) {
  std::vector<std::vector<PlacedOp>> rows(static_cast<std::size_t>(s.ranks));
  for (std::size_t t = 0; t < run.task_op.size(); ++t) {
    auto [rank, index] = run.task_op[t];
    if (rank < 0) continue;
    rows[static_cast<std::size_t>(rank)].push_back({&s.ops[static_cast<std::size_t>(rank)][index],
                                                    static_cast<double>(run.result.start[t]) / kPicosPerCostUnit,
                                                    static_cast<double>(run.result.end[t]) / kPicosPerCostUnit});
  }
  return rows;
}

}  // namespace plumb
