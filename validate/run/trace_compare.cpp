#include "validate/run/trace_compare.hpp"

#include <fmt/format.h>
#include <map>

#include "models/costs/op_cost.hpp"
#include "models/costs/step_costs.hpp"
#include "models/input/diagnostics.hpp"
#include "models/memory/memory.hpp"
#include "models/step/step_builder.hpp"
#include "sim/intervals.hpp"
#include "validate/run/trace_collectives.hpp"

namespace plumb {

StagePrediction predict_stage(const Job& job_in, std::int64_t stage) {
  // A trace holds one rank's kernels at its own chip's pace: priced at the profile's typical chip, not
  // at the job's slowest (GpuSpec::slowest_chip_scale), as plumb calibrate --trace fits them.
  Job job = job_in;
  job.cluster.gpu.slowest_chip_scale = 1.0;
  const std::vector<StagePlan> plans = stage_plans(job.layout, job.model.mtp_depth);
  if (stage < 0 || stage >= static_cast<std::int64_t>(plans.size()) || plans[static_cast<std::size_t>(stage)].layers < 1)
    throw InputError({Diagnostic{"--stage", "", fmt::format("stage {} is not one of the {} stages of {} that hold transformer layers", stage,
                                                            plans.size(), job.name)}});
  const StagePlan& plan = plans[static_cast<std::size_t>(stage)];
  StagePrediction p;
  p.layers = plan.layers;
  // Every op of the stage's layers, each pass, and the forward again where recomputed.
  const OpContext context = op_context(job.layout, job.training, job.cluster.gpu);
  const Recompute& r = job.layout.recompute;
  for (std::int64_t layer = plan.first_layer; layer < plan.first_layer + plan.layers; ++layer)
    for (const LayerOp& op : layer_ops(job.model, layer, context)) {
      double pass_time[3];
      for (int pass = 0; pass < 3; ++pass) pass_time[pass] = op_time(op, pass, job.cluster.gpu, job.training).seconds;
      const double again = r.full ? pass_time[0] : recompute_seconds(op, r, job.model.attention, true, job.cluster.gpu, job.training);
      const double all = pass_time[0] + pass_time[1] + pass_time[2] + again;
      if (op.cls == OpClass::gemm) p.gemm += all;
      else if (op.cls == OpClass::attention) {
        p.attention_forward += pass_time[0] + again;
        p.attention_backward += pass_time[1] + pass_time[2];
      } else {
        p.memory += all;
      }
    }
  const StepCosts costs = step_costs(job);
  const StageCost& s = costs.stages[static_cast<std::size_t>(stage)];
  for (CommKind k : {CommKind::tp, CommKind::ep, CommKind::cp}) p.communication += s.forward.comm(k) + s.backward.comm(k);
  p.pair = s.fb_overlap > 0;
  p.host_wait = s.forward.host_wait + s.backward.host_wait;
  p.span = p.pair ? s.fb_overlap : s.forward.span() + s.backward.span();
  return p;
}

namespace {

// The simulated step's first op of the stage that is an F&B pair, else its first forward and backward:
// (rank, op) pairs.
std::vector<std::pair<std::size_t, std::size_t>> stage_ops(const StepSimulation& sim, std::int64_t stage) {
  std::vector<std::pair<std::size_t, std::size_t>> chosen;
  for (std::size_t r = 0; r < sim.schedule.ops.size() && chosen.empty(); ++r)
    for (std::size_t i = 0; i < sim.schedule.ops[r].size(); ++i)
      if (sim.schedule.ops[r][i].kind == OpKind::forward_backward && sim.schedule.ops[r][i].work.stage == stage) {
        chosen.emplace_back(r, i);
        break;
      }
  for (std::size_t r = 0; r < sim.schedule.ops.size() && chosen.empty(); ++r) {
    std::optional<std::size_t> f, b;
    for (std::size_t i = 0; i < sim.schedule.ops[r].size(); ++i) {
      const PipeOp& op = sim.schedule.ops[r][i];
      if (op.work.stage != stage) continue;
      if (op.kind == OpKind::forward && !f) f = i;
      if ((op.kind == OpKind::backward || op.kind == OpKind::backward_input) && !b) b = i;
    }
    if (f && b) chosen = {{r, *f}, {r, *b}};
  }
  return chosen;
}

}  // namespace

StreamPrediction predict_streams(const Job& job, std::int64_t stage) {
  const StepSimulation sim = simulate_step(job, step_costs(job));
  std::vector<sim::Interval> compute, communication;
  double first = 0, last = 0;
  bool any = false;
  for (const auto& [r, i] : stage_ops(sim, stage))
    for (sim::TaskId t = sim.op_tasks[r][i].first; t < sim.op_tasks[r][i].second; ++t) {
      if (sim.graph.kind(t) == sim::TaskKind::marker) continue;
      const double start = sim::to_seconds(sim.result.start[t]), end = sim::to_seconds(sim.result.end[t]);
      const bool on_compute = sim.machine.streams()[static_cast<std::size_t>(sim.graph.stream(t))].name == "compute";
      (on_compute ? compute : communication).emplace_back(start, end);
      first = any ? std::min(first, start) : start;
      last = any ? std::max(last, end) : end;
      any = true;
    }
  const std::vector<sim::Interval> c = sim::merged_intervals(compute), m = sim::merged_intervals(communication);
  return {sim::total_length(c), sim::total_length(m), sim::overlap_length(c, m), last - first};
}

TraceComparison compare_trace(const Job& job, const TraceSummary& trace, std::int64_t stage) {
  const StagePrediction p = predict_stage(job, stage);
  TraceComparison c;
  c.scenario = job.name;
  c.trace = trace.file;
  c.device = trace.device_name;
  c.stage = stage;
  c.layers = p.layers;
  c.pair = p.pair;
  c.predicted_span = p.span;
  c.measured_span = trace.span_us * 1e-6;
  const std::map<std::string, double> predicted = {
      {"gemm", p.gemm}, {"attention", p.attention_forward + p.attention_backward}, {"memory", p.memory}, {"communication", p.communication}};
  for (const char* op : {"gemm", "attention", "memory", "communication"}) {
    auto m = trace.by_plumb_op.find(op);
    c.classes.push_back({op, m == trace.by_plumb_op.end() ? 0.0 : m->second * 1e-6, predicted.at(op)});
  }
  c.unknown = trace.unknown_time_us * 1e-6;
  const StreamPrediction sp = predict_streams(job, stage);
  const double us = 1e-6;
  c.streams = {{"compute busy", trace.compute_busy_us * us, sp.compute_busy},
               {"compute idle", (trace.span_us - trace.compute_busy_us) * us, sp.span - sp.compute_busy},
               {"communication busy", trace.communication_busy_us * us, sp.communication_busy},
               {"communication under compute", trace.overlap_us * us, sp.overlap},
               {"communication exposed", trace.exposed_communication_us() * us, sp.communication_busy - sp.overlap}};
  // plumb's GPU waits on the host only under the framework's training.host_overhead.
  if (trace.launches_known > 0) c.streams.push_back({"compute waiting on the host", trace.host_wait_us * us, p.host_wait});
  const CollectiveLinks links = CollectiveLinks::of(job.cluster.gpu, job.cluster.fabric);
  const TraceCollectiveLogs logs = collective_logs_from_trace(trace, job.cluster.fabric.gpus_per_node);
  for (const TraceCollectiveRow& row : logs.rows)
    c.collectives.push_back({std::string(collective_op_name(row.op)), row.ranks, row.nodes, row.bytes, row.fastest_s,
                             collective_cost(row.op, row.bytes, GroupPlacement{row.ranks, row.nodes}, links).seconds});
  return c;
}

Json side_by_side_timeline(const Job& job, const GpuTrace& trace, KernelClassifier& classes, std::int64_t stage) {
  Json events = Json::array();
  auto name_process = [&](int pid, const std::string& name) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", name}}}});
  };
  auto name_thread = [&](int pid, std::int64_t tid, const std::string& name) {
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
  };
  // Measured: the trace's GPU events from its first.
  name_process(1, fmt::format("measured: {}", trace.file));
  double first = 0;
  if (!trace.events.empty()) {
    first = trace.events.front().start_us;
    for (const GpuEvent& e : trace.events) first = std::min(first, e.start_us);
  }
  std::map<std::int32_t, bool> streams;
  for (const GpuEvent& e : trace.events) {
    const std::optional<std::size_t> c = classes.classify(trace.names[e.name]);
    const std::string label = c ? classes.classes()[*c].name : "unknown";
    events.push_back({{"ph", "X"}, {"pid", 1}, {"tid", e.stream}, {"ts", e.start_us - first}, {"dur", e.duration_us}, {"name", label},
                      {"args", {{"kernel", trace.names[e.name]}}}});
    streams[e.stream] = true;
  }
  for (const auto& [stream, _] : streams) name_thread(1, stream, fmt::format("stream {}", stream));
  // Predicted: the simulated step's first op of the stage that is an F&B pair (else its forward and backward).
  const StepCosts costs = step_costs(job);
  const StepSimulation sim = simulate_step(job, costs);
  name_process(2, fmt::format("predicted: plumb, stage {} of {}", stage, job.name));
  const std::vector<std::pair<std::size_t, std::size_t>> chosen = stage_ops(sim, stage);
  sim::Time origin = sim::kNever;
  for (const auto& [r, i] : chosen)
    for (sim::TaskId t = sim.op_tasks[r][i].first; t < sim.op_tasks[r][i].second; ++t) origin = std::min(origin, sim.result.start[t]);
  std::map<sim::StreamId, bool> used;
  for (const auto& [r, i] : chosen)
    for (sim::TaskId t = sim.op_tasks[r][i].first; t < sim.op_tasks[r][i].second; ++t) {
      if (sim.graph.kind(t) == sim::TaskKind::marker) continue;
      const sim::StreamId s = sim.graph.stream(t);
      events.push_back({{"ph", "X"}, {"pid", 2}, {"tid", s}, {"ts", sim::to_micros(sim.result.start[t] - origin)},
                        {"dur", sim::to_micros(sim.result.end[t] - sim.result.start[t])}, {"name", sim.graph.label(t)}});
      used[s] = true;
    }
  for (const auto& [s, _] : used) name_thread(2, s, sim.machine.streams()[static_cast<std::size_t>(s)].name);
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace plumb
