#include "models/spec/param_count.hpp"

namespace plumb {
namespace {

double norm_params(const ModelSpec& m, double width) {
  return m.norm == NormKind::layernorm ? 2.0 * width : width;  // weight (+ bias)
}

using Tensors = std::vector<ParamTensor>;

void add_norm(const ModelSpec& m, Tensors& t, std::string_view name, ParamPart part, double width) {
  t.push_back({.name = name, .part = part, .cols = width, .adamw_only = true});  // weight
  if (m.norm == NormKind::layernorm) t.push_back({.name = name, .part = part, .cols = width, .adamw_only = true});  // bias
}

// Gated (SwiGLU) MLPs have three h×f matrices, GeLU MLPs two; biases only on GPT-style models.
void add_mlp(const ModelSpec& m, Tensors& t, ParamPart part, MlpKind kind, double f) {
  const double h = static_cast<double>(m.hidden);
  t.push_back({.name = "w_up", .part = part, .rows = f, .cols = h, .split = TpSplit::rows});
  if (kind == MlpKind::swiglu) t.push_back({.name = "w_gate", .part = part, .rows = f, .cols = h, .split = TpSplit::rows});
  t.push_back({.name = "w_down", .part = part, .rows = h, .cols = f, .split = TpSplit::cols});
  if (!m.bias) return;
  const double column_biases = kind == MlpKind::swiglu ? 2.0 : 1.0;
  t.push_back({.name = "b_up", .part = part, .cols = column_biases * f, .split = TpSplit::cols, .adamw_only = true});
  t.push_back({.name = "b_down", .part = part, .cols = h, .adamw_only = true});  // row-parallel output bias, whole
}

// A KV compressor of `width`-wide entries, one per `ratio` tokens: entry and gate projections and a
// learned per-slot bias, twice as wide when windows overlap (each entry pools 2·ratio tokens), and an
// RMSNorm (DeepSeek-V4 inference/model.py Compressor; checkpoint shapes in ../shared/reference).
void add_compressor(Tensors& t, double h, double width, double ratio, bool overlapping) {
  const double wide = (overlapping ? 2.0 : 1.0) * width;
  t.push_back({.name = "compressor_kv", .part = ParamPart::attention, .rows = wide, .cols = h});
  t.push_back({.name = "compressor_gate", .part = ParamPart::attention, .rows = wide, .cols = h});
  t.push_back({.name = "compressor_position", .part = ParamPart::attention, .rows = ratio, .cols = wide, .adamw_only = true});
  t.push_back({.name = "compressor_norm", .part = ParamPart::attention, .cols = width, .adamw_only = true});
}

// DeepSeek-V4's compressed attention. The query heads and the output groups split over TP; the single
// KV head, its compressor and the indexer are held whole.
void add_compressed_attention(const ModelSpec& m, std::int64_t layer, Tensors& t) {
  const AttentionSpec& a = m.attention;
  const double h = static_cast<double>(m.hidden), c = static_cast<double>(a.head_dim);
  const double heads = static_cast<double>(a.heads), q_lora = static_cast<double>(a.q_lora_rank);
  const double groups = static_cast<double>(a.o_groups), o_lora = static_cast<double>(a.o_lora_rank);
  const ParamPart part = ParamPart::attention;
  t.push_back({.name = "w_dq", .part = part, .rows = q_lora, .cols = h});
  t.push_back({.name = "q_norm", .part = part, .cols = q_lora, .adamw_only = true});
  t.push_back({.name = "w_uq", .part = part, .rows = heads * c, .cols = q_lora, .split = TpSplit::rows});
  t.push_back({.name = "w_kv", .part = part, .rows = c, .cols = h});
  t.push_back({.name = "kv_norm", .part = part, .cols = c, .adamw_only = true});
  // Block-diagonal: group g maps its heads' heads·c/groups outputs to o_lora.
  t.push_back({.name = "w_o_groups", .part = part, .rows = groups * o_lora, .cols = heads * c / groups, .split = TpSplit::rows});
  t.push_back({.name = "w_o", .part = part, .rows = h, .cols = groups * o_lora, .split = TpSplit::cols});
  if (a.attention_sink) t.push_back({.name = "attention_sink", .part = part, .cols = heads, .split = TpSplit::cols, .adamw_only = true});
  const std::int64_t ratio = m.compress_ratio(layer);
  if (ratio == 0) return;
  const bool sparse = ratio == a.sparse_ratio;
  add_compressor(t, h, c, static_cast<double>(ratio), sparse);
  if (!sparse) return;
  // The indexer: its queries from the attention's query latent, per-head weights from the hidden
  // state, its keys from its own overlapping compressor.
  const double index_width = static_cast<double>(a.index_heads * a.index_head_dim);
  t.push_back({.name = "index_w_q", .part = part, .rows = index_width, .cols = q_lora});
  t.push_back({.name = "index_head_weights", .part = part, .rows = static_cast<double>(a.index_heads), .cols = h});
  add_compressor(t, h, static_cast<double>(a.index_head_dim), static_cast<double>(ratio), true);
}

// mHC around one block (attention or MLP): n streams of h flattened, mapped to (2 + n)·n mixing values
// (n pre-weights, n post-weights, an n×n combination), their bias, and three scales (DeepSeek-V4 §2.2;
// checkpoint hc_attn_fn/base/scale).
void add_stream_mixing(const ModelSpec& m, Tensors& t, std::string_view name) {
  const double n = static_cast<double>(m.residual_streams), h = static_cast<double>(m.hidden);
  const double outputs = (2.0 + n) * n;
  t.push_back({.name = name, .part = ParamPart::mixing, .rows = outputs, .cols = n * h, .adamw_only = true});
  t.push_back({.name = name, .part = ParamPart::mixing, .cols = outputs + 3.0, .adamw_only = true});  // bias, scales
}

void add_attention(const ModelSpec& m, std::int64_t layer, Tensors& t) {
  const AttentionSpec& a = m.attention;
  const double h = static_cast<double>(m.hidden);
  const double heads = static_cast<double>(a.heads);
  const ParamPart part = ParamPart::attention;
  if (a.kind == AttentionKind::compressed) {
    add_compressed_attention(m, layer, t);
    return;
  }
  if (a.kind == AttentionKind::mla) {
    // DeepSeek-V2 §2.1 / V3 §2.1.1: low-rank joint compression of keys/values (and queries); the
    // down-projections and their norms are held whole by every TP rank.
    const double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
    const double q_lora = static_cast<double>(a.q_lora_rank);
    const double kv_lora = static_cast<double>(a.kv_lora_rank);
    if (a.q_lora_rank > 0) {
      t.push_back({.name = "w_dq", .part = part, .rows = q_lora, .cols = h});
      t.push_back({.name = "q_norm", .part = part, .cols = q_lora, .adamw_only = true});
      t.push_back({.name = "w_uq", .part = part, .rows = heads * qk, .cols = q_lora, .split = TpSplit::rows});
    } else {
      t.push_back({.name = "w_q", .part = part, .rows = heads * qk, .cols = h, .split = TpSplit::rows});
    }
    t.push_back({.name = "w_dkv", .part = part, .rows = kv_lora + static_cast<double>(a.qk_rope_head_dim), .cols = h});
    t.push_back({.name = "kv_norm", .part = part, .cols = kv_lora, .adamw_only = true});
    t.push_back({.name = "w_ukv", .part = part, .rows = heads * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim),
                 .cols = kv_lora, .split = TpSplit::rows});
    t.push_back({.name = "w_o", .part = part, .rows = h, .cols = heads * static_cast<double>(a.v_head_dim), .split = TpSplit::cols});
    return;
  }
  const double d = static_cast<double>(a.head_dim);
  const double q = heads * d;
  const double kv = static_cast<double>(a.kv_heads) * d;
  t.push_back({.name = "w_q", .part = part, .rows = q, .cols = h, .split = TpSplit::rows});
  t.push_back({.name = "w_k", .part = part, .rows = kv, .cols = h, .split = TpSplit::rows});
  t.push_back({.name = "w_v", .part = part, .rows = kv, .cols = h, .split = TpSplit::rows});
  t.push_back({.name = "w_o", .part = part, .rows = h, .cols = q, .split = TpSplit::cols});
  if (m.bias || a.qkv_bias) t.push_back({.name = "b_qkv", .part = part, .cols = q + 2.0 * kv, .split = TpSplit::cols, .adamw_only = true});
  if (m.bias) t.push_back({.name = "b_o", .part = part, .cols = h, .adamw_only = true});
  if (a.qk_norm) {  // one RMSNorm each for q and k, shared across heads
    t.push_back({.name = "q_norm", .part = part, .cols = d, .adamw_only = true});
    t.push_back({.name = "k_norm", .part = part, .cols = d, .adamw_only = true});
  }
}

}  // namespace

