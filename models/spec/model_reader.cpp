#include "models/spec/model_reader.hpp"

#include <fmt/format.h>

#include "models/input/catalogue.hpp"

namespace plumb {

void fit_compress_ratios(AttentionSpec& a, std::int64_t layers) {
  const auto n = static_cast<std::size_t>(layers);
  if (a.compress_ratios.size() <= n + 1) return;
  const std::int64_t mtp = a.compress_ratios.back();
  a.compress_ratios.resize(n);
  a.compress_ratios.push_back(mtp);
}

namespace {

constexpr std::int64_t kMaxDim = kMaxModelDim;
constexpr std::int64_t kMaxLayers = kMaxModelLayers;
constexpr std::int64_t kMaxVocab = kMaxModelVocab;

// DeepSeek-V4's compressed attention (model_spec.hpp says what each field is).
void read_compressed_attention(ObjectReader& r, ModelSpec& m) {
  AttentionSpec& a = m.attention;
  a.kv_heads = 1;
  a.head_dim = r.integer("head_dim", Need::required, 1, kMaxDim).value_or(1);
  a.qk_rope_head_dim = r.integer("qk_rope_head_dim", Need::required, 1, kMaxDim).value_or(1);
  a.q_lora_rank = r.integer("q_lora_rank", Need::required, 1, kMaxDim).value_or(1);
  a.o_lora_rank = r.integer("o_lora_rank", Need::required, 1, kMaxDim).value_or(1);
  a.o_groups = r.integer("o_groups", Need::required, 1, kMaxDim).value_or(1);
  a.index_heads = r.integer("index_heads", Need::required, 1, kMaxDim).value_or(1);
  a.index_head_dim = r.integer("index_head_dim", Need::required, 1, kMaxDim).value_or(1);
  a.index_topk = r.integer("index_topk", Need::required, 1, kMaxModelVocab).value_or(1);
  a.sliding_window = r.integer("sliding_window", Need::required, 1, kMaxModelVocab).value_or(1);
  a.sparse_ratio = r.integer("sparse_ratio", Need::optional, 1, kMaxModelVocab).value_or(4);
  a.attention_sink = r.boolean("attention_sink", Need::optional).value_or(true);
  if (a.qk_rope_head_dim > a.head_dim)
    r.error("qk_rope_head_dim", fmt::format("{} rotary dimensions exceed the head's {}", a.qk_rope_head_dim, a.head_dim));
  if (a.heads % a.o_groups != 0)
    r.error("o_groups", fmt::format("{} heads do not split into {} output groups", a.heads, a.o_groups));
  const std::string pointer = r.pointer("compress_ratios");
  const Json* ratios = r.child("compress_ratios", Need::required);
  if (!ratios) return;
  const auto layers = static_cast<std::size_t>(m.layers);
  if (!ratios->is_array() || ratios->size() < layers) {
    r.error("compress_ratios", fmt::format("expected a list of at least {} ratios (one per layer, then one for the MTP layer), "
                                           "found {}", m.layers, json_brief(*ratios)));
    return;
  }
  for (std::size_t i = 0; i < ratios->size(); ++i) {
    const Json& v = (*ratios)[i];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > kMaxModelVocab) {
      r.source().error(json_pointer_append(pointer, std::to_string(i)),
                       fmt::format("expected 0 (window only) or a compression ratio such as 4 or 128, found {}", json_brief(v)));
      a.compress_ratios.push_back(0);
    } else {
      a.compress_ratios.push_back(v.get<std::int64_t>());
    }
  }
  fit_compress_ratios(a, m.layers);
}

void read_attention(ObjectReader& r, ModelSpec& m) {
  AttentionSpec& a = m.attention;
  a.kind = r.choice<AttentionKind>("kind", Need::required,
                                   {{"mha", AttentionKind::mha}, {"gqa", AttentionKind::gqa}, {"mla", AttentionKind::mla},
                                    {"compressed", AttentionKind::compressed}})
               .value_or(AttentionKind::mha);
  a.heads = r.integer("heads", Need::required, 1, kMaxDim).value_or(1);
  a.qk_norm = r.boolean("qk_norm", Need::optional).value_or(false);
  a.qkv_bias = r.boolean("qkv_bias", Need::optional).value_or(false);
  if (a.kind == AttentionKind::compressed) {
    read_compressed_attention(r, m);
    return;
  }
  if (a.kind == AttentionKind::mla) {
    a.q_lora_rank = r.integer("q_lora_rank", Need::optional, 0, kMaxDim).value_or(0);
    a.kv_lora_rank = r.integer("kv_lora_rank", Need::required, 1, kMaxDim).value_or(1);
    a.qk_nope_head_dim = r.integer("qk_nope_head_dim", Need::required, 1, kMaxDim).value_or(1);
    a.qk_rope_head_dim = r.integer("qk_rope_head_dim", Need::required, 1, kMaxDim).value_or(1);
    a.v_head_dim = r.integer("v_head_dim", Need::required, 1, kMaxDim).value_or(1);
    a.kv_heads = a.heads;
    return;
  }
  if (a.kind == AttentionKind::gqa) {
    a.kv_heads = r.integer("kv_heads", Need::required, 1, kMaxDim).value_or(a.heads);
    if (a.heads % a.kv_heads != 0)
      r.error("kv_heads", fmt::format("{} query heads do not split into groups of {} key/value heads", a.heads, a.kv_heads));
  } else {
    a.kv_heads = a.heads;
  }
  if (auto d = r.integer("head_dim", Need::optional, 1, kMaxDim)) {
    a.head_dim = *d;
  } else if (m.hidden % a.heads == 0) {
    a.head_dim = m.hidden / a.heads;
  } else {
    r.error("heads", fmt::format("hidden {} is not a multiple of {} heads; give \"head_dim\"", m.hidden, a.heads));
    a.head_dim = 1;
  }
}

void read_moe(ObjectReader& r, ModelSpec& m) {
  MoeSpec e;
  e.experts = r.integer("experts", Need::required, 1, kMaxDim).value_or(1);
  e.top_k = r.integer("top_k", Need::required, 1, kMaxDim).value_or(1);
  e.expert_ffn_hidden = r.integer("expert_ffn_hidden", Need::required, 1, kMaxDim).value_or(1);
  e.shared_experts = r.integer("shared_experts", Need::optional, 0, kMaxDim).value_or(0);
  e.shared_expert_ffn_hidden =
      r.integer("shared_expert_ffn_hidden", e.shared_experts > 0 ? Need::required : Need::optional, 1, kMaxDim).value_or(0);
  e.first_dense_layers = r.integer("first_dense_layers", Need::optional, 0, kMaxLayers).value_or(0);
  e.router_bias = r.boolean("router_bias", Need::optional).value_or(false);
  e.shared_expert_gate = r.boolean("shared_expert_gate", Need::optional).value_or(false);
  e.max_nodes = r.integer("routing_max_nodes", Need::optional, 0, kMaxDim).value_or(0);
  e.hash_layers = r.integer("hash_layers", Need::optional, 0, kMaxLayers).value_or(0);
  if (e.top_k > e.experts)
    r.error("top_k", fmt::format("top_k {} exceeds the {} routed experts", e.top_k, e.experts));
  if (e.first_dense_layers >= m.layers)
    r.error("first_dense_layers", fmt::format("{} dense layers leave no MoE layer of {}", e.first_dense_layers, m.layers));
  m.moe = e;
}

void read_published(ObjectReader& r, ModelSpec& m) {
  auto read_count = [&](std::string_view key, std::optional<double>& value, std::string& text) {
    if (const Json* v = r.child(key, Need::optional)) {
      value = read_quantity(*v, Dimension::count, r.pointer(key), r.source());
      text = v->is_string() ? v->get<std::string>() : v->dump();
    }
  };
  read_count("total_params", m.published.total_params, m.published.total_text);
  read_count("activated_params", m.published.activated_params, m.published.activated_text);
  m.published.activated_without_embedding =
      r.choice<bool>("activated_counts", Need::optional, {{"all", false}, {"without_embedding", true}}).value_or(false);
  m.published.source = r.string("source", Need::required).value_or("");
}

}  // namespace

