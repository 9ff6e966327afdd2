#include "models/optimizer/muon.hpp"

#include <algorithm>

#include "models/spec/param_count.hpp"

namespace plumb {

double newton_schulz_flops(const MuonMatrix& x, std::int64_t steps) {
  const double m = std::min(x.rows, x.cols);
  const double n = std::max(x.rows, x.cols);
  return static_cast<double>(steps) * (4.0 * m * m * n + 2.0 * m * m * m);
}

MuonBuckets assign_matrices(std::vector<MuonMatrix> matrices, std::int64_t ranks, std::int64_t per_rank_limit) {
  MuonBuckets b;
  b.matrices = static_cast<std::int64_t>(matrices.size());
  for (const MuonMatrix& x : matrices) b.params += x.size();
  b.ranks = std::max<std::int64_t>(1, std::min(ranks, b.matrices));
  if (matrices.empty()) return b;
  // More matrices than the limit allows on every rank: the fullest rank takes what is left.
  const std::int64_t limit = std::max(per_rank_limit, (b.matrices + b.ranks - 1) / b.ranks);
  std::stable_sort(matrices.begin(), matrices.end(), [](const MuonMatrix& a, const MuonMatrix& c) { return a.size() > c.size(); });
  const auto r = static_cast<std::size_t>(b.ranks);
  std::vector<double> load(r, 0.0);
  std::vector<std::vector<MuonMatrix>> held(r);
  for (const MuonMatrix& x : matrices) {
    std::size_t best = r;
    for (std::size_t i = 0; i < r; ++i)
      if (static_cast<std::int64_t>(held[i].size()) < limit && (best == r || load[i] < load[best])) best = i;
    load[best] += x.size();
    held[best].push_back(x);
  }
  double most_flops = -1;
  for (std::size_t i = 0; i < r; ++i) {
    b.bucket_params = std::max(b.bucket_params, load[i]);
    b.most_per_rank = std::max(b.most_per_rank, static_cast<std::int64_t>(held[i].size()));
    double flops = 0;
    for (const MuonMatrix& x : held[i]) flops += newton_schulz_flops(x, 1);
    if (flops > most_flops) {
      most_flops = flops;
      b.busiest = held[i];
    }
  }
  return b;
}

namespace {

MuonMatrix shard(const ParamTensor& t, std::int64_t ways) {
  const double w = static_cast<double>(ways);
  if (t.split == TpSplit::rows) return {t.rows / w, t.cols};
  if (t.split == TpSplit::cols) return {t.rows, t.cols / w};
  return {t.rows, t.cols};
}

void add_layer(const Job& job, std::int64_t layer, StageMatrices& out) {
  const ParallelLayout& p = job.layout;
  const std::int64_t experts_held = job.model.is_moe_layer(layer) ? job.model.moe->experts / p.ep : 0;
  for (const ParamTensor& t : layer_param_tensors(job.model, layer)) {
    if (!t.muon_matrix()) continue;
    if (t.part != ParamPart::expert) {
      out.dense.push_back(shard(t, p.tp));
      continue;
    }
    for (std::int64_t e = 0; e < experts_held; ++e) out.expert.push_back(shard(t, p.etp));
  }
}

}  // namespace

StageMatrices stage_matrices(const Job& job, const StagePlan& s) {
  StageMatrices out;
  for (std::int64_t l = s.first_layer; l < s.first_layer + s.layers; ++l) add_layer(job, l, out);
  const double h = static_cast<double>(job.model.hidden);
  for (std::int64_t k = 0; k < s.mtp_modules; ++k) {
    add_layer(job, job.model.mtp_layer(), out);
    // The module's 2h→h projection, split over TP (models/memory holds it so).
    out.dense.push_back({h / static_cast<double>(job.layout.tp), 2.0 * h});
  }
  return out;
}

std::vector<MuonStage> muon_stages(const Job& job) {
  std::vector<MuonStage> out;
  if (job.training.optimizer_kind != OptimizerKind::muon) return out;
  const ParallelLayout& p = job.layout;
  const MuonSpec& mu = job.training.muon;
  std::int64_t dense_ranks = p.dense_dp_shards();
  if (p.zero == 0) dense_ranks = 1;
  else if (mu.dense_zero_cap > 0) dense_ranks = std::min(dense_ranks, mu.dense_zero_cap);
  const std::int64_t expert_ranks = p.zero == 0 ? 1 : p.edp();
  for (const StagePlan& s : stage_plans(p, job.model.mtp_depth)) {
    StageMatrices held = stage_matrices(job, s);
    MuonStage st;
    st.dense = assign_matrices(std::move(held.dense), dense_ranks, mu.matrices_per_rank);
    st.expert = assign_matrices(std::move(held.expert), expert_ranks, mu.matrices_per_rank);
    for (const MuonBuckets* b : {&st.dense, &st.expert})
      for (const MuonMatrix& x : b->busiest) st.newton_schulz_flops += newton_schulz_flops(x, mu.newton_schulz_steps);
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace plumb
