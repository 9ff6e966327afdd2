#include "models/costs/muon_cost.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "models/costs/op_cost.hpp"

namespace plumb {
namespace {

// One product of the iteration, C[m×n] = A[m×k]·B[k×n], for `count` same-shaped matrices at once.
LayerOp product(const char* name, double m, double k, double n, double count) {
  LayerOp op;
  op.name = name;
  op.cls = OpClass::gemm;
  op.rows = m * count;
  op.in = k;
  op.out = n;
  op.groups = count;
  op.high_precision = true;  // BF16 even under fp8 training
  op.flops[0] = 2.0 * m * k * n * count;
  op.bytes[0] = 2.0 * (m * k + k * n + m * n) * count;
  return op;
}

}  // namespace

double newton_schulz_seconds(const std::vector<MuonMatrix>& matrices, std::int64_t steps, const GpuSpec& gpu,
                             const TrainingSpec& training) {
  std::map<std::pair<double, double>, double> shapes;  // (m ≤ n) → how many
  for (const MuonMatrix& x : matrices) shapes[{std::min(x.rows, x.cols), std::max(x.rows, x.cols)}] += 1.0;
  double seconds = 0;
  for (const auto& [shape, count] : shapes) {
    const auto [m, n] = shape;
    // A = X·Xᵀ, then A·A, then B·X (B = bA + cA²; the scalings are elementwise, within the epilogues).
    for (const LayerOp& op : {product("ns_gram", m, n, m, count), product("ns_square", m, m, m, count),
                              product("ns_apply", m, m, n, count)})
      seconds += op_time(op, 0, gpu, training).seconds;
  }
  return seconds * static_cast<double>(steps);
}

std::vector<MuonStageCost> muon_stage_costs(const Job& job) {
  std::vector<MuonStageCost> out;
  const TrainingSpec& t = job.training;
  for (MuonStage& plan : muon_stages(job)) {
    MuonStageCost c;
    std::vector<MuonMatrix> busiest = plan.dense.busiest;
    busiest.insert(busiest.end(), plan.expert.busiest.begin(), plan.expert.busiest.end());
    c.newton_schulz_seconds = newton_schulz_seconds(busiest, t.muon.newton_schulz_steps, job.cluster.gpu, t);
    c.plan = std::move(plan);
    c.bf16_expert_grads = t.muon.bf16_expert_grads;
    // Read the gradient, read and write the master weight and the momentum, write the 16-bit weight.
    c.update_bytes = t.optimizer.grads + 2.0 * t.optimizer.master + 2.0 * t.muon.momentum_bytes +
                     t.optimizer.copy_bytes(weight_bytes(t), job.layout.zero);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace plumb
