#pragma once
// A transformer language model's architecture: everything the memory and cost models need.
#include <cstdint>
#include <optional>
#include <compare>
#include <string>
#include <vector>

namespace plumb {

// compressed: DeepSeek-V4's hybrid attention (technical report §2.1; config.json of DeepSeek-V4-Pro/Flash).
enum class AttentionKind { mha, gqa, mla, compressed };
enum class MlpKind { gelu, swiglu };
enum class NormKind { rmsnorm, layernorm };
enum class PositionKind { rope, learned };

struct AttentionSpec {
  AttentionKind kind = AttentionKind::mha;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  // = heads for MHA
  std::int64_t head_dim = 0;
  bool qk_norm = false;       // per-head RMSNorm on q and k (Qwen3)
  bool qkv_bias = false;      // biases on the q, k, v projections only (Qwen2); `ModelSpec::bias` implies it
  // Multi-head latent attention (DeepSeek-V2/V3); q_lora_rank 0 means q is not compressed.
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  // DeepSeek-V4's compressed attention: queries through a low rank (q_lora_rank) into `heads` heads of
  // `head_dim`; one shared KV head of head_dim that is both key and value (RoPE on its last
  // qk_rope_head_dim); the output through `o_groups` grouped low-rank projections of o_lora_rank; a
  // learned sink logit per head. Each layer keeps a sliding window of raw KV and, by its entry in
  // `compress_ratios` (one per layer, then one for the MTP layer), compresses KV: 0 none (window only),
  // `sparse_ratio` (4: "CSA") overlapping entries that an indexer of index_heads × index_head_dim picks
  // index_topk of, any other ratio (128: "HCA") entries that every query reads.
  std::int64_t o_lora_rank = 0;
  std::int64_t o_groups = 0;
  std::int64_t index_heads = 0;
  std::int64_t index_head_dim = 0;
  std::int64_t index_topk = 0;
  std::int64_t sliding_window = 0;
  std::int64_t sparse_ratio = 4;
  bool attention_sink = false;
  std::vector<std::int64_t> compress_ratios;

  std::int64_t qk_head_dim() const {  // width of one query/key head
    return kind == AttentionKind::mla ? qk_nope_head_dim + qk_rope_head_dim : head_dim;
  }
  std::int64_t out_head_dim() const {  // width of one value/output head
    return kind == AttentionKind::mla ? v_head_dim : head_dim;
  }
};

struct MlpSpec {
  MlpKind kind = MlpKind::gelu;
  std::int64_t ffn_hidden = 0;
};

struct MoeSpec {
  std::int64_t experts = 0;  // routed experts per MoE layer
  std::int64_t top_k = 0;
  std::int64_t expert_ffn_hidden = 0;
  std::int64_t shared_experts = 0;
  std::int64_t shared_expert_ffn_hidden = 0;
  std::int64_t first_dense_layers = 0;
  bool router_bias = false;        // per-expert score bias (DeepSeek-V3 auxiliary-loss-free balancing)
  bool shared_expert_gate = false; // sigmoid gate on the shared expert (Qwen1.5/2-MoE)
  // Node-limited routing: a token's experts lie on at most this many nodes (DeepSeek-V3 §2.1.2: 4);
  // 0 for unlimited.
  std::int64_t max_nodes = 0;
  // The first layers route by a fixed token-id → experts table instead of the learned scores' top-k
  // (DeepSeek-V4 num_hash_layers): no score-correction bias there.
  std::int64_t hash_layers = 0;
};

// What makes layers differ in cost, memory and parameters: layers of one kind are costed once.
struct LayerKind {
  bool moe = false;
  std::int64_t compress_ratio = 0;
  bool hash_routed = false;
  auto operator<=>(const LayerKind&) const = default;
};

// What the model's authors published, for comparison (never used to compute anything).
struct PublishedCounts {
  std::optional<double> total_params;
  std::string total_text;  // as printed ("671B"): its precision sets the comparison tolerance
  std::optional<double> activated_params;
  std::string activated_text;
  // The activated figure leaves out the embedding lookup (a table read, not a matmul) but counts the head.
  bool activated_without_embedding = false;
  std::string source;
};

struct ModelSpec {
  std::string name;
  std::string display_name;
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t vocab = 0;
  std::int64_t max_seq = 0;
  PositionKind position = PositionKind::rope;
  NormKind norm = NormKind::rmsnorm;
  bool bias = false;
  bool dropout = false;
  bool tied_embeddings = false;
  AttentionSpec attention;
  MlpSpec mlp;
  std::optional<MoeSpec> moe;
  std::int64_t mtp_depth = 0;
  // mHC (DeepSeek-V4 §2.2, config hc_mult): the residual is this many streams of `hidden`, mixed around
  // every attention and MLP block by a small matmul and a Sinkhorn normalisation; 1 is a plain residual.
  std::int64_t residual_streams = 1;
  std::int64_t sinkhorn_iterations = 0;
  PublishedCounts published;
  std::string source;

  // Layer `layers` is the multi-token-prediction module's block (DeepSeek-V3 §2.2: a layer like the
  // last; in V4 its own entry of compress_ratios).
  std::int64_t mtp_layer() const { return layers; }
  bool is_moe_layer(std::int64_t layer) const {
    return moe && layer >= moe->first_dense_layers;
  }
  std::int64_t compress_ratio(std::int64_t layer) const {
    const auto& r = attention.compress_ratios;
    if (attention.kind != AttentionKind::compressed || layer < 0 || layer >= static_cast<std::int64_t>(r.size())) return 0;
    return r[static_cast<std::size_t>(layer)];
  }
  bool hash_routed(std::int64_t layer) const { return moe && layer < layers && layer < moe->hash_layers; }
  LayerKind layer_kind(std::int64_t layer) const { return {is_moe_layer(layer), compress_ratio(layer), hash_routed(layer)}; }
  std::int64_t moe_layer_count() const { return moe ? layers - moe->first_dense_layers : 0; }
};

}  // namespace plumb
