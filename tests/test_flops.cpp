// FLOPs against the published closed forms: Qi et al.'s per-layer F/B/W, Narayanan et al. Eq. 3 (full
// recomputation), Korthikanti et al.'s model FLOPs, and the 6N-plus-attention rule for MFU.
#include <cmath>
#include <doctest/doctest.h>

#include "catalogue_fixtures.hpp"
#include "models/input/catalogue.hpp"
#include "models/costs/flops.hpp"
#include "models/costs/op_cost.hpp"
#include "models/scenario/job.hpp"
#include "models/spec/model_reader.hpp"
#include "cli/report/ops_report.hpp"
#include "models/spec/param_count.hpp"

using namespace plumb;

using test::model;

namespace {

// One DeepSeek-V3 micro-batch of 4096 tokens on a GPU of a 64-way expert-parallel group.
OpContext deepseek_micro_batch() {
  OpContext c;
  c.tokens = 4096;
  c.seq = 4096;
  c.ep = 64;
  return c;
}

}  // namespace

TEST_CASE("a GPT layer's F, B and W FLOPs are sbh(24h+4s), sbh(24h+8s) and sbh·24h (Qi et al. Table 1)") {
  ModelSpec m = model("megatron-18.4b");
  const double s = 2048, b = 4, h = static_cast<double>(m.hidden);
  OpContext c;
  c.tokens = s * b;
  c.seq = s;
  PassFlops p = sum_flops(layer_ops(m, 0, c));
  CHECK(p.forward == doctest::Approx(s * b * h * (24 * h + 4 * s)));
  CHECK(p.input_grad == doctest::Approx(s * b * h * (24 * h + 8 * s)));
  CHECK(p.weight_grad == doctest::Approx(s * b * h * 24 * h));
  // Tensor parallelism splits every GEMM and the attention heads evenly.
  c.tp = 8;
  CHECK(sum_flops(layer_ops(m, 0, c)).forward == doctest::Approx(s * b * h * (24 * h + 4 * s) / 8));
}

TEST_CASE("Narayanan et al. Eq. 3: with full recomputation an iteration is 96Bslh²(1 + s/6h + V/16lh) FLOPs") {
  for (const std::string& name : catalogue_names(kModelPresets)) {
    if (!name.starts_with("megatron-")) continue;
    ModelSpec m = model(name);
    if (m.mlp.ffn_hidden != 4 * m.hidden) continue;  // Eq. 3 has the 4h MLP (megatron-gpt-6.9b's is 14336)
    const double B = 1536, s = 2048, l = static_cast<double>(m.layers), h = static_cast<double>(m.hidden),
                 V = static_cast<double>(m.vocab);
    double eq3 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    INFO(name);
    CHECK(B * s * hardware_flops_per_token(m, s, Recompute{.full = true}, false) == doctest::Approx(eq3).epsilon(1e-12));
  }
}

TEST_CASE("Korthikanti et al.: model FLOPs of an iteration are 72Bslh²(1 + s/6h + V/12lh)") {
  ModelSpec m = model("gpt3-175b");
  const double B = 1536, s = 2048, l = static_cast<double>(m.layers), h = static_cast<double>(m.hidden),
               V = static_cast<double>(m.vocab);
  CHECK(B * s * model_flops_per_token(m, s) == doctest::Approx(72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))));
  // Selective recomputation re-runs only the attention scores: 4sh per layer per token.
  CHECK(hardware_flops_per_token(m, s, Recompute{.core_attention = true}, false) - model_flops_per_token(m, s) ==
        doctest::Approx(4 * s * h * l));
  // A causal flash kernel skips half of the score work (12sh of it per layer), and its backward
  // recomputes QKᵀ, half of the forward's 4sh, halved again: sh.
  CHECK(model_flops_per_token(m, s) - hardware_flops_per_token(m, s, Recompute{}, true) ==
        doctest::Approx(0.5 * 12 * s * h * l - s * h * l));
}

TEST_CASE("HFU counts the GEMMs torchtitan's per-op policy reruns: wk, wo and w3 of every block") {
  // Llama 3.1 8B: each recomputed forward GEMM is 2 × its weight's size per token — wk h × 1024,
  // wo h × h, w3 h × 14336 — over 32 blocks; the norms and SwiGLU it reruns are bytes, not FLOPs.
  ModelSpec m = model("llama3-8b");
  const double s = 8192, h = 4096;
  Recompute per_op;
  per_op.alternate_matmuls = per_op.norms = per_op.activation = true;
  CHECK(hardware_flops_per_token(m, s, per_op, true) - hardware_flops_per_token(m, s, Recompute{}, true) ==
        doctest::Approx(32 * 2 * (h * 1024 + h * h + h * 14336)));
}

