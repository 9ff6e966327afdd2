#include "validate/run/compare.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <tuple>

#include "models/input/catalogue.hpp"
#include "sim/intervals.hpp"
#include "models/input/diagnostics.hpp"
#include "models/costs/op_cost.hpp"
#include "models/step/step_builder.hpp"
#include "models/costs/step_costs.hpp"
#include "models/schedules/registry.hpp"
#include "validate/calibrate/device_profile.hpp"

namespace plumb {
namespace {


// Per rank: the seconds it ran ops (overlaps on a rank counted once).
std::vector<double> busy_per_rank(std::size_t ranks, const std::vector<MeasuredOp>& ops) {
  std::vector<std::vector<std::pair<double, double>>> by_rank(ranks);
  for (const MeasuredOp& op : ops) by_rank[static_cast<std::size_t>(op.rank)].push_back({op.start, op.end});
  std::vector<double> busy(ranks, 0.0);
  for (std::size_t r = 0; r < ranks; ++r)
    busy[r] = sim::total_length(sim::merged_intervals(std::move(by_rank[r])));
  return busy;
}

// The scenario a measured run names, as written (from the current folder), else under plumb's data
// folder: plumb-validate runs in a checkout's root, so its files name "scenarios/x.json".
std::filesystem::path scenario_path(const std::string& scenario) {
  std::filesystem::path p(scenario);
  if (p.is_relative() && !path_exists(p) && path_exists(data_dir() / p)) return data_dir() / p;
  return p;
}

// A measured run must be of this plan: its ranks within the plan's and its ops the plan's (a file
// measured from another scenario would otherwise be compared op by nameless op).
void check_measured_matches(const MeasuredFile& m, const std::string& scenario, std::size_t ranks,
                            const std::map<std::string, std::size_t>& ops) {
  Diagnostics d;
  SourceFile src{m.file.empty() ? std::string("the measured run") : m.file, {}, &d, {}};
  for (const MeasuredOp& op : m.run.timeline)
    if (op.rank < 0 || static_cast<std::size_t>(op.rank) >= ranks) {
      src.error("/timeline", fmt::format("rank {} is not one of the {} ranks {} shrinks to: was the run measured from "
                                         "another scenario or other --set options?", op.rank, ranks, scenario));
      d.throw_if_any();
    }
  std::size_t unknown = 0;
  for (const MeasuredOpTime& t : m.run.op_times) unknown += !ops.count(t.op);
  if (!m.run.op_times.empty() && 2 * unknown > m.run.op_times.size())
    src.error("/ops", fmt::format("{} of its {} op timings name ops {} does not have: it was measured from another scenario "
                                  "(the file names {})", unknown, m.run.op_times.size(), scenario, m.setup.scenario));
  d.throw_if_any();
}

// The shrunk job the file's "virtual" options describe; options it cannot be shrunk by are the
// measured file's fault, and the error names it.
VirtualRun virtual_run_of(const MeasuredFile& m, const Job& full) {
  try {
    return plan_virtual_run(full, m.setup.options);
  } catch (const std::invalid_argument& e) {
    throw InputError({Diagnostic{m.file, "/virtual", e.what()}});
  } catch (const InputError& e) {
    // plumb-validate run's flags are the file's "virtual" keys.
    static const std::map<std::string, std::string> keys = {{"--stages", "/virtual/stages"},
                                                            {"--layers-per-stage", "/virtual/layers_per_stage"},
                                                            {"--sms-per-stage", "/virtual/sms_per_stage"},
                                                            {"--layer-kind", "/virtual/layer_kind"},
                                                            {"/parallel/micro_batch", "/virtual/micro_batches"}};
    std::vector<Diagnostic> mine;
    for (const Diagnostic& diagnostic : e.diagnostics()) {
      auto key = keys.find(diagnostic.pointer);
      mine.push_back({m.file, key != keys.end() ? key->second : "/virtual", diagnostic.message});
    }
    throw InputError(mine);
  }
}

// Per rank, the ops' schedule indices in the order they started (ties in schedule order).
std::vector<std::vector<std::int32_t>> start_order(std::size_t ranks, std::vector<MeasuredOp> ops) {
  std::sort(ops.begin(), ops.end(), [](const MeasuredOp& a, const MeasuredOp& b) { return std::tie(a.start, a.index) < std::tie(b.start, b.index); });
  std::vector<std::vector<std::int32_t>> order(ranks);
  for (const MeasuredOp& op : ops) order[static_cast<std::size_t>(op.rank)].push_back(op.index);
  return order;
}

// Where the executed order of ops first departs from the simulated one, or "" where it never does.
std::string order_difference(const std::vector<std::vector<std::int32_t>>& measured, const std::vector<std::vector<std::int32_t>>& predicted) {
  for (std::size_t r = 0; r < measured.size(); ++r) {
    const auto& m = measured[r];
    const auto& p = predicted[r];
    for (std::size_t i = 0; i < std::max(m.size(), p.size()); ++i)
      if (i >= m.size() || i >= p.size() || m[i] != p[i])
        return fmt::format("rank {}, its op #{}: executed {}, simulated {}", r, i + 1, i < m.size() ? fmt::format("op {}", m[i]) : "none",
                           i < p.size() ? fmt::format("op {}", p[i]) : "none");
  }
  return "";
}

// Per op of the plan (VirtualRun::op_names), its model stage (the names say "stage 2 · …").
std::vector<std::size_t> stage_of_ops(const VirtualRun& run) {
  std::vector<std::size_t> stage(run.op_names.size(), 0);
  for (const auto* passes : {&run.forward, &run.backward, &run.input_grad, &run.weight_grad})
    for (std::size_t s = 0; s < passes->size(); ++s)
      for (const KernelStep& k : (*passes)[s]) stage[static_cast<std::size_t>(k.op)] = s;
  return stage;
}

// The step's costs with each model stage's compute scaled by its factor (its passes; pipeline sends,
// gradient reductions and the optimizer as priced).
StepCosts scaled_compute(StepCosts costs, const std::vector<double>& factor) {
  for (std::size_t s = 0; s < costs.stages.size(); ++s) {
    StageCost& stage = costs.stages[s];
    for (Pass* pass : {&stage.forward, &stage.input_grad, &stage.weight_grad, &stage.backward})
      for (Segment& segment : pass->segments) segment.compute *= factor[s];
    stage.fb_overlap *= factor[s];
  }
  return costs;
}

}  // namespace

Comparison compare_measured_run(const MeasuredFile& m, const std::optional<GpuSpec>& gpu, const std::string& scenario_in) {
  const std::string scenario = scenario_in.empty() ? m.setup.scenario : scenario_in;
  const std::filesystem::path path = scenario_path(scenario);
  if (scenario_in.empty() && !path_exists(path)) {
    Diagnostics d;
    SourceFile src{m.file, {}, &d, {}};
    src.error("/scenario", fmt::format("the scenario it was measured from, {}, is not here (nor under {}); give it: "
                                       "plumb compare SCENARIO MEASURED.json", scenario, data_dir().string()));
    d.throw_if_any();
  }
  Job full = load_scenario(path, m.setup.overrides);
  std::optional<GpuSpec> profile = gpu ? gpu : bundled_gpu_profile(m.setup.device);
  if (!profile) {
    Diagnostics d;
    SourceFile src{m.file, {}, &d, {}};
    src.error("/device", fmt::format("no bundled GPU profile matches \"{}\"; give --profile with a calibrated one", m.setup.device));
    d.throw_if_any();
  }
  full.cluster.gpu = *profile;
  VirtualRun run = virtual_run_of(m, full);
  const StepCosts costs = step_costs(run.job);
  StepSimulation sim = simulate_step(run.job, costs);

  Comparison c;
  const std::string ranks_on = m.setup.options.stage_per_profile
                                   ? fmt::format("{} ranks, a core each", run.job.layout.pp)
                                   : fmt::format("{} ranks × {} SMs", run.job.layout.pp, run.job.cluster.gpu.sms);
  c.title = fmt::format("{} · {}, {}{}, {} micro-batches, measured {}", run.job.name, schedule_name(run.job.layout.schedule), ranks_on,
                        run.job.layout.dp > 1 ? fmt::format(" × {} replicas", run.job.layout.dp) : "", run.job.microbatches(),
                        m.setup.date);
  c.profile = profile->id.empty() ? profile->name : profile->id;
  c.measured_step = m.run.median_step();
  c.predicted_step = sim.step_time;
  const std::size_t ranks = static_cast<std::size_t>(run.job.layout.pp);
  std::map<std::string, std::size_t> id;
  for (std::size_t i = 0; i < run.op_names.size(); ++i) id[run.op_names[i]] = i;
  check_measured_matches(m, scenario, ranks, id);
  // plumb's step as a timeline like the measured one: each op's rank, schedule index, start and end.
  std::vector<MeasuredOp> predicted;
  std::vector<std::vector<PlacedOp>> placed = placed_step_ops(sim);
  for (std::size_t r = 0; r < placed.size(); ++r)
    for (const PlacedOp& op : placed[r])
      predicted.push_back({static_cast<std::int32_t>(r), static_cast<std::int32_t>(op.op - sim.schedule.ops[r].data()), op.start, op.end});
  std::vector<double> mb = busy_per_rank(ranks, m.run.timeline), pb = busy_per_rank(ranks, predicted);
  c.ops_executed = static_cast<std::int64_t>(m.run.timeline.size());
  c.order_difference = order_difference(start_order(ranks, m.run.timeline), start_order(ranks, predicted));
  for (std::size_t r = 0; r < ranks; ++r)
    c.ranks.push_back({mb[r], pb[r], c.measured_step > 0 ? 1 - mb[r] / c.measured_step : 0,
                       c.predicted_step > 0 ? 1 - pb[r] / c.predicted_step : 0});
  const double steps = static_cast<double>(std::max<std::size_t>(1, m.run.step_seconds.size()));
  for (const MeasuredOpTime& t : m.run.op_times) {
    auto it = id.find(t.op);
    if (it == id.end()) continue;  // not an op of this plan (a file from another version): nothing to predict
    const LayerOp& op = run.op_defs[it->second];
    const char* kind = op.cls == OpClass::gemm ? "GEMM" : op.cls == OpClass::attention ? "attention" : "memory-bound";
    c.ops.push_back({t.op, t.pass, t.seconds, op_time(op, t.pass, run.job.cluster.gpu, run.job.training).seconds, static_cast<double>(t.runs) / steps, kind});
  }
  // Each stage's ops at their measured times over their predicted ones (a rank's: its stages'; DualPipe's
  // two ranks of a stage share its op times), and the step at those times.
  const std::vector<std::size_t> op_stage = stage_of_ops(run);
  std::vector<double> stage_measured(costs.stages.size(), 0), stage_predicted(costs.stages.size(), 0);
  for (const OpComparison& o : c.ops) {
    const std::size_t s = op_stage[id.at(o.op)];
    if (s >= stage_measured.size()) continue;  // the plan's stages are the costs' (stage_plans of one job)
    stage_measured[s] += o.measured * o.runs_per_step;
    stage_predicted[s] += o.predicted * o.runs_per_step;
  }
  auto ratio = [](double took, double priced) { return took > 0 && priced > 0 ? took / priced : 1.0; };
  std::vector<double> factor(costs.stages.size(), 1.0);
  for (std::size_t s = 0; s < factor.size(); ++s) factor[s] = ratio(stage_measured[s], stage_predicted[s]);
  const ParallelLayout& l = run.job.layout;
  for (std::size_t r = 0; r < ranks; ++r) {
    double took = 0, priced = 0;
    for (std::int64_t s : stages_of_rank(l.schedule, static_cast<std::int64_t>(r), l.pp, l.vp)) {
      took += stage_measured[static_cast<std::size_t>(s)];
      priced += stage_predicted[static_cast<std::size_t>(s)];
    }
    c.ranks[r].op_time_ratio = ratio(took, priced);
  }
  c.op_time_ratio = ratio(std::accumulate(stage_measured.begin(), stage_measured.end(), 0.0),
                          std::accumulate(stage_predicted.begin(), stage_predicted.end(), 0.0));
  c.predicted_step_at_measured_ops = simulate_step(run.job, scaled_compute(costs, factor)).step_time;
  for (const char* kind : {"GEMM", "attention", "memory-bound"}) {
    KindComparison k{kind};
    for (const OpComparison& o : c.ops)
      if (o.kind == kind) {
        k.measured += o.measured * o.runs_per_step;
        k.predicted += o.predicted * o.runs_per_step;
      }
    if (k.measured > 0) c.kinds.push_back(k);
  }
  // Data-parallel runs: each rank's gradient all-reduce against the reduction plumb costs for its stages.
  if (!m.run.gradient_reductions.empty()) {
    KindComparison k{"gradient all-reduce"};
    for (const MeasuredSpan& g : m.run.gradient_reductions) {
      if (g.rank < 0 || static_cast<std::size_t>(g.rank) >= ranks) continue;
      for (std::int64_t s : stages_of_rank(run.job.layout.schedule, g.rank, run.job.layout.pp, run.job.layout.vp))
        k.predicted += costs.stages[static_cast<std::size_t>(s)].grad_sync;
      k.measured += g.end - g.start;
    }
    if (k.measured > 0) c.kinds.push_back(k);
  }
  return c;
}

}  // namespace plumb
