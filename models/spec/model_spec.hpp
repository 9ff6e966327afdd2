#pragma once
// A transformer language model's architecture: everything the memory and cost models need.
#include <cstdint>
#include <optional>
#include <string>

namespace plumb {

enum class AttentionKind { mha, gqa, mla };
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
};

// What the model's authors published, for comparison (never used to compute anything).
struct PublishedCounts {
  std::optional<double> total_params;
  std::string total_text;  // as printed ("671B"): its precision sets the comparison tolerance
  std::optional<double> activated_params;
  std::string activated_text;
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
  PublishedCounts published;
  std::string source;

  bool is_moe_layer(std::int64_t layer) const {
    return moe && layer >= moe->first_dense_layers;
  }
  std::int64_t moe_layer_count() const { return moe ? layers - moe->first_dense_layers : 0; }
};

}  // namespace plumb