TEST_CASE("MFU's model FLOPs are 6 × the matrix parameters a token uses, plus the attention scores") {
  for (const char* name : {"llama3-8b", "mixtral-8x7b", "deepseek-v3"}) {
    ModelSpec m = model(name);
    const double s = 4096;
    ParamCounts p = count_params(m);
    double scores = 0;  // 3 passes × 2·s·heads·(d_qk + d_v) per layer
    for (std::int64_t l = 0; l < m.layers; ++l)
      scores += 6 * s * static_cast<double>(m.attention.heads * (m.attention.qk_head_dim() + m.attention.out_head_dim()));
    // Activated parameters minus the embedding lookup (no FLOPs) and the norms/router biases (negligible).
    double matrix = p.activated - p.embedding;
    INFO(name);
    CHECK(model_flops_per_token(m, s) == doctest::Approx(6 * matrix + scores).epsilon(0.001));
  }
}

TEST_CASE("DeepSeek-V3's MTP module is executed but outside MFU's model FLOPs") {
  ModelSpec m = model("deepseek-v3");
  const double s = 4096, h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab);
  OpContext c;
  c.seq = s;
  // One more MoE layer, the 2h→h projection and another pass through the head, forward and backward.
  double mtp = sum_flops(layer_ops(m, m.layers - 1, c)).total() + 3 * (2 * 2 * h * h) + 3 * (2 * h * V);
  CHECK(hardware_flops_per_token(m, s, Recompute{}, false) - model_flops_per_token(m, s) == doctest::Approx(mtp));
}

TEST_CASE("plumb ops times a compute-bound GEMM at the profile's GEMM efficiency for its shape") {
  Job job = load_scenario(data_dir() / "scenarios/llama3-405b-16k-h100.json");
  Json report = ops_report_json(job);
  const Json& op = report["stages"][1]["ops"][1];  // qkv projection of a middle stage
  REQUIRE(op["name"] == "qkv projection");
  REQUIRE(op["forward"]["bound"] == "compute");
  // The shape model on H100 (ceiling 0.836, 118 K steps a tile, 128×128 tiles) for rows × 16384 →
  // (128 + 2·8)·128/8: the long K of the hidden size costs it 0.7%, the tiles fill 132 SMs.
  OpContext c = op_context(job.layout, job.training, job.cluster.gpu);
  const LayerOp qkv = layer_ops(job.model, 10, c)[1];
  const GemmShape g = gemm_shape(qkv, 0);
  CHECK(g.k == 16384);
  const double tiles = std::ceil(g.m / 128) * std::ceil(g.n / 128), waves = std::ceil(tiles / 132);
  const double efficiency = 0.836 * 16384 / (16384 + 118) * (g.m * g.n / (tiles * 128 * 128)) * tiles / (waves * 132);
  // The job's 16,384 H100s compute at the pace of their slowest chip (chip_spread).
  double expected = op["forward"]["flops"].get<double>() /
                    (job.cluster.gpu.peak_dense.at(MathDtype::bf16) * efficiency * job.cluster.gpu.slowest_chip_scale);
  CHECK(std::fabs(op["forward"]["time_s"].get<double>() / expected - 1) <= 1e-3);
}

TEST_CASE("a profile's kernel overhead is added once to every pass that launches a kernel") {
  Job job = load_scenario(data_dir() / "scenarios/llama3-405b-16k-h100.json");
  Job slow = job;
  slow.cluster.gpu.kernel_overhead = 5e-6;
  OpContext c = op_context(job.layout, job.training, job.cluster.gpu);
  for (const LayerOp& op : layer_ops(job.model, 10, c))
    for (int pass = 0; pass < 3; ++pass) {
      const auto p = static_cast<std::size_t>(pass);
      const double extra = op.flops[p] > 0 || op.bytes[p] > 0 ? 5e-6 : 0.0;
      CHECK(op_time(op, pass, slow.cluster.gpu, slow.training).seconds == doctest::Approx(op_time(op, pass, job.cluster.gpu, job.training).seconds + extra).epsilon(1e-12));
    }
}

