#include "validate/published/suite.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "models/costs/op_cost.hpp"
#include "models/input/diagnostics.hpp"
#include "models/input/statistics.hpp"

namespace plumb {
namespace {

// Bytes of a rank's peak that PyTorch's allocator reports: everything plumb counts but the CUDA context,
// which the driver holds outside the allocator (the cuBLAS workspace is the allocator's since PyTorch 1.11).
double allocator_bytes(const Job& job, double peak) { return peak - job.cluster.gpu.cuda_context; }

double predicted(Metric m, const Job& job, const StepReport& r) {
  switch (m) {
    case Metric::step_time: return r.step_time;
    case Metric::tokens_per_s_per_gpu: return r.rates.tokens_per_s_per_gpu;
    case Metric::model_tflops_per_gpu: return r.rates.model_tflops_per_gpu * kTera;
    case Metric::hardware_tflops_per_gpu: return r.rates.hfu * job.cluster.gpu.peak_dense.at(MathDtype::bf16);
    case Metric::mfu: return r.rates.mfu;
    case Metric::peak_memory: return allocator_bytes(job, r.peak_bytes);
    case Metric::first_stage_memory: return allocator_bytes(job, r.ranks.front().peak_bytes);
    case Metric::last_stage_memory: return allocator_bytes(job, r.ranks.back().peak_bytes);
  }
  return 0;
}

// The rank whose step had the most compute, with its compute split by op class in the proportions of the
// whole step as op_time prices it: every micro-batch through the model's layers (forward, the share
// recomputation runs again, both backward passes) and its head, and the optimizer's update.
StepBreakdown breakdown_of(const Job& job, const StepCosts& costs, const StepReport& r) {
  StepBreakdown b;
  b.step_time = r.step_time;
  const RankStep* busiest = &r.ranks.front();
  for (const RankStep& k : r.ranks)
    if (k.compute > busiest->compute) busiest = &k;
  b.compute = busiest->compute;
  b.exposed = busiest->exposed;
  b.bubble = busiest->idle;
  const OpContext ctx = op_context(job.layout, job.training, job.cluster.gpu);
  // Layers of one kind are alike (as step_costs prices them): one of each, weighted by how many the
  // model has.
  std::array<double, 3> by_class{};
  double total = 0, kernels = 0;
  std::map<LayerKind, std::pair<std::int64_t, double>> kinds;  // kind → (first layer, count)
  for (std::int64_t l = 0; l < job.model.layers; ++l) {
    auto [it, fresh] = kinds.try_emplace(job.model.layer_kind(l), l, 0.0);
    it->second.second += 1.0;
  }
  // Each op's passes, and the share of its forward that recomputation runs again (transformer layers).
  const Recompute& recompute = job.layout.recompute;
  auto add_ops = [&](const std::vector<LayerOp>& ops, double count, bool transformer_layer) {
    for (const LayerOp& op : ops) {
      const double rerun = !transformer_layer ? 0.0 : recompute.full ? 1.0 : recompute_share(op, recompute, job.model.attention, true);
      // The recomputed forward's time: the whole forward, or the rerun share (one linear's own time where it is one of several).
      const double again = !transformer_layer ? 0.0
                           : recompute.full   ? op_time(op, 0, job.cluster.gpu, job.training).seconds
                                              : recompute_seconds(op, recompute, job.model.attention, true, job.cluster.gpu, job.training);
      for (int pass = 0; pass < 3; ++pass) {
        const double runs = pass == 0 ? 1.0 + rerun : 1.0;
        const double t = count * (op_time(op, pass, job.cluster.gpu, job.training).seconds + (pass == 0 ? again : 0.0));
        by_class[static_cast<std::size_t>(op.cls)] += t;
        total += t;
        if (op.flops[static_cast<std::size_t>(pass)] > 0 || op.bytes[static_cast<std::size_t>(pass)] > 0) kernels += count * runs;
      }
    }
  };
  const auto microbatches = static_cast<double>(job.microbatches());
  for (const auto& [kind, layer_count] : kinds) {
    const auto& [layer, count] = layer_count;
    if (count > 0) add_ops(layer_ops(job.model, layer, ctx), microbatches * count, true);
  }
  add_ops(head_ops(job.model, ctx), microbatches, false);  // the final norm, the output head and the loss
  // The optimizer's update on every stage, once a step: memory-bound, but for Muon's Newton–Schulz GEMMs.
  for (const StageCost& s : costs.stages) {
    by_class[static_cast<std::size_t>(OpClass::memory)] += s.optimizer - s.newton_schulz;
    by_class[static_cast<std::size_t>(OpClass::gemm)] += s.newton_schulz;
    total += s.optimizer;
  }
  // The GPU's waits on the host, in the share of compute the stages' passes spend on them.
  if (job.training.host_overhead > 0) {
    double waits = 0, passes = 0;
    for (const StageCost& s : costs.stages)
      for (const Pass* p : {&s.forward, &s.backward}) waits += p->host_wait, passes += p->compute();
    if (passes > 0) b.host_wait = b.compute * waits / passes;
  }
  if (total > 0) {
    const double kernel_time = b.compute - b.host_wait;
    for (std::size_t i = 0; i < by_class.size(); ++i) b.compute_by_class[i] = kernel_time * by_class[i] / total;
    b.kernel_overhead = kernel_time * kernels * job.cluster.gpu.kernel_overhead / total;
  }
  return b;
}

ErrorSummary summarize(const std::string& group, bool memory, const std::vector<const CaseResult*>& cases) {
  ErrorSummary s{group, memory, 0, 0, 0, 0, ""};
  std::vector<double> errors;
  for (const CaseResult* c : cases)
    for (const MetricResult& m : c->metrics) {
      if (is_memory_metric(m.metric) != memory) continue;
      const double e = std::abs(m.error());
      errors.push_back(e);
      if (e >= s.max) {
        s.max = e;
        s.worst_case = c->id;
      }
    }
  s.count = errors.size();
  if (errors.empty()) return s;
  for (double e : errors) s.mape += e / static_cast<double>(errors.size());
  s.median = median(errors);
  return s;
}

}  // namespace

double CaseResult::worst() const {
  double w = 0;
  for (const MetricResult& m : metrics) w = std::max(w, std::abs(m.error()));
  return w;
}

CaseResult run_case(const PublishedCase& c) {
  CaseResult out{c.id, c.group, c.job.file, {}, std::nullopt, true, ""};
  try {
    StepCosts costs = step_costs(c.job);
    StepSimulation sim = simulate_step(c.job, costs);
    StepReport report = make_step_report(c.job, sim, costs);
    out.fits = report.fits;
    for (const Measured& m : c.measured) out.metrics.push_back({m.metric, m.value, predicted(m.metric, c.job, report)});
    out.breakdown = breakdown_of(c.job, costs, report);
  } catch (const std::exception& e) {
    out.failure = e.what();
  }
  return out;
}

SuiteResult run_suite(const std::vector<PublishedCase>& cases, const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  SuiteResult out;
  for (const PublishedCase& c : cases) {
    out.cases.push_back(run_case(c));
    if (progress) progress(out.cases.size(), cases.size());
  }
  std::stable_sort(out.cases.begin(), out.cases.end(),
                   [](const CaseResult& a, const CaseResult& b) { return a.worst() > b.worst(); });
  out.summaries = summarize_suite(out.cases);
  return out;
}

std::vector<ErrorSummary> summarize_suite(const std::vector<CaseResult>& cases) {
  std::vector<ErrorSummary> out;
  std::map<std::string, std::vector<const CaseResult*>> by_group;
  std::vector<const CaseResult*> all;
  for (const CaseResult& c : cases) {
    by_group[c.group].push_back(&c);
    all.push_back(&c);
  }
  for (bool memory : {false, true}) {
    std::vector<ErrorSummary> rows;
    for (const auto& [group, list] : by_group) {
      ErrorSummary s = summarize(group, memory, list);
      if (s.count > 0) rows.push_back(s);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const ErrorSummary& a, const ErrorSummary& b) { return a.mape > b.mape; });
    out.insert(out.end(), rows.begin(), rows.end());
    ErrorSummary total = summarize("all", memory, all);
    if (total.count > 0) out.push_back(total);
  }
  return out;
}

}  // namespace plumb
