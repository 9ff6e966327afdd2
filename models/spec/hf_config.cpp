// Hugging Face config.json → ModelSpec. A foreign format: only the keys that shape the architecture
// are read (the rest — token ids, dtypes, rope scaling — do not change parameter counts or memory);
// a family plumb does not know, or a variant of a known family it cannot represent, is an error.
#include <fmt/format.h>

#include "models/input/catalogue.hpp"
#include "models/spec/model_reader.hpp"

namespace plumb {
namespace {

enum class Family { llama, mixtral, qwen2_moe, qwen3, qwen3_moe, qwen2, deepseek, deepseek_v4 };

// Every value the reader takes goes through these checked accessors: a key of the wrong type, or a
// size beyond what plumb can simulate, is an error naming the key (other keys are not read).
struct HfReader {
  const Json& doc;
  const SourceFile& src;

  std::int64_t integer(const char* key, std::optional<std::int64_t> fallback = std::nullopt, std::int64_t max = kMaxModelDim) const {
    if (doc.contains(key) && doc[key].is_number_integer()) {
      const Json& v = doc[key];
      const bool negative = v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() < 0;
      const bool too_large = v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(max) : v.get<std::int64_t>() > max;
      if (!negative && !too_large) return v.get<std::int64_t>();
      src.error(json_pointer_append("", key), negative ? fmt::format("expected a non-negative whole number, found {}", json_brief(v))
                                                       : fmt::format("{} is larger than plumb simulates (at most {})", json_brief(v), max));
      return fallback.value_or(1);
    }
    if (doc.contains(key) && !doc[key].is_null())
      src.error(json_pointer_append("", key), fmt::format("expected a non-negative whole number, found {}", json_brief(doc[key])));
    else if (!fallback)
      src.error("", fmt::format("missing key \"{}\"", key));
    return fallback.value_or(1);
  }
  bool flag(const char* key, bool fallback) const {
    if (!doc.contains(key) || doc[key].is_null()) return fallback;
    if (doc[key].is_boolean()) return doc[key].get<bool>();
    src.error(json_pointer_append("", key), fmt::format("expected true or false, found {}", json_brief(doc[key])));
    return fallback;
  }
  // A list of whole numbers (DeepSeek-V4's compress_ratios); each entry checked like `integer`.
  std::vector<std::int64_t> integers(const char* key, std::int64_t max) const {
    std::vector<std::int64_t> out;
    if (!doc.contains(key) || !doc[key].is_array()) {
      src.error(doc.contains(key) ? json_pointer_append("", key) : "",
                doc.contains(key) ? fmt::format("expected a list of whole numbers, found {}", json_brief(doc[key]))
                                  : fmt::format("missing key \"{}\"", key));
      return out;
    }
    const Json& list = doc[key];
    for (std::size_t i = 0; i < list.size(); ++i) {
      const Json& v = list[i];
      if (v.is_number_integer() && (v.is_number_unsigned() ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max)
                                                           : v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() <= max)) {
        out.push_back(v.get<std::int64_t>());
        continue;
      }
      src.error(json_pointer_append(json_pointer_append("", key), std::to_string(i)),
                fmt::format("expected a whole number from 0 to {}, found {}", max, json_brief(v)));
      out.push_back(0);
    }
    return out;
  }
  std::string text(const char* key, std::string fallback) const {
    if (!doc.contains(key) || doc[key].is_null()) return fallback;
    if (doc[key].is_string()) return doc[key].get<std::string>();
    src.error(json_pointer_append("", key), fmt::format("expected a string, found {}", json_brief(doc[key])));
    return fallback;
  }
};

std::optional<Family> family_of(const std::string& model_type) {
  if (model_type == "llama" || model_type == "mistral") return Family::llama;
  if (model_type == "mixtral") return Family::mixtral;
  if (model_type == "qwen2") return Family::qwen2;
  if (model_type == "qwen2_moe") return Family::qwen2_moe;
  if (model_type == "qwen3") return Family::qwen3;
  if (model_type == "qwen3_moe") return Family::qwen3_moe;
  if (model_type == "deepseek_v3" || model_type == "deepseek_v2") return Family::deepseek;
  if (model_type == "deepseek_v4") return Family::deepseek_v4;
  return std::nullopt;
}

void require_every_layer_sparse(const HfReader& hf, const char* step_key) {
  if (hf.doc.contains(step_key) && hf.doc[step_key] != 1)
    hf.src.error(json_pointer_append("", step_key), "only every-layer MoE (1) is modelled");
  if (!hf.doc.contains("mlp_only_layers") || hf.doc["mlp_only_layers"].is_null()) return;
  if (!hf.doc["mlp_only_layers"].is_array())
    hf.src.error("/mlp_only_layers", fmt::format("expected a list of layer numbers, found {}", json_brief(hf.doc["mlp_only_layers"])));
  else if (!hf.doc["mlp_only_layers"].empty())
    hf.src.error("/mlp_only_layers", "dense layers interleaved among MoE layers are not modelled");
}

// The MoE keys DeepSeek-V2, V3 and V4 configs share: routed and shared experts of one width, and the
// score-correction bias that noaux_tc routing carries (e_score_correction_bias).
MoeSpec deepseek_moe(const HfReader& hf) {
  MoeSpec e;
  e.experts = hf.integer("n_routed_experts");
  e.top_k = hf.integer("num_experts_per_tok");
  e.expert_ffn_hidden = hf.integer("moe_intermediate_size");
  e.shared_experts = hf.integer("n_shared_experts", 0);
  e.shared_expert_ffn_hidden = e.expert_ffn_hidden;
  e.router_bias = hf.text("topk_method", "") == "noaux_tc";
  return e;
}

// DeepSeek-V4 (config.json of deepseek-ai/DeepSeek-V4-Pro and -Flash): compressed attention, MoE in
// every layer with hash-routed first layers, mHC residual streams, MTP.
void read_deepseek_v4(const HfReader& hf, ModelSpec& m) {
  AttentionSpec& a = m.attention;
  a.kind = AttentionKind::compressed;
  a.kv_heads = hf.integer("num_key_value_heads", 1);
  if (a.kv_heads != 1) hf.src.error("/num_key_value_heads", "DeepSeek-V4's attention has one shared KV head (1)");
  a.kv_heads = 1;
  a.head_dim = hf.integer("head_dim");
  a.qk_rope_head_dim = hf.integer("qk_rope_head_dim");
  a.q_lora_rank = hf.integer("q_lora_rank");
  a.o_lora_rank = hf.integer("o_lora_rank");
  a.o_groups = hf.integer("o_groups");
  a.index_heads = hf.integer("index_n_heads");
  a.index_head_dim = hf.integer("index_head_dim");
  a.index_topk = hf.integer("index_topk", std::nullopt, kMaxModelVocab);
  a.sliding_window = hf.integer("sliding_window", std::nullopt, kMaxModelVocab);
  a.attention_sink = true;  // attn_sink in every layer of inference/model.py
  a.compress_ratios = hf.integers("compress_ratios", kMaxModelVocab);
  fit_compress_ratios(a, m.layers);
  if (a.compress_ratios.size() < static_cast<std::size_t>(m.layers))
    hf.src.error("/compress_ratios", fmt::format("expected at least num_hidden_layers ({}) entries, found {}", m.layers,
                                                 a.compress_ratios.size()));
  if (a.o_groups > 0 && a.heads % a.o_groups != 0)
    hf.src.error("/o_groups", fmt::format("{} heads do not split into {} output groups", a.heads, a.o_groups));
  MoeSpec e = deepseek_moe(hf);
  e.hash_layers = hf.integer("num_hash_layers", 0, kMaxModelLayers);
  if (e.top_k > e.experts) hf.src.error("/num_experts_per_tok", fmt::format("{} exceeds the {} routed experts", e.top_k, e.experts));
  m.moe = e;
  m.mlp = {MlpKind::swiglu, e.expert_ffn_hidden};  // no dense layers
  m.mtp_depth = hf.integer("num_nextn_predict_layers", 0, 16);
  m.residual_streams = hf.integer("hc_mult", 1, 64);
  m.sinkhorn_iterations = hf.integer("hc_sinkhorn_iters", 0, 1000);
}

}  // namespace