TEST_CASE("under fp8 the GEMMs run at DeepGEMM's measured rates; the head, router and attention stay in bf16") {
  // The H800 with DeepGEMM (the bundled scenario models the slower kernels V3 was trained with).
  Job job = load_scenario(data_dir() / "scenarios/deepseek-v3-2048xh800.json", {"cluster.gpu=h800-sxm"});
  const GpuSpec& gpu = job.cluster.gpu;
  Json report = ops_report_json(job);
  auto find = [&](const Json& stage, const std::string& name) -> const Json& {
    for (const Json& op : stage["ops"])
      if (op["name"] == name) return op;
    FAIL("no op " << name);
    return stage;
  };
  // The rates a typical chip runs at: the job's 2,048 GPUs compute at their slowest chip's pace (chip_spread).
  auto rate = [&](const Json& op, const char* pass) {
    return op[pass]["flops"].get<double>() / op[pass]["time_s"].get<double>() / gpu.slowest_chip_scale;
  };
  CHECK(gpu.slowest_chip_scale == doctest::Approx(1 - 0.0171 * 3.4418).epsilon(1e-3));  // E[max of 2048 normals]
  const Json& moe = report["stages"][8];
  // DeepGEMM's README (H800) measured these very shapes: the grouped gate+up projection of 4 experts ×
  // 8192 rows, 7168 → 4096, at 1297 TFLOP/s and its down projection (2048 → 7168) at 1099; the MLA
  // projections for 4096 tokens, 1536 → 24576 at 990 and 512 → 32768 at 590 TFLOP/s.
  CHECK(rate(find(moe, "experts: gate+up projection"), "forward") == doctest::Approx(1297e12).epsilon(0.03));
  CHECK(rate(find(moe, "experts: down projection"), "forward") == doctest::Approx(1099e12).epsilon(0.03));
  CHECK(rate(find(moe, "q up-projection"), "forward") == doctest::Approx(990e12).epsilon(0.03));
  CHECK(rate(find(moe, "kv up-projection"), "forward") == doctest::Approx(590e12).epsilon(0.03));
  // The expert weight gradient runs DeepGEMM's K-grouped weight-gradient kernel over one expert's 8192
  // rows (not the rank's 32768): PR #95 measured 4 experts of 7168 × 4096 at 8192 tokens at 1044 TFLOP/s.
  CHECK(rate(find(moe, "experts: gate+up projection"), "weight_grad") == doctest::Approx(1044e12).epsilon(0.04));
  // DeepSeek-V3 §3.3.1 keeps the gating in bf16 (its time is its memory traffic at 89.6% of HBM).
  const Json& router = find(moe, "router");
  CHECK(router["forward"]["bound"] == "memory");
  CHECK(router["forward"]["time_s"].get<double>() ==
        doctest::Approx(router["forward"]["bytes"].get<double>() / (gpu.hbm_bandwidth * 0.896)).epsilon(1e-6));
  // Fused attention: FlashAttention-3's causal 62.3% forward and 56.7% backward of the bf16 peak at 16k
  // keys, at 4096 keys (4096 / (4096 + 565)) / (16384 / (16384 + 565)) of them; the backward's work
  // counted as the kernel does it: MLA's scores again (d_qk 192) besides the gradients, 2·(3·192 +
  // 2·128) per score against the forward's 2·(192 + 128).
  const double at_4k = (4096.0 / (4096 + 565)) / (16384.0 / (16384 + 565));
  const Json& attention = find(moe, "core attention");
  CHECK(attention["input_grad"]["flops"].get<double>() ==
        doctest::Approx(attention["forward"]["flops"].get<double>() * (3 * 192 + 2 * 128) / (192 + 128)).epsilon(1e-9));
  CHECK(rate(attention, "forward") == doctest::Approx(0.623 * at_4k * 989.4e12).epsilon(1e-3));
  CHECK(rate(attention, "input_grad") == doctest::Approx(0.567 * at_4k * 989.4e12).epsilon(1e-3));
  // The output head of the last stage in bf16, 4096 tokens × 7168 → 129280: the bf16 shape model's 0.836
  // ceiling less K = 7168's fixed 118 steps a tile, 1010 column tiles (the last partly used) in 245 waves.
  const Json& last = report["stages"][report["stages"].size() - 1];
  bool head = false;
  for (const Json& op : last["ops"])
    if (op["name"] == "LM head") {
      head = true;
      const double busy = 129280.0 / (1010 * 128) * (32 * 1010) / (245 * 132.0);
      CHECK(rate(op, "forward") == doctest::Approx(0.836 * 7168 / (7168 + 118) * busy * 989.4e12).epsilon(1e-6));
    }
  CHECK(head);
}

