// Parameter counts: every preset against its published figure, GPT presets against Megatron-LM's
// Eq. 2 exactly, and Hugging Face configs against the same closed forms.
#include <cmath>
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "catalogue_fixtures.hpp"
#include "models/input/catalogue.hpp"
#include "models/spec/model_reader.hpp"
#include "models/spec/param_count.hpp"

using namespace plumb;

namespace {

ModelSpec load_hf(const std::string& folder) {
  Diagnostics d;
  SourceFile src{"test", data_dir(), &d, {}};
  Json ref = {{"hf_config", "tests/fixtures/hf/" + folder + "/config.json"}};
  auto m = read_model(ref, "/model", src);
  if (!m) FAIL(d.list().front().to_string());
  return *m;
}

// A published figure is as precise as it is printed: "1.7B" means ±0.1B at most, "37B" ±1B.
// Exact integers (Hugging Face safetensors totals) must match exactly.
void check_published(double computed, double published, const std::string& text, const std::string& what) {
  INFO(what << ": computed " << fmt::format("{:.0f}", computed) << " vs published " << text);
  bool exact = text.find_first_not_of("0123456789") == std::string::npos;
  if (exact) {
    CHECK(computed == published);
    return;
  }
  std::string mantissa = text.substr(0, text.find_first_not_of("0123456789."));
  std::size_t dot = mantissa.find('.');
  int decimals = dot == std::string::npos ? 0 : static_cast<int>(mantissa.size() - dot - 1);
  double unit = published / std::stod(mantissa) * std::pow(10.0, -decimals);
  double tolerance = std::max(0.01 * published, unit);
  CHECK(std::fabs(computed - published) <= tolerance);
}

}  // namespace

TEST_CASE("every bundled preset matches its published parameter counts") {
  std::vector<std::string> names = catalogue_names(kModelPresets);
  REQUIRE(names.size() >= 18);
  for (const std::string& name : names) {
    ModelSpec m = test::model(name);
    CHECK(m.name == name);
    ParamCounts c = count_params(m);
    REQUIRE_MESSAGE(m.published.total_params.has_value(), name << " has no published total");
    check_published(c.total, *m.published.total_params, m.published.total_text, name + " total");
    if (m.published.activated_params)
      check_published(c.activated - (m.published.activated_without_embedding ? c.embedding : 0.0), *m.published.activated_params,
                      m.published.activated_text, name + " activated");
  }
}