std::vector<ParamTensor> layer_param_tensors(const ModelSpec& m, std::int64_t layer) {
  Tensors t;
  const double h = static_cast<double>(m.hidden);
  add_attention(m, layer, t);
  add_norm(m, t, "attention_norm", ParamPart::norm, h);
  add_norm(m, t, "mlp_norm", ParamPart::norm, h);
  if (m.residual_streams > 1) {
    add_stream_mixing(m, t, "attention_mixing");
    add_stream_mixing(m, t, "mlp_mixing");
  }
  if (!m.is_moe_layer(layer)) {
    add_mlp(m, t, ParamPart::mlp, m.mlp.kind, static_cast<double>(m.mlp.ffn_hidden));
    return t;
  }
  const MoeSpec& e = *m.moe;
  const double experts = static_cast<double>(e.experts);
  t.push_back({.name = "router", .part = ParamPart::router, .rows = experts, .cols = h});
  if (e.router_bias && !m.hash_routed(layer))
    t.push_back({.name = "router_bias", .part = ParamPart::router, .cols = experts, .adamw_only = true});
  add_mlp(m, t, ParamPart::expert, MlpKind::swiglu, static_cast<double>(e.expert_ffn_hidden));
  for (std::int64_t s = 0; s < e.shared_experts; ++s)
    add_mlp(m, t, ParamPart::mlp, MlpKind::swiglu, static_cast<double>(e.shared_expert_ffn_hidden));
  if (e.shared_expert_gate) t.push_back({.name = "shared_gate", .part = ParamPart::router, .cols = h});
  return t;
}