TEST_CASE("fp8 GEMMs get DeepSeek-V3's quantization kernels: 3 bytes an input element, 2 for the transposed copies") {
  ModelSpec m = test::model("deepseek-v3");
  OpContext c = deepseek_micro_batch();
  const std::vector<LayerOp> bf16 = layer_ops(m, 10, c);
  c.fp8_quantization = true;
  const std::vector<LayerOp> fp8 = layer_ops(m, 10, c);
  std::size_t gemms = 0, quantizers = 0;
  for (const LayerOp& op : bf16) gemms += op.cls == OpClass::gemm && !op.high_precision;
  for (std::size_t i = 0; i < fp8.size(); ++i) {
    if (fp8[i].name.find("fp8 quantize (") == std::string::npos) continue;
    ++quantizers;
    REQUIRE(i + 1 < fp8.size());
    const LayerOp& g = fp8[i + 1];  // the GEMM it feeds comes next
    INFO(g.name);
    CHECK(g.cls == OpClass::gemm);
    double in = g.rows * g.in, grad = g.rows * g.out;
    double forward = g.name == "kv down-projection" ? 0.0                      // reads the q down-projection's copy
                     : g.name == "experts: gate+up projection" ? 4096.0 * 7168 * 3  // once per token, before dispatch
                                                                : in * 3;
    CHECK(fp8[i].bytes[0] == doctest::Approx(forward));
    CHECK(fp8[i].bytes[1] == doctest::Approx(grad * 3));
    CHECK(fp8[i].bytes[2] == doctest::Approx((g.name == "kv down-projection" ? 0.0 : in) * 2 + grad * 2));
  }
  CHECK(quantizers == gemms);  // every fp8 GEMM, not the router
  CHECK(fp8.size() == bf16.size() + gemms);
  // The FLOPs (and so MFU) do not change.
  CHECK(sum_flops(fp8).total() == doctest::Approx(sum_flops(bf16).total()));
}

TEST_CASE("torchao's float8 recipes cast each linear's input, weight and output gradient every step: torchao's roofline bytes") {
  // torchao 6243040 roofline_utils.py: tensorwise 6 bytes an activation or gradient element (4 compiled)
  // and 5 + 3 a weight element; rowwise 8 (6 compiled) and 3 + 7, plus its backward rescale of the input
  // and weight gradients (4 bytes an element each). Llama 3 8B's out projection: 4096 -> 4096.
  ModelSpec m = test::model("llama3-8b");
  OpContext c;
  c.tokens = c.seq = 8192;
  c.fp8_quantization = true;
  auto cast_of = [&](const OpContext& ctx) {
    for (const LayerOp& op : layer_ops(m, 0, ctx))
      if (op.name == "fp8 quantize (out projection input)") return op.bytes;
    FAIL("no cast before the out projection");
    return std::array<double, 3>{};
  };
  const double in = 8192.0 * 4096, grad = 8192.0 * 4096, w = 4096.0 * 4096;
  c.fp8_recipe = Fp8Recipe::tensorwise;
  std::array<double, 3> b = cast_of(c);
  CHECK(b[0] == doctest::Approx(in * 6 + w * 5));
  CHECK(b[1] == doctest::Approx(grad * 6 + w * 3));
  CHECK(b[2] == 0);
  // Gathered in fp8 by ZeRO-3 (torchao's enable_fsdp_float8_all_gather), the weight is used as gathered in
  // the forward and copied transposed for the input gradient (float8_ops.py preprocess_addmm): 1 + 1 bytes.
  c.fp8_weight_gathers = true;
  b = cast_of(c);
  CHECK(b[0] == doctest::Approx(in * 6));
  CHECK(b[1] == doctest::Approx(grad * 6 + w * 2));
  c.fp8_weight_gathers = false;
  c.compiled = true;
  CHECK(cast_of(c)[0] == doctest::Approx(in * 4 + w * 5));  // the amax read fused into the op before
  c.fp8_recipe = Fp8Recipe::rowwise;
  b = cast_of(c);
  CHECK(b[0] == doctest::Approx(in * 6 + w * 3));
  CHECK(b[1] == doctest::Approx(grad * 6 + w * 7 + in * 4));
  CHECK(b[2] == doctest::Approx(w * 4));
  // DeepSeek-V3's blockwise casts keep the fp8 weights: no weight term (the test above).
  c.fp8_recipe = Fp8Recipe::blockwise;
  CHECK(cast_of(c)[0] == doctest::Approx(in * 3));
}