TEST_CASE("DeepSeek-V4 parameter counts from the checkpoint's tensor shapes") {
  // Sums over the shapes of inference/model.py's tensors (../shared/reference/deepseek-v4.md), main model
  // without the MTP layer: 1,572,997,201,763 (Pro) and 284,332,240,471 (Flash) by an independent count.
  const ParamCounts pro = count_params(test::model("deepseek-v4-pro"));
  const ParamCounts flash = count_params(test::model("deepseek-v4-flash"));
  CHECK(pro.total == 1'572'997'201'763.0);
  CHECK(flash.total == 284'332'240'471.0);
  CHECK(pro.mtp == doctest::Approx(25.84e9).epsilon(1e-3));
  CHECK(flash.mtp == doctest::Approx(6.61e9).epsilon(1e-3));
  CHECK(pro.activated - pro.embedding == doctest::Approx(48.85e9).epsilon(1e-3));
  CHECK(flash.activated - flash.embedding == doctest::Approx(13.27e9).epsilon(1e-3));
  // Per-layer attention (with compressor and indexer) of V4-Pro: window-only 299.89M, HCA 307.30M, CSA 331.29M.
  const ModelSpec m = test::model("deepseek-v4-pro");
  auto attention = [&](std::int64_t l) {
    const LayerParams p = layer_params(m, l);
    return p.attention_sharded + p.attention_replicated;
  };
  CHECK(m.compress_ratio(0) == 128);
  CHECK(m.compress_ratio(2) == 4);
  CHECK(m.compress_ratio(m.mtp_layer()) == 0);
  CHECK(attention(0) == 307'300'992.0);
  CHECK(attention(2) == 331'292'416.0);
  CHECK(attention(m.mtp_layer()) == 299'894'912.0);
  // mHC per block: 2 × (24 × 4·7168 + 24 + 3); hash-routed layers carry no router bias.
  CHECK(layer_params(m, 5).mixing == 2.0 * (24 * 4 * 7168 + 27));
  CHECK(layer_params(m, 3).router - layer_params(m, 2).router == 384);
}

TEST_CASE("DeepSeek-V4 config.json reads to the presets' architecture") {
  for (const char* name : {"deepseek-v4-pro", "deepseek-v4-flash"}) {
    INFO(name);
    const ModelSpec hf = load_hf(name), preset = test::model(name);
    CHECK(hf.attention.compress_ratios == preset.attention.compress_ratios);
    CHECK(hf.residual_streams == 4);
    CHECK(hf.moe->hash_layers == 3);
    const ParamCounts a = count_params(hf), b = count_params(preset);
    CHECK(a.total == b.total);
    CHECK(a.activated == b.activated);
    CHECK(a.mtp == b.mtp);
  }
  // Cut short to 8 layers: the first 8 ratios and the MTP layer's.
  Diagnostics d;
  SourceFile src{"test", data_dir(), &d, {}};
  auto cut = read_model(Json{{"base", "deepseek-v4-flash"}, {"layers", 8}}, "/model", src);
  REQUIRE(cut.has_value());
  CHECK(cut->attention.compress_ratios == std::vector<std::int64_t>{0, 0, 4, 128, 4, 128, 4, 128, 0});
}

TEST_CASE("named totals: DeepSeek-V3 671B/37B, Llama 3 405B, GPT-3 175B") {
  ParamCounts ds = count_params(test::model("deepseek-v3"));
  CHECK(ds.total == doctest::Approx(671e9).epsilon(0.01));
  CHECK(ds.activated == doctest::Approx(37e9).epsilon(0.02));  // "37B" carries two digits; 37.55B computed
  // The MTP module (one MoE block + 2h² projection + norms) is outside the 671B, as DeepSeek counts.
  CHECK(ds.mtp == doctest::Approx(11.6e9).epsilon(0.01));
  CHECK(count_params(test::model("llama3-405b")).total == doctest::Approx(405e9).epsilon(0.01));
  CHECK(count_params(test::model("gpt3-175b")).total == doctest::Approx(175e9).epsilon(0.01));
}

TEST_CASE("GPT presets follow Megatron-LM Eq. 2 exactly (plus the final LayerNorm it omits)") {
  for (const std::string& name : catalogue_names(kModelPresets)) {
    if (!name.starts_with("megatron-") && name != "gpt3-175b") continue;
    ModelSpec m = test::model(name);
    if (m.mlp.ffn_hidden != 4 * m.hidden) continue;  // Eq. 2 has the 4h MLP (megatron-gpt-6.9b's is 14336)
    double l = static_cast<double>(m.layers), h = static_cast<double>(m.hidden);
    double V = static_cast<double>(m.vocab), s = static_cast<double>(m.max_seq);
    double eq2 = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
    INFO(name);
    CHECK(count_params(m).total == doctest::Approx(eq2 + 2 * h).epsilon(1e-12));
  }
}

TEST_CASE("Hugging Face configs give the same architecture as the presets") {
  SUBCASE("Llama 3 8B: 8,030,261,248 parameters (safetensors total)") {
    CHECK(count_params(load_hf("llama3-8b")).total == 8030261248.0);
  }
  SUBCASE("Mixtral 8x7B: 46,702,792,704 total, 12.9B active") {
    ParamCounts c = count_params(load_hf("mixtral-8x7b"));
    CHECK(c.total == 46702792704.0);
    CHECK(c.activated == doctest::Approx(12.9e9).epsilon(0.01));
  }
  SUBCASE("Qwen1.5-MoE-A2.7B: shared expert with its gate, qkv biases; 14.3B total, 2.7B activated") {
    ParamCounts c = count_params(load_hf("qwen1.5-moe-a2.7b"));
    CHECK(c.total == doctest::Approx(14.3e9).epsilon(0.005));
    CHECK(c.activated == doctest::Approx(2.7e9).epsilon(0.01));
  }
  SUBCASE("DeepSeek-V3 config equals the preset") {
    ParamCounts hf = count_params(load_hf("deepseek-v3"));
    ParamCounts preset = count_params(test::model("deepseek-v3"));
    CHECK(hf.total == preset.total);
    CHECK(hf.activated == preset.activated);
    CHECK(hf.mtp == preset.mtp);
  }
}

TEST_CASE("an unsupported Hugging Face family is a clear error") {
  Diagnostics d;
  SourceFile src{"s.json", data_dir() / "tests", &d, {}};
  auto m = read_model(Json{{"hf_config", "fixtures/hf/unknown_family.json"}}, "/model", src);
  CHECK_FALSE(m.has_value());
  REQUIRE(d.size() == 1);
  CHECK(d.list()[0].message.starts_with("model_type \"gpt_neox\" is not supported"));
}

TEST_CASE("MLA layer parameters follow DeepSeek-V3's projection shapes") {
  ModelSpec m = test::model("deepseek-v3");
  LayerParams p = layer_params(m, 0);
  // W^DQ 7168×1536 + W^UQ 1536×(128·192) + W^DKV,KR 7168×576 + W^UK,UV 512×(128·256) + W^O (128·128)×7168 + 2 norms
  double expected = 7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 + 128.0 * 128 * 7168 + 1536 + 512;
  CHECK(p.attention_sharded + p.attention_replicated == expected);
  CHECK(p.mlp_sharded == 3.0 * 7168 * 18432);
  LayerParams moe = layer_params(m, 3);
  CHECK(moe.routed_experts == 256);
  CHECK(moe.expert == 3.0 * 7168 * 2048);
  CHECK(moe.router == 256.0 * 7168 + 256);
}