double LayerParams::dense() const {
  return attention_sharded + attention_replicated + mlp_sharded + mlp_replicated + norms + router + mixing;
}

LayerParams layer_params(const ModelSpec& m, std::int64_t layer) {
  LayerParams p;
  for (const ParamTensor& t : layer_param_tensors(m, layer)) {
    const bool sharded = t.split != TpSplit::none;
    switch (t.part) {
      case ParamPart::attention: (sharded ? p.attention_sharded : p.attention_replicated) += t.size(); break;
      case ParamPart::mlp: (sharded ? p.mlp_sharded : p.mlp_replicated) += t.size(); break;
      case ParamPart::norm: p.norms += t.size(); break;
      case ParamPart::router: p.router += t.size(); break;
      case ParamPart::expert: p.expert += t.size(); break;
      case ParamPart::mixing: p.mixing += t.size(); break;
    }
  }
  if (m.is_moe_layer(layer)) p.routed_experts = m.moe->experts;
  return p;
}

double head_mixing_params(const ModelSpec& m) {
  if (m.residual_streams <= 1) return 0.0;
  const double n = static_cast<double>(m.residual_streams);
  return n * n * static_cast<double>(m.hidden) + n + 1.0;  // hc_head: weight, bias, one scale
}

double mtp_module_extra_params(const ModelSpec& m) {
  double h = static_cast<double>(m.hidden);
  // V4's e_proj and h_proj (h×h each) hold what V3's one 2h→h projection does; with mHC the module
  // has its own head mixing.
  return 3.0 * norm_params(m, h) + 2.0 * h * h + head_mixing_params(m);
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  double h = static_cast<double>(m.hidden);
  c.embedding = static_cast<double>(m.vocab) * h;
  c.position = m.position == PositionKind::learned ? static_cast<double>(m.max_seq) * h : 0.0;
  c.head = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h;
  c.final_norm = norm_params(m, h) + head_mixing_params(m);
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
            (layer_params(m, m.mtp_layer()).total() + mtp_module_extra_params(m));
  c.total = c.embedding + c.position + c.layers + c.final_norm + c.head;
  c.activated = c.total - unused_experts;
  return c;
}

}  // namespace plumb