std::optional<ModelSpec> read_hf_config(const std::filesystem::path& path, const SourceFile& from,
                                        const std::string& pointer) {
  SourceFile file = source_for(path, from);
  std::size_t errors_before = from.diagnostics->size();
  Json doc = load_json_file(path, file);
  if (doc.is_discarded()) return std::nullopt;
  if (!doc.is_object()) {
    file.error("", "expected a Hugging Face config object");
    return std::nullopt;
  }
  HfReader hf{doc, file};
  std::string model_type = hf.text("model_type", "");
  if (from.diagnostics->size() != errors_before) return std::nullopt;
  std::optional<Family> family = family_of(model_type);
  if (!family) {
    file.error("/model_type", fmt::format("model_type \"{}\" is not supported; plumb reads llama, mistral, mixtral, "
                                          "qwen2, qwen2_moe, qwen3, qwen3_moe, deepseek_v2, deepseek_v3 and deepseek_v4 configs "
                                          "(referenced from {}: {})", model_type, from.name, pointer));
    return std::nullopt;
  }
  ModelSpec m;
  m.name = hf.text("_name_or_path", path.parent_path().filename().string());
  m.display_name = m.name;
  m.source = fmt::format("Hugging Face config {}", file.name);
  m.hidden = hf.integer("hidden_size");
  m.layers = hf.integer("num_hidden_layers", std::nullopt, kMaxModelLayers);
  m.vocab = hf.integer("vocab_size", std::nullopt, kMaxModelVocab);
  m.max_seq = hf.integer("max_position_embeddings", 0, kMaxModelVocab);
  m.tied_embeddings = hf.flag("tie_word_embeddings", false);
  m.mlp = {MlpKind::swiglu, hf.integer("intermediate_size", 0, 100 * kMaxModelDim)};
  AttentionSpec& a = m.attention;
  a.heads = hf.integer("num_attention_heads");
  if (*family == Family::deepseek_v4) {
    read_deepseek_v4(hf, m);
  } else if (*family == Family::deepseek) {
    a.kind = AttentionKind::mla;
    a.kv_heads = a.heads;
    a.q_lora_rank = hf.integer("q_lora_rank", 0);  // null in DeepSeek-V2-Lite: no query compression
    a.kv_lora_rank = hf.integer("kv_lora_rank");
    a.qk_nope_head_dim = hf.integer("qk_nope_head_dim");
    a.qk_rope_head_dim = hf.integer("qk_rope_head_dim");
    a.v_head_dim = hf.integer("v_head_dim");
    MoeSpec e = deepseek_moe(hf);
    e.first_dense_layers = hf.integer("first_k_dense_replace", 0, kMaxModelLayers);
    // Group-limited routing (n_group/topk_group); DeepSeek-V3 sizes its EP groups so a group is a node.
    if (hf.integer("n_group", 1) > 1) e.max_nodes = hf.integer("topk_group", 0);
    require_every_layer_sparse(hf, "moe_layer_freq");
    m.moe = e;
    m.mtp_depth = hf.integer("num_nextn_predict_layers", 0, 16);
  } else {
    a.kv_heads = hf.integer("num_key_value_heads", a.heads);
    a.kind = a.kv_heads == a.heads ? AttentionKind::mha : AttentionKind::gqa;
    a.head_dim = hf.integer("head_dim", a.heads > 0 ? m.hidden / a.heads : 1);
    a.qk_norm = *family == Family::qwen3 || *family == Family::qwen3_moe;
    a.qkv_bias = *family == Family::qwen2 || *family == Family::qwen2_moe || hf.flag("attention_bias", false);
  }
  if (*family == Family::mixtral) {
    m.moe = MoeSpec{.experts = hf.integer("num_local_experts"), .top_k = hf.integer("num_experts_per_tok"),
                    .expert_ffn_hidden = m.mlp.ffn_hidden};
  } else if (*family == Family::qwen2_moe || *family == Family::qwen3_moe) {
    MoeSpec e;
    e.experts = hf.integer("num_experts");
    e.top_k = hf.integer("num_experts_per_tok");
    e.expert_ffn_hidden = hf.integer("moe_intermediate_size");
    if (std::int64_t shared = hf.integer("shared_expert_intermediate_size", 0); shared > 0) {
      e.shared_experts = 1;  // Qwen-MoE's shared expert is one wide MLP with a sigmoid gate
      e.shared_expert_ffn_hidden = shared;
      e.shared_expert_gate = true;
    }
    require_every_layer_sparse(hf, "decoder_sparse_step");
    m.moe = e;
  }
  if (from.diagnostics->size() != errors_before) return std::nullopt;
  if (m.hidden < 1 || m.layers < 1 || m.vocab < 1 || a.heads < 1 || a.kv_heads < 1 || a.heads % a.kv_heads != 0) {
    file.error("", "hidden_size, num_hidden_layers, vocab_size and attention heads must be positive, and "
                   "num_attention_heads a multiple of num_key_value_heads");
    return std::nullopt;
  }
  return m;
}

}  // namespace plumb
