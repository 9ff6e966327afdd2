#include "validate/run/trace_compare.hpp"

#include <fmt/format.h>
#include <map>

#include "models/costs/op_cost.hpp"
#include "models/costs/step_costs.hpp"
#include "models/input/diagnostics.hpp"
#include "models/memory/memory.hpp"

namespace plumb {

namespace {

std::string_view op_class_key(OpClass c) {
  switch (c) {
    case OpClass::gemm: return "gemm";
    case OpClass::attention: return "attention";
    default: return "memory";
  }
}

}  // namespace

StagePrediction predict_stage(const Job& job, std::int64_t stage) {
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
      const double again = (r.full ? 1.0 : recompute_share(op, r, job.model.attention, true)) * pass_time[0];
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
  p.span = p.pair ? s.fb_overlap : s.forward.span() + s.backward.span();
  return p;
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
  return c;
}

}  // namespace plumb