std::optional<ModelSpec> read_model_object(const Json& value, const std::string& pointer, const SourceFile& src) {
  std::size_t errors_before = src.diagnostics->size();
  ObjectReader r(value, pointer, src);
  if (!r.is_object()) return std::nullopt;
  ModelSpec m;
  m.name = r.string("name", Need::required).value_or("");
  m.display_name = r.string("display_name", Need::optional).value_or(m.name);
  m.hidden = r.integer("hidden", Need::required, 1, kMaxDim).value_or(1);
  m.layers = r.integer("layers", Need::required, 1, kMaxLayers).value_or(1);
  m.vocab = r.integer("vocab", Need::required, 1, kMaxVocab).value_or(1);
  m.position = r.choice<PositionKind>("position_embedding", Need::optional,
                                      {{"rope", PositionKind::rope}, {"learned", PositionKind::learned}})
                   .value_or(PositionKind::rope);
  m.max_seq = r.integer("max_seq", m.position == PositionKind::learned ? Need::required : Need::optional, 1, kMaxVocab)
                  .value_or(0);
  m.norm = r.choice<NormKind>("norm", Need::optional, {{"rmsnorm", NormKind::rmsnorm}, {"layernorm", NormKind::layernorm}})
               .value_or(NormKind::rmsnorm);
  m.bias = r.boolean("bias", Need::optional).value_or(false);
  m.dropout = r.boolean("dropout", Need::optional).value_or(false);
  m.tied_embeddings = r.boolean("tied_embeddings", Need::optional).value_or(false);
  m.mtp_depth = r.integer("mtp_depth", Need::optional, 0, 16).value_or(0);
  m.residual_streams = r.integer("residual_streams", Need::optional, 1, 64).value_or(1);
  m.sinkhorn_iterations = r.integer("sinkhorn_iterations", Need::optional, 0, 1000).value_or(m.residual_streams > 1 ? 20 : 0);
  if (const Json* a = r.child("attention", Need::required)) {
    ObjectReader ar(*a, r.pointer("attention"), src);
    read_attention(ar, m);
  }
  if (const Json* mlp = r.child("mlp", Need::required)) {
    ObjectReader mr(*mlp, r.pointer("mlp"), src);
    m.mlp.kind = mr.choice<MlpKind>("kind", Need::required, {{"gelu", MlpKind::gelu}, {"swiglu", MlpKind::swiglu}})
                     .value_or(MlpKind::gelu);
    m.mlp.ffn_hidden = mr.integer("ffn_hidden", Need::required, 1, 100 * kMaxDim).value_or(1);
  }
  if (const Json* moe = r.child("moe", Need::optional)) {
    ObjectReader er(*moe, r.pointer("moe"), src);
    read_moe(er, m);
  }
  if (const Json* pub = r.child("published", Need::optional)) {
    ObjectReader pr(*pub, r.pointer("published"), src);
    read_published(pr, m);
  }
  if (const Json* sources = r.child("sources", Need::optional)) {
    ObjectReader sr(*sources, r.pointer("sources"), src);
    m.source = sr.string("config", Need::required).value_or("");
  }
  if (m.mtp_depth > 0 && !m.moe)
    r.error("mtp_depth", "multi-token prediction is modelled for MoE models (DeepSeek-V3) only");
  r.finish();
  if (src.diagnostics->size() != errors_before) return std::nullopt;
  return m;
}

std::optional<ModelSpec> read_model(const Json& value, const std::string& pointer, const SourceFile& src) {
  if (value.is_string() || (value.is_object() && value.contains("base"))) {
    // A preset, a model file, or an object starting from one ({"base": "llama3-70b", "layers": 12}).
    Json doc;
    SourceFile file = src;
    std::string at = pointer, id;
    const Json* node = resolve_document(value, kModelPresets, "model preset", at, src, doc, file, id);
    if (!node) return std::nullopt;
    return read_model_object(*node, at, file);
  }
  if (value.is_object() && value.contains("hf_config")) {
    ObjectReader r(value, pointer, src);
    auto ref = r.string("hf_config", Need::required);
    r.finish();
    if (!ref) return std::nullopt;
    auto path = resolve_path(*ref, "Hugging Face config", r.pointer("hf_config"), src);
    if (!path) return std::nullopt;
    return read_hf_config(*path, src, r.pointer("hf_config"));
  }
  if (value.is_object()) return read_model_object(value, pointer, src);
  src.error(pointer, fmt::format("expected a model preset name, a path to a model file, {{\"hf_config\": \"...\"}} "
                                 "or a model object, found {}", json_brief(value)));
  return std::nullopt;
}

}  // namespace plumb
