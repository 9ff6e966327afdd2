#pragma once
// Reads a model from a scenario's "model" value: a preset name, a path to a model JSON file,
// {"hf_config": "path/config.json"}, or an inline object in plumb's model schema.
#include <optional>
#include <string>

#include "models/input/json_reader.hpp"
#include "models/spec/model_spec.hpp"

namespace plumb {

// The largest sizes a model may give, whichever format it comes in (larger ones would overflow the
// simulator's clock or its memory long before they meant anything).
inline constexpr std::int64_t kMaxModelDim = 1'000'000;  // hidden sizes, heads, ranks, experts
inline constexpr std::int64_t kMaxModelLayers = 10'000;
inline constexpr std::int64_t kMaxModelVocab = 100'000'000;

// compress_ratios longer than the layers and the MTP layer (a model cut short: {"base": ..., "layers": 8})
// keep the first layers' ratios and the last entry, the MTP layer's.
void fit_compress_ratios(AttentionSpec& a, std::int64_t layers);

std::optional<ModelSpec> read_model(const Json& value, const std::string& pointer, const SourceFile& src);
// plumb's own model schema (models/presets/*.json).
std::optional<ModelSpec> read_model_object(const Json& value, const std::string& pointer, const SourceFile& src);
// A Hugging Face config.json of the Llama, Mistral, Mixtral, Qwen2/3 (MoE) or DeepSeek-V2/V3/V4 family.
std::optional<ModelSpec> read_hf_config(const std::filesystem::path& path, const SourceFile& from,
                                        const std::string& pointer);

}  // namespace plumb
