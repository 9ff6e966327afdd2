#pragma once
// The ops of one transformer layer (and of the LM head) with their FLOPs and bytes for the forward,
// the input-gradient backward and the weight-gradient backward separately — zero-bubble schedules need
// that split. Counts follow the papers' conventions: a GEMM of M×K by K×N is 2MKN FLOPs per pass;
// attention scores are counted in full (no causal discount) for model FLOPs, as Narayanan et al. and
// Korthikanti et al. do, while the executed count halves them for a causal flash kernel.
#include <cstdint>
#include <vector>

#include "models/costs/layer_op.hpp"
#include "models/spec/model_spec.hpp"

namespace plumb {

std::vector<LayerOp> layer_ops(const ModelSpec& m, std::int64_t layer, const OpContext& c);
// Key/value heads the attention kernel receives on a TP rank: the model's own for grouped-query attention,
// every query head for other kinds or where the framework repeats them before the kernel (repeat_kv).
double kv_heads_on_rank(const AttentionSpec& a, std::int64_t tp, bool repeated);
std::vector<LayerOp> head_ops(const ModelSpec& m, const OpContext& c);
// One multi-token-prediction module beyond its transformer layer (DeepSeek-V3 §2.2): the two input
// norms, the 2h→h projection, and its pass through the shared head.
std::vector<LayerOp> mtp_extra_ops(const ModelSpec& m, const OpContext& c);

struct PassFlops {
  double forward = 0, input_grad = 0, weight_grad = 0;
  double total() const { return forward + input_grad + weight_grad; }
};
PassFlops sum_flops(const std::vector<LayerOp>& ops);

// Model FLOPs of one training token (forward + backward, no recomputation, attention in full): the
// numerator of MFU. Equals 6 × (matrix parameters a token uses) + the attention-score term.
double model_flops_per_token(const ModelSpec& m, double seq);
// What the GPUs execute per token: adds the MTP modules (outside the MFU convention, as DeepSeek
// counts 37B activated without them), recomputation (full: the layers' forward again; otherwise each op's
// recompute_share of its forward — the attention scores under Megatron's selective option, torchtitan's
// per-op policy's GEMMs) and, with `causal` (a flash kernel), halves the attention-score work and adds the
// scores the flash backward recomputes.
double hardware_flops_per_token(const ModelSpec& m, double seq, const Recompute& recompute, bool causal);

}  // namespace plumb