TEST_CASE("each GEMM's three passes have the shapes of its FLOPs") {
  ModelSpec m = test::model("deepseek-v3");
  OpContext c = deepseek_micro_batch();
  for (const LayerOp& op : layer_ops(m, 10, c)) {
    if (op.cls != OpClass::gemm) continue;
    INFO(op.name);
    for (int pass = 0; pass < 3; ++pass) {
      GemmShape g = gemm_shape(op, pass);
      CHECK(2 * g.m * g.n * g.k * g.groups == doctest::Approx(op.flops[static_cast<std::size_t>(pass)]).epsilon(1e-12));
    }
    // Each of an EP rank's 256/64 experts is a GEMM of its own over its share of the rows: the weight
    // gradient contracts over them; the other two produce a row per token copy.
    const double groups = expert_op(op) ? 4.0 : 1.0;
    CHECK(gemm_shape(op, 0).groups == groups);
    CHECK(gemm_shape(op, 2).k == op.rows / groups);
    CHECK(gemm_shape(op, 0).m == op.rows / groups);
  }
}

TEST_CASE("unfused gradient accumulation adds a kernel after each GEMM that reads the new gradient and reads and writes the accumulated one") {
  ModelSpec m = test::model("deepseek-v3");
  OpContext c = deepseek_micro_batch();
  const std::vector<LayerOp> fused = layer_ops(m, 10, c);
  c.grad_accumulation_bytes = 10;  // a 16-bit gradient into an fp32 accumulator
  const std::vector<LayerOp> separate = layer_ops(m, 10, c);
  std::size_t gemms = 0, adds = 0;
  double weights = 0;
  for (const LayerOp& op : fused) gemms += op.cls == OpClass::gemm;
  for (std::size_t i = 0; i < separate.size(); ++i) {
    if (separate[i].name.rfind("weight-gradient accumulation (", 0) != 0) continue;
    ++adds;
    REQUIRE(i > 0);
    INFO(separate[i].name);
    CHECK(separate[i - 1].cls == OpClass::gemm);  // right after the GEMM whose gradient it adds
    CHECK(separate[i].cls == OpClass::memory);
    CHECK(separate[i].bytes[0] == 0);
    CHECK(separate[i].bytes[1] == 0);
    weights += separate[i].bytes[2] / 10;
  }
  CHECK(adds == gemms);
  CHECK(separate.size() == fused.size() + gemms);
  // Once over every GEMM weight the rank holds: the layer less its norms and router bias, and 256/64
  // routed experts.
  const LayerParams lp = layer_params(m, 10);
  const double mla_norms = static_cast<double>(m.attention.q_lora_rank + m.attention.kv_lora_rank);
  const double router_bias = m.moe->router_bias ? static_cast<double>(m.moe->experts) : 0.0;
  CHECK(weights == doctest::Approx(lp.dense() - lp.norms - mla_norms - router_bias + 4 * lp.expert).epsilon(1e-12));
  CHECK(sum_flops(separate).total() == doctest::Approx(sum_flops(fused).total()));
  // From the scenario: 2 bytes of new gradient + the accumulator read and written in its own dtype.
  auto bytes = [](std::vector<std::string> set) {
    const Job job = load_scenario(data_dir() / "scenarios" / "gpt3-175b-megatron.json", std::move(set));
    return op_context(job.layout, job.training, job.cluster.gpu).grad_accumulation_bytes;
  };
  CHECK(bytes({}) == 6);  // Megatron-LM 2021: fp16 gradients added to an fp16 main_grad
  CHECK(bytes({"training.optimizer.grads=fp32"}) == 10);
  CHECK(bytes({"training.grad_accumulation=fused"}) == 0);
}
