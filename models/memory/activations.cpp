#include "models/memory/activations.hpp"

#include "models/spec/param_count.hpp"

namespace plumb {
namespace {

double storage_bytes(Storage st, const ActivationSettings& s) {
  switch (st) {
    case Storage::bf16: return 2.0;
    case Storage::gemm_input: return s.fp8_gemm_inputs ? 1.0 : 2.0;
    case Storage::swiglu_input: return s.fp8_swiglu_inputs ? 1.0 : 2.0;
    case Storage::fp32: return 4.0;
    case Storage::mask: return 1.0;  // dropout masks are kept as bytes (Korthikanti et al. §4.1)
  }
  return 2.0;
}

bool dropped(Drop d, const Recompute& rc) {
  switch (d) {
    case Drop::never: return false;
    case Drop::core_attention: return rc.core_attention;
    case Drop::norm: return rc.norms;
    case Drop::mla_up_proj: return rc.mla_up_proj;
    case Drop::activation: return rc.activation;
    case Drop::matmul: return rc.matmuls;
    case Drop::second_matmul: return rc.matmuls || rc.alternate_matmuls;
    case Drop::attention_output: return rc.core_attention && (rc.matmuls || rc.alternate_matmuls);
  }
  return false;
}

// DeepSeek-V4's compressed attention (models/costs/compressed_attention.hpp has its ops): the query
// latent, the query heads, the one shared KV head, the compressor's entry and gate projections (their
// softmax pooling needs both in backward), the indexer's queries and keys, and the grouped output.
// Assumed in 16-bit (the report trains in fp8 with its V3 framework and gives no activation dtypes).
void add_compressed_attention(const ModelSpec& m, std::int64_t layer, std::vector<SavedTensor>& t) {
  const AttentionSpec& a = m.attention;
  const double c = static_cast<double>(a.head_dim), heads = static_cast<double>(a.heads);
  const double q_lora = static_cast<double>(a.q_lora_rank);
  t.push_back({"q latent (norm input)", q_lora, Storage::bf16, Shard::sp, Drop::never});
  t.push_back({"q up-projection input", q_lora, Storage::gemm_input, Shard::sp, Drop::norm});
  t.push_back({"q", heads * c, Storage::bf16, Shard::tp, Drop::mla_up_proj});
  t.push_back({"kv (one shared head)", c, Storage::bf16, Shard::replicated, Drop::never});
  const std::int64_t ratio = m.compress_ratio(layer);
  if (ratio > 0) {
    const bool sparse = ratio == a.sparse_ratio;
    t.push_back({"KV compressor entry and gate projections", 2 * (sparse ? 2.0 : 1.0) * c, Storage::bf16, Shard::replicated,
                 Drop::never});
    if (sparse) {
      const double index_dim = static_cast<double>(a.index_head_dim);
      t.push_back({"indexer queries", static_cast<double>(a.index_heads) * index_dim, Storage::bf16, Shard::replicated, Drop::never});
      t.push_back({"indexer key compressor projections", 4 * index_dim, Storage::bf16, Shard::replicated, Drop::never});
    }
  }
  t.push_back({"softmax log-sum-exp", heads, Storage::fp32, Shard::tp, Drop::never});
  t.push_back({"attention output (grouped projection input)", heads * c, Storage::gemm_input, Shard::tp, Drop::never});
  t.push_back({"grouped projection output (out-projection input)", static_cast<double>(a.o_groups * a.o_lora_rank),
               Storage::gemm_input, Shard::tp, Drop::never});
}

// mHC around a block: the n streams entering it (the pre-mix and the post-mix's combination read them
// in backward) and the mixing values; the report (§2.2) notes the extra activation memory. Assumed 16-bit.
void add_stream_mixing(const ModelSpec& m, std::vector<SavedTensor>& t, std::string_view block) {
  if (m.residual_streams <= 1) return;
  const double n = static_cast<double>(m.residual_streams), h = static_cast<double>(m.hidden);
  t.push_back({block, n * h, Storage::bf16, Shard::sp, Drop::never});
  t.push_back({"mHC mixing values", (2 + n) * n, Storage::fp32, Shard::sp, Drop::never});
}

void add_attention(const ModelSpec& m, std::int64_t layer, const ActivationSettings& s, std::vector<SavedTensor>& t) {
  const AttentionSpec& a = m.attention;
  double h = static_cast<double>(m.hidden);
  double heads = static_cast<double>(a.heads);
  add_stream_mixing(m, t, "mHC streams entering attention");
  t.push_back({"attention norm input", h, Storage::bf16, Shard::sp, Drop::never});
  t.push_back({"qkv projection input", h, Storage::gemm_input, Shard::gathered, Drop::norm});
  if (a.kind == AttentionKind::compressed) {
    add_compressed_attention(m, layer, t);
    return;
  }
  double q_width = 0, k_width = 0, v_width = 0;
  if (a.kind == AttentionKind::mla) {
    // DeepSeek-V3 §2.1.1: compressed latents are kept; the up-projected heads can be recomputed (§3.2.3).
    double kv_lora = static_cast<double>(a.kv_lora_rank);
    if (a.q_lora_rank > 0) {
      double q_lora = static_cast<double>(a.q_lora_rank);
      t.push_back({"q latent (norm input)", q_lora, Storage::bf16, Shard::sp, Drop::never});
      t.push_back({"q up-projection input", q_lora, Storage::gemm_input, Shard::sp, Drop::norm});
    }
    t.push_back({"kv latent + rope key", kv_lora + static_cast<double>(a.qk_rope_head_dim), Storage::bf16, Shard::sp, Drop::never});
    t.push_back({"kv up-projection input", kv_lora, Storage::gemm_input, Shard::sp, Drop::norm});
    q_width = k_width = heads * static_cast<double>(a.qk_head_dim());
    v_width = heads * static_cast<double>(a.v_head_dim);
    t.push_back({"q", q_width, Storage::bf16, Shard::tp, Drop::mla_up_proj});
    t.push_back({"k", k_width, Storage::bf16, Shard::tp, Drop::mla_up_proj});
    t.push_back({"v", v_width, Storage::bf16, Shard::tp, Drop::mla_up_proj});
  } else {
    double d = static_cast<double>(a.head_dim);
    q_width = heads * d;
    k_width = v_width = static_cast<double>(a.kv_heads) * d;
    // The wq, wk, wv outputs: torchtitan's per-op policy recomputes wk's, the second matmul.
    t.push_back({"q", q_width, Storage::bf16, Shard::tp, Drop::matmul});
    t.push_back({"k", k_width, Storage::bf16, Shard::tp, Drop::second_matmul});
    t.push_back({"v", v_width, Storage::bf16, Shard::tp, Drop::matmul});
  }
  double scores = heads * static_cast<double>(s.seq_local);  // one row of a·s attention scores per token
  if (s.kernel == AttentionKernel::unfused) {
    t.push_back({"softmax output", scores, Storage::bf16, Shard::tp, Drop::core_attention});
    if (m.dropout) {
      t.push_back({"attention dropout mask", scores, Storage::mask, Shard::tp, Drop::core_attention});
      t.push_back({"attention dropout output", scores, Storage::bf16, Shard::tp, Drop::core_attention});
    }
  } else {
    t.push_back({"softmax log-sum-exp", heads, Storage::fp32, Shard::tp, Drop::attention_output});
  }
  t.push_back({"attention output (out-projection input)", heads * static_cast<double>(a.out_head_dim()),
               Storage::gemm_input, Shard::tp, Drop::attention_output});
  if (m.dropout) t.push_back({"attention residual dropout mask", h, Storage::mask, Shard::sp, Drop::never});
}

// A gated (SwiGLU) or GeLU MLP's own tensors, after its input.
void add_mlp_body(MlpKind kind, double f, Shard ffn_shard, Storage act_in, std::vector<SavedTensor>& t) {
  if (kind == MlpKind::swiglu) {
    // w1 and w3: torchtitan's per-op policy saves the first (the fifth matmul) and recomputes the second.
    t.push_back({"gate projection (SwiGLU input)", f, act_in, ffn_shard, Drop::matmul});
    t.push_back({"up projection (SwiGLU input)", f, act_in, ffn_shard, Drop::second_matmul});
  } else {
    t.push_back({"GeLU input", f, Storage::bf16, ffn_shard, Drop::never});
  }
  t.push_back({"down-projection input (activation output)", f, Storage::gemm_input, ffn_shard, Drop::activation});
}

// Eager selective checkpointing caches the output of every op its policy saves, needed or not (PyTorch
// torch/utils/checkpoint.py _CachingTorchDispatchMode stores each MUST_SAVE output; CheckpointPolicy's
// docstring: such a policy "would save additional tensors not limited to ones that are actually needed for
// gradient computation"). torchtitan's per-op policy saves w2's output (the seventh matmul, whole on each
// TP rank before its reduction) and, under sequence-parallel TP, both reduce-scatters' outputs: no
// backward reads them. Compiled, the min-cut partitioner saves only values the backward reads
// (torch/_functorch/partitioners.py solve_min_cut: a node with no path to the backward is never cut), so
// none of these.
void add_policy_cache(const ActivationSettings& s, double h, std::vector<SavedTensor>& t) {
  if (!s.recompute.alternate_matmuls || s.recompute.matmuls || s.compiled) return;
  t.push_back({"down projection output (cached by the per-op policy)", h, Storage::bf16, Shard::replicated, Drop::never});
  if (s.tp > 1 && s.sequence_parallel)
    t.push_back({"reduce-scatter outputs (cached by the per-op policy)", 2 * h, Storage::bf16, Shard::sp, Drop::never});
}

}  // namespace

ActivationSettings ActivationSettings::of(const ParallelLayout& layout, const TrainingSpec& training) {
  ActivationSettings s;
  s.tp = layout.tp;
  s.etp = layout.etp;
  s.sequence_parallel = layout.sequence_parallel;
  s.recompute = layout.recompute;
  s.fp8_gemm_inputs = training.fp8_gemm_inputs;
  s.fp8_swiglu_inputs = training.fp8_swiglu_inputs;
  s.kernel = training.attention_kernel;
  s.compiled = training.compiled;
  s.keep_gathered_inputs = layout.keep_gathered_inputs;
  s.seq_local = training.seq_len / layout.cp;
  return s;
}

std::vector<SavedTensor> layer_tensors(const ModelSpec& m, std::int64_t layer, const ActivationSettings& s) {
  std::vector<SavedTensor> t;
  double h = static_cast<double>(m.hidden);
  add_attention(m, layer, s, t);
  add_stream_mixing(m, t, "mHC streams entering the MLP");
  // The residual sum x + wo(...): rebuilt when wo's output is recomputed.
  t.push_back({"MLP norm input", h, Storage::bf16, Shard::sp, Drop::second_matmul});
  t.push_back({"MLP input (norm output)", h, Storage::gemm_input, Shard::gathered, Drop::norm});
  if (!m.is_moe_layer(layer)) {
    add_mlp_body(m.mlp.kind, static_cast<double>(m.mlp.ffn_hidden), Shard::tp, Storage::bf16, t);
  } else {
    const MoeSpec& e = *m.moe;
    double k = static_cast<double>(e.top_k);
    t.push_back({"router scores", static_cast<double>(e.experts), Storage::fp32, Shard::sp, Drop::never});
    // Each token is dispatched to k experts; with balanced routing a rank receives as many token
    // copies as it sends. Gate probabilities are applied before the down projection, so the combine
    // needs no extra copy of the expert outputs.
    t.push_back({"routed expert input (dispatched tokens)", k * h, Storage::gemm_input, Shard::routed, Drop::never});
    add_mlp_body(MlpKind::swiglu, k * static_cast<double>(e.expert_ffn_hidden), Shard::routed_ffn, Storage::swiglu_input, t);
    if (e.shared_experts > 0)
      add_mlp_body(MlpKind::swiglu, static_cast<double>(e.shared_experts * e.shared_expert_ffn_hidden), Shard::tp,
                   Storage::swiglu_input, t);
  }
  if (m.dropout) t.push_back({"MLP residual dropout mask", h, Storage::mask, Shard::sp, Drop::never});
  add_policy_cache(s, h, t);
  return t;
}

std::vector<SavedTensor> weight_gradient_tensors(const ModelSpec& m, std::int64_t layer, const ActivationSettings& s) {
  std::vector<SavedTensor> t;
  for (const SavedTensor& x : layer_tensors(m, layer, s))
    if (x.storage == Storage::gemm_input) t.push_back({x.name, x.width, x.storage, x.shard, Drop::never});
  const double k = m.moe ? static_cast<double>(m.moe->top_k) : 1.0;
  for (const ParamTensor& w : layer_param_tensors(m, layer)) {
    if (w.rows <= 1 || w.cols <= 1) continue;  // vectors: norms' and biases' gradients need no GEMM input
    const bool expert = w.part == ParamPart::expert;
    // A column-parallel weight's output is split over TP; a row-parallel one's gradient is gathered
    // (sequence parallelism) or whole; a replicated one runs on its rank's tokens.
    Shard shard = w.split == TpSplit::rows ? Shard::tp : w.split == TpSplit::cols ? Shard::gathered : Shard::sp;
    if (expert) shard = w.split == TpSplit::rows ? Shard::routed_ffn : Shard::routed;
    // Kept as the weight GEMM reads it: in fp8 where the GEMMs take fp8 inputs (DeepSeek-V3 §3.3: Wgrad
    // runs in FP8, its output gradient quantized), else in 16 bits.
    t.push_back({"weight GEMM output gradient", w.rows * (expert ? k : 1.0), Storage::gemm_input, shard, Drop::never});
  }
  return t;
}

std::vector<SavedTensor> embedding_tensors(const ModelSpec& m) {
  std::vector<SavedTensor> t;
  if (m.dropout) t.push_back({"embedding dropout mask", static_cast<double>(m.hidden), Storage::mask, Shard::sp, Drop::never});
  return t;
}

std::vector<SavedTensor> head_tensors(const ModelSpec& m) {
  // Korthikanti et al. §4.3: final norm input, head input and fp32 logits for the cross-entropy,
  // 4sbh/t · (1 + V/h) with sequence parallelism.
  double h = static_cast<double>(m.hidden);
  return {{"final norm input", h, Storage::bf16, Shard::sp, Drop::never},
          {"LM head input", h, Storage::bf16, Shard::gathered, Drop::never},
          {"logits (fp32, vocab-parallel)", static_cast<double>(m.vocab), Storage::fp32, Shard::tp, Drop::never}};
}

std::vector<SavedTensor> mtp_extra_tensors(const ModelSpec& m) {
  // DeepSeek-V3 §2.2: RMSNorm of the previous depth's hidden state and of the next token's
  // embedding, their concatenation projected 2h→h, then a transformer block and the shared head.
  double h = static_cast<double>(m.hidden);
  std::vector<SavedTensor> t{{"MTP norm inputs", 2.0 * h, Storage::bf16, Shard::sp, Drop::never},
                             {"MTP projection input", 2.0 * h, Storage::gemm_input, Shard::sp, Drop::norm}};
  for (const SavedTensor& x : head_tensors(m)) t.push_back(x);
  return t;
}

double bytes_per_token(const std::vector<SavedTensor>& tensors, const ActivationSettings& s) {
  double tp = static_cast<double>(s.tp);
  double sp = s.sequence_parallel ? tp : 1.0;
  double total = 0;
  for (const SavedTensor& x : tensors) {
    if (dropped(x.drop, s.recompute)) continue;
    double split = 1.0;
    switch (x.shard) {
      case Shard::replicated: split = 1.0; break;
      case Shard::tp: split = tp; break;
      case Shard::sp:
      case Shard::routed: split = sp; break;
      case Shard::gathered: split = s.keep_gathered_inputs ? 1.0 : sp; break;
      case Shard::routed_ffn: split = sp * static_cast<double>(s.etp); break;
    }
    total += x.width * storage_bytes(x.storage, s) / split;
  }
  return total;
}

double layer_bytes_per_token(const ModelSpec& m, std::int64_t layer, const ActivationSettings& s) {
  if (s.recompute.full) {
    // Only the layer input survives (Korthikanti et al.: 2sbh, split over TP with sequence parallelism).
    return bytes_per_token({{"layer input", static_cast<double>(m.hidden), Storage::bf16, Shard::sp, Drop::never}}, s);
  }
  return bytes_per_token(layer_tensors(m, layer, s), s);
}

}  // namespace plumb
