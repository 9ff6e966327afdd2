#include "models/spec/param_count.hpp"

namespace plumb {
namespace {

double norm_params(const ModelSpec& m, double width) {
  return m.norm == NormKind::layernorm ? 2.0 * width : width;  // weight (+ bias)
}

// Gated (SwiGLU) MLPs have three h×f matrices, GeLU MLPs two; biases only on GPT-style models.
void add_mlp(const ModelSpec& m, MlpKind kind, double f, double& sharded, double& replicated) {
  double h = static_cast<double>(m.hidden);
  sharded += (kind == MlpKind::swiglu ? 3.0 : 2.0) * h * f;
  if (m.bias) {
    sharded += (kind == MlpKind::swiglu ? 2.0 : 1.0) * f;  // column-parallel biases
    replicated += h;                                      // row-parallel output bias
  }
}

void add_attention(const ModelSpec& m, LayerParams& p) {
  const AttentionSpec& a = m.attention;
  double h = static_cast<double>(m.hidden);
  double heads = static_cast<double>(a.heads);
  if (a.kind == AttentionKind::mla) {
    // DeepSeek-V2 §2.1 / V3 §2.1.1: low-rank joint compression of keys/values (and queries).
    double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
    double q_lora = static_cast<double>(a.q_lora_rank);
    double kv_lora = static_cast<double>(a.kv_lora_rank);
    if (a.q_lora_rank > 0) {
      p.attention_replicated += h * q_lora + q_lora;  // W^DQ and its RMSNorm
      p.attention_sharded += q_lora * heads * qk;     // W^UQ, W^QR
    } else {
      p.attention_sharded += h * heads * qk;
    }
    p.attention_replicated += h * (kv_lora + static_cast<double>(a.qk_rope_head_dim)) + kv_lora;  // W^DKV, W^KR, norm
    p.attention_sharded += kv_lora * heads * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim);  // W^UK, W^UV
    p.attention_sharded += heads * static_cast<double>(a.v_head_dim) * h;                              // W^O
    return;
  }
  double d = static_cast<double>(a.head_dim);
  double q = heads * d;
  double kv = static_cast<double>(a.kv_heads) * d;
  p.attention_sharded += h * (q + 2.0 * kv) + q * h;  // W_Q, W_K, W_V, W_O
  if (m.bias || a.qkv_bias) p.attention_sharded += q + 2.0 * kv;
  if (m.bias) p.attention_replicated += h;
  if (a.qk_norm) p.attention_replicated += 2.0 * d;  // one RMSNorm each for q and k, shared across heads
}

}  // namespace

double LayerParams::dense() const {
  return attention_sharded + attention_replicated + mlp_sharded + mlp_replicated + norms + router;
}

LayerParams layer_params(const ModelSpec& m, std::int64_t layer) {
  LayerParams p;
  double h = static_cast<double>(m.hidden);
  add_attention(m, p);
  p.norms = 2.0 * norm_params(m, h);
  if (!m.is_moe_layer(layer)) {
    add_mlp(m, m.mlp.kind, static_cast<double>(m.mlp.ffn_hidden), p.mlp_sharded, p.mlp_replicated);
    return p;
  }
  const MoeSpec& e = *m.moe;
  double experts = static_cast<double>(e.experts);
  p.router = h * experts + (e.router_bias ? experts : 0.0);
  double expert_sharded = 0, expert_replicated = 0;
  add_mlp(m, MlpKind::swiglu, static_cast<double>(e.expert_ffn_hidden), expert_sharded, expert_replicated);
  p.expert = expert_sharded + expert_replicated;
  p.routed_experts = e.experts;
  for (std::int64_t s = 0; s < e.shared_experts; ++s)
    add_mlp(m, MlpKind::swiglu, static_cast<double>(e.shared_expert_ffn_hidden), p.mlp_sharded, p.mlp_replicated);
  if (e.shared_expert_gate) p.router += h;
  return p;
}

double mtp_module_extra_params(const ModelSpec& m) {
  double h = static_cast<double>(m.hidden);
  return 3.0 * norm_params(m, h) + 2.0 * h * h;
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  double h = static_cast<double>(m.hidden);
  c.embedding = static_cast<double>(m.vocab) * h;
  c.position = m.position == PositionKind::learned ? static_cast<double>(m.max_seq) * h : 0.0;
  c.head = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h;
  c.final_norm = norm_params(m, h);
  double unused_experts = 0;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    LayerParams p = layer_params(m, l);
    c.layers += p.total();
    c.routed_experts += p.expert * static_cast<double>(p.routed_experts);
    if (p.routed_experts > 0)
      unused_experts += p.expert * static_cast<double>(p.routed_experts - m.moe->top_k);
  }
  if (m.mtp_depth > 0)
    c.mtp = static_cast<double>(m.mtp_depth) *
            (layer_params(m, m.layers - 1).total() + mtp_module_extra_params(m));
  c.total = c.embedding + c.position + c.layers + c.final_norm + c.head;
  c.activated = c.total - unused_experts;
  return c;
}

}  // namespace plumb
