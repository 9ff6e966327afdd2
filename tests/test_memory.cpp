// The memory model against the published closed forms: ZeRO's worked example, the 10B mixed-precision
// example, Korthikanti et al.'s per-layer activations, 1F1B/interleaved stashing, and two verdicts.
#include <cmath>
#include <doctest/doctest.h>

#include "catalogue_fixtures.hpp"
#include "models/memory/activations.hpp"
#include "models/input/catalogue.hpp"
#include "models/memory/memory.hpp"
#include "cli/report/memory_report.hpp"
#include "models/spec/model_reader.hpp"

using namespace plumb;

namespace {

Job scenario(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_scenario(data_dir() / "scenarios" / (name + ".json"), sets);
}

// A GPT layer as Korthikanti et al. analyse it: LayerNorm, MHA with materialised softmax and
// dropout, GeLU MLP of width 4h, 16-bit activations.
ModelSpec korthikanti_gpt(std::int64_t h, std::int64_t a) {
  ModelSpec m;
  m.name = "gpt";
  m.hidden = h;
  m.layers = 1;
  m.vocab = 51200;
  m.norm = NormKind::layernorm;
  m.bias = true;
  m.dropout = true;
  m.attention.kind = AttentionKind::mha;
  m.attention.heads = m.attention.kv_heads = a;
  m.attention.head_dim = h / a;
  m.mlp = {MlpKind::gelu, 4 * h};
  return m;
}

double layer_bytes(const ModelSpec& m, std::int64_t s, std::int64_t b, std::int64_t t, bool sp, const char* rc) {
  ActivationSettings set;
  set.tp = t;
  set.sequence_parallel = sp;
  set.kernel = AttentionKernel::unfused;
  set.seq_local = s;
  set.recompute.core_attention = std::string(rc) == "selective";
  set.recompute.full = std::string(rc) == "full";
  return layer_bytes_per_token(m, 0, set) * static_cast<double>(s * b);
}

}  // namespace

TEST_CASE("ZeRO paper example: Ψ = 7.5B, N_d = 64, K = 12 → 120 / 31.4 / 16.6 / 1.9 GB") {
  OptimizerBytes adam;  // 16-bit gradients, fp32 master weights and moments
  const double psi = 7.5e9;
  auto gb = [&](int zero) { return model_state_bytes(psi, zero, 64, 2.0, adam).total() / 1e9; };
  // The paper prints one decimal: each figure is within half a unit of its last digit.
  CHECK(std::fabs(gb(0) - 120.0) <= 0.05);
  CHECK(std::fabs(gb(1) - 31.4) <= 0.05);
  CHECK(std::fabs(gb(2) - 16.6) <= 0.05);
  CHECK(std::fabs(gb(3) - 1.9) <= 0.05);
  // Closed forms: (2+2+K)Ψ, 4Ψ + KΨ/N_d, 2Ψ + (2+K)Ψ/N_d, (2+2+K)Ψ/N_d.
  CHECK(gb(1) == doctest::Approx(4 * 7.5 + 12 * 7.5 / 64));
  CHECK(gb(2) == doctest::Approx(2 * 7.5 + 14 * 7.5 / 64));
  CHECK(gb(3) == doctest::Approx(16 * 7.5 / 64));
}

TEST_CASE("a 10B model in 16-bit with AdamW: 20 + 20 + 120 = 160 GB before activations") {
  ModelStateBytes b = model_state_bytes(10e9, 0, 1, 2.0, OptimizerBytes{});
  CHECK(b.params / 1e9 == doctest::Approx(20));
  CHECK(b.grads / 1e9 == doctest::Approx(20));
  CHECK(b.optimizer / 1e9 == doctest::Approx(120));
}

TEST_CASE("Korthikanti et al. per-layer activation bytes, every variant") {
  const std::int64_t h = 6144, a = 48, s = 2048, b = 4, t = 8;
  ModelSpec m = korthikanti_gpt(h, a);
  const double sbh = double(s) * b * h, as_h = double(a) * s / h;
  CHECK(layer_bytes(m, s, b, 1, false, "none") == doctest::Approx(sbh * (34 + 5 * as_h)));
  CHECK(layer_bytes(m, s, b, t, false, "none") == doctest::Approx(sbh * (10 + 24.0 / t + 5 * as_h / t)));
  CHECK(layer_bytes(m, s, b, t, true, "none") == doctest::Approx(sbh * (34.0 / t + 5 * as_h / t)));
  CHECK(layer_bytes(m, s, b, t, false, "selective") == doctest::Approx(sbh * (10 + 24.0 / t)));
  CHECK(layer_bytes(m, s, b, t, true, "selective") == doctest::Approx(sbh * 34.0 / t));
  CHECK(layer_bytes(m, s, b, 1, false, "full") == doctest::Approx(2 * sbh));
}

TEST_CASE("1F1B's first stage stashes p micro-batches; interleaving multiplies by 1 + (p−1)/(pv)") {
  // Llama 3 8B has no dropout, so the embedding adds nothing and every stage is layers alone.
  Job one = scenario("mixtral-8x7b-256xh100", {"model=llama3-8b", "parallel.ep=1"});
  MemoryPlan plan = plan_memory(one);
  const double p = static_cast<double>(one.layout.pp);
  double per_stage = stage_activation_bytes(one, plan.stages[0]);
  CHECK(plan.ranks[0].activations_bytes == doctest::Approx(p * per_stage));
  Job inter = scenario("mixtral-8x7b-256xh100",
                       {"model=llama3-8b", "parallel.ep=1", "parallel.schedule=interleaved", "parallel.vp=2"});
  MemoryPlan iplan = plan_memory(inter);
  CHECK(iplan.ranks[0].activations_bytes / plan.ranks[0].activations_bytes ==
        doctest::Approx(1.0 + (p - 1.0) / (p * 2.0)));
}

TEST_CASE("DeepSeek-V3's published layout fits in 80 GB; every stage reports its parts") {
  Job job = scenario("deepseek-v3-2048xh800");
  MemoryPlan plan = plan_memory(job);
  CHECK(plan.microbatches == 120);
  CHECK(plan.fits());
  CHECK(plan.ranks.size() == 16);
  // DualPipe: each rank holds two stages, so twice a 1F1B rank's parameters (DualPipe README).
  Job one = scenario("deepseek-v3-2048xh800", {"parallel.schedule=1f1b"});
  MemoryPlan oplan = plan_memory(one);
  CHECK(plan.ranks[3].dense_params + plan.ranks[3].expert_params ==
        doctest::Approx(2 * (oplan.ranks[3].dense_params + oplan.ranks[3].expert_params)));
  Json report = memory_report_json(job, plan);
  CHECK(report["fits"] == true);
  CHECK(report["capacity_bytes"] == doctest::Approx(80.0 * 1073741824.0));
  for (const Json& stage : report["stages"]) {
    double sum = stage["params_bytes"].get<double>() + stage["grads_bytes"].get<double>() +
                 stage["optimizer_bytes"].get<double>() + stage["activations_bytes"].get<double>() +
                 stage["other_bytes"].get<double>();
    CHECK(stage["total_bytes"].get<double>() == doctest::Approx(sum));
  }
  // Without the fp8 caches and recomputation DeepSeek relied on, the same layout does not fit.
  Job plain = scenario("deepseek-v3-2048xh800", {"training.fp8_cache=[]", "parallel.recompute=none"});
  CHECK_FALSE(plan_memory(plain).fits());
}

TEST_CASE("GPT-3 175B on one GPU does not fit, and says so as a result") {
  Job job = load_scenario(data_dir() / "tests/fixtures/scenarios/gpt3-175b-one-gpu.json");
  MemoryPlan plan = plan_memory(job);
  CHECK_FALSE(plan.fits());
  // 175B parameters at 2 + 2 + 12 bytes is about 2.8 TB.
  CHECK(plan.ranks[0].total_bytes() / 1e9 == doctest::Approx(2800).epsilon(0.01));
}

TEST_CASE("each ZeRO stage shrinks the model states") {
  double previous = 1e300;
  for (int zero = 0; zero <= 3; ++zero) {
    Job job = scenario("llama3-405b-16k-h100", {"parallel.zero=" + std::to_string(zero)});
    const MemoryPlan plan = plan_memory(job);
    const RankMemory& r = plan.ranks[0];
    double states = r.params_bytes + r.grads_bytes + r.optimizer_bytes;
    CHECK(states < previous);
    previous = states;
  }
}

TEST_CASE("torchtitan's per-op selective checkpointing: what a Llama block keeps") {
  // pytorch/torchtitan parallelize_llama.py (f6a9daa): the outputs of aten.mm and SDPA are saved except
  // every second mm of a block (wq, wk, wv, wo, w1, w3, w2 → wk, wo, w3 recomputed), everything else
  // recomputed. Llama 3.1 8B, one GPU, bf16, flash attention, per token: the block input x (h), q (h),
  // v (kv·d), SDPA's output (h) and fp32 log-sum-exp (heads), w1's output (f) and w2's output (h).
  const ModelSpec m = test::model("llama3-8b");
  ActivationSettings set;
  set.seq_local = 8192;
  set.recompute.alternate_matmuls = set.recompute.norms = set.recompute.activation = true;
  const double h = 4096, kv = 8 * 128, f = 14336, heads = 32;
  CHECK(layer_bytes_per_token(m, 0, set) == doctest::Approx(2 * (h + h + kv + h + f + h) + 4 * heads));
  // w2's output is kept only because eager SAC caches every saved op's output; compiled, the partitioner
  // keeps what the backward reads, and no backward reads it.
  ActivationSettings compiled = set;
  compiled.compiled = true;
  CHECK(layer_bytes_per_token(m, 0, compiled) == doctest::Approx(2 * (h + h + kv + h + f) + 4 * heads));
  // Under sequence-parallel TP, eager SAC caches w2's whole-sequence partial sum and both reduce-scatters'
  // outputs (reduce_scatter_tensor is in the save list): h + 2h/t more than compiled.
  ActivationSettings tp = set, tp_compiled = compiled;
  tp.tp = tp_compiled.tp = 8;
  tp.sequence_parallel = tp_compiled.sequence_parallel = true;
  CHECK(layer_bytes_per_token(m, 0, tp) - layer_bytes_per_token(m, 0, tp_compiled) == doctest::Approx(2 * (h + 2 * h / 8)));
  // cuDNN's SDPA op (torchtitan's first choice on a B200) is not in the save list (6fc499f _save_list):
  // the policy keeps only the outputs of the ops it saves, so the attention's output and log-sum-exp are
  // rebuilt by running it again, where Megatron's core_attention recomputation keeps its output.
  ActivationSettings cudnn = compiled;
  cudnn.recompute.core_attention = true;
  CHECK(layer_bytes_per_token(m, 0, cudnn) == doctest::Approx(2 * (h + h + kv + f)));
  // Checked against a measurement it was not set from: torchtitan PR #1196 (2025-05-14) switched the 8B on a
  // B200 from SDPA's flash backend (saved) to cuDNN's (recomputed) and its logged peak fell 46.39 → 44.59
  // GiB, 1.80 GiB (its batch is not given; one sequence of 8192 tokens, as torchao's table ran, fits).
  const std::string torchao = "scenarios/published/torchao-b200-750w-8b-fsdp8-bf16.json";
  auto peak = [](const MemoryPlan& plan) { return plan.ranks[plan.peak_rank].total_bytes(); };
  const double saved = peak(plan_memory(
      load_scenario(data_dir() / torchao, {"training.attention_kernel=flash2", "parallel.recompute=alternate_matmuls"})));
  const double rebuilt = peak(plan_memory(load_scenario(data_dir() / torchao)));
  CHECK((saved - rebuilt) / std::pow(2.0, 30) == doctest::Approx(1.80).epsilon(0.15));
  ActivationSettings megatron;
  megatron.seq_local = 8192;
  megatron.recompute.core_attention = true;
  CHECK(layer_bytes_per_token(m, 0, megatron) - layer_bytes_per_token(m, 0, ActivationSettings{.seq_local = 8192}) == 0.0);
  // A save list without aten.mm (recompute matmuls): every matmul recomputed, x, SDPA's output and its
  // log-sum-exp kept.
  set.recompute.matmuls = true;
  CHECK(layer_bytes_per_token(m, 0, set) == doctest::Approx(2 * (h + h) + 4 * heads));
  // Not for blocks the policy's count does not describe.
  for (const char* model : {"deepseek-v3", "mixtral-8x7b"}) {
    INFO(model);
    CHECK_THROWS_WITH_AS(load_scenario(data_dir() / "scenarios/deepseek-v3-2048xh800.json",
                                       {std::string("model=") + model, "parallel.recompute=alternate_matmuls"}),
                         doctest::Contains("follows torchtitan's per-op policy for Llama blocks"), InputError);
  }
}

TEST_CASE("ZeRO-3 that keeps its weights gathered (FSDP2 reshard_after_forward=False) and torchtitan's loss") {
  // ZeRO paper's example, Ψ = 7.5B over N_d = 64, K = 12: stage 3 resharded holds (2 + 2 + 12)Ψ/64 =
  // 1.9 GB; kept gathered, the 16-bit weights and 16-bit gradients are whole again, beside the sharded
  // gradients and optimizer states: 2Ψ + 2Ψ + (2 + 12)Ψ/64.
  const double psi = 7.5e9;
  const OptimizerBytes adam;
  CHECK(model_state_bytes(psi, 3, 64, 2.0, adam).total() / 1e9 == doctest::Approx(1.875));
  CHECK(model_state_bytes(psi, 3, 64, 2.0, adam, false).total() / 1e9 == doctest::Approx((4 * psi + 14 * psi / 64) / 1e9));
  // Over several micro-batches with fp32 reductions, FSDP2 upcasts the whole gradients and accumulates them
  // in fp32 (FSDPParam.to_accumulated_grad_if_needed): 4Ψ of them instead of 2Ψ; with bf16 reductions, or
  // one micro-batch (reduced straight from bf16), they stay 2Ψ.
  const OptimizerBytes fp32_reduce{.grads = 4};
  CHECK(model_state_bytes(psi, 3, 64, 2.0, fp32_reduce, false, 8).grads == doctest::Approx(4 * psi + 4 * psi / 64));
  CHECK(model_state_bytes(psi, 3, 64, 2.0, fp32_reduce, false, 1).grads == doctest::Approx(2 * psi + 4 * psi / 64));
  CHECK(model_state_bytes(psi, 3, 64, 2.0, adam, false, 8).grads == doctest::Approx(2 * psi + 2 * psi / 64));
  CHECK(model_state_bytes(psi, 3, 64, 2.0, fp32_reduce, true, 8).grads == doctest::Approx(4 * psi / 64));  // resharded
  // FSDP2 under a mixed-precision policy keeps no 16-bit shard: the fp32 shard is the parameter the
  // optimizer updates (_fsdp_param.py all_gather_inputs casts it per all-gather): (4 + 4 + 8)Ψ/64 with fp32
  // gradients, 2Ψ/64 less than beside a separate master; kept gathered, the 16-bit copy is whole again.
  const OptimizerBytes fsdp2{.grads = 4, .params_are_master = true};
  CHECK(model_state_bytes(psi, 3, 64, 2.0, fsdp2).total() == doctest::Approx(16 * psi / 64));
  CHECK(model_state_bytes(psi, 3, 64, 2.0, fp32_reduce).total() - model_state_bytes(psi, 3, 64, 2.0, fsdp2).total() ==
        doctest::Approx(2 * psi / 64));
  CHECK(model_state_bytes(psi, 3, 64, 2.0, fsdp2, false, 1).total() ==
        doctest::Approx(model_state_bytes(psi, 3, 64, 2.0, fp32_reduce, false, 1).total()));
  CHECK(model_state_bytes(psi, 1, 64, 2.0, fsdp2).total() == doctest::Approx(model_state_bytes(psi, 1, 64, 2.0, fp32_reduce).total()));
  CHECK(load_scenario(data_dir() / "scenarios/published/torchtitan-h100-8b-fsdp8-sac.json").training.optimizer.params_are_master);
  // torchtitan's loss: F.cross_entropy over a .float() copy of the logits holds 12 bytes per vocabulary
  // entry and token at its backward, 8 more than the fp32 logits the activations count: Llama 3.1 8B,
  // micro-batch 2 × 8192 tokens, vocabulary 128,256, one GPU per replica.
  Job job = load_scenario(data_dir() / "scenarios/published/torchtitan-h100-8b-fsdp8-sac.json");
  CHECK_FALSE(job.training.fused_cross_entropy);
  MemoryPlan plan = plan_memory(job);
  CHECK(plan.ranks.back().loss_transient_bytes == doctest::Approx(8.0 * 128256 * 16384));
  job.training.fused_cross_entropy = true;
  CHECK(plan_memory(job).ranks.back().loss_transient_bytes == 0.0);
  // Under TP torchtitan's loss is vocabulary-parallel (DTensor's decomposition): its backward holds the
  // saved log-softmax output, zeros, zeros + exp(x) and the product — 16 bytes, 12 beyond the fp32
  // logits: 70B at TP8, 16 × 8192 tokens a micro-batch.
  const Job tp = load_scenario(data_dir() / "scenarios/published/torchtitan-h100-70b-fsdp32-tp8.json");
  CHECK(plan_memory(tp).ranks.back().loss_transient_bytes == doctest::Approx(12.0 * 128256 / 8 * 131072));
}

TEST_CASE("a recomputed layer's backward holds what recomputation dropped, once, beside the loss's transient") {
  // Korthikanti et al.'s 22B (h 6144, a 64) at TP8 without sequence parallelism, micro-batch 4 × 2048,
  // full recomputation: each layer keeps its input (2sbh); its backward first reruns the forward, and the
  // layer's whole activations, sbh(10 + 24/t + 5as/(ht)), are alive at once — 2sbh of them already kept.
  const Job job = scenario("published/korthikanti-2022-22b-full-recompute");
  const double s = 2048, b = 4, h = 6144, a = 64, t = 8, sbh = s * b * h;
  const MemoryPlan plan = plan_memory(job);
  const RankMemory& r = plan.ranks.front();
  CHECK(r.recompute_working_bytes == doctest::Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)) - 2 * sbh));
  // The loss's buffers are freed before the last layer's backward reruns its forward, and the materialised
  // scores (baddbmm's buffer and output, 4·b·a/t·s² bytes) live only inside the forward: the largest counts.
  CHECK(r.attention_scores_bytes == doctest::Approx(4 * b * a / t * s * s));
  CHECK(r.transient_bytes() ==
        doctest::Approx(std::max({r.recompute_working_bytes, r.loss_transient_bytes, r.attention_scores_bytes})));
  CHECK(r.other_bytes() == doctest::Approx(r.cuda_context_bytes + r.workspace_bytes + r.zero3_prefetch_bytes + r.zero3_root_bytes +
                                           r.zero3_stream_pool_bytes +
                                           r.reserved_bytes + r.transient_bytes()));
  // Nothing recomputed, nothing rebuilt; selective recomputation rebuilds the core attention only.
  const Job none = scenario("published/korthikanti-2022-22b-full-recompute", {"parallel.recompute=none"});
  CHECK(plan_memory(none).ranks.front().recompute_working_bytes == 0.0);
  const Job selective = scenario("published/korthikanti-2022-22b-full-recompute", {"parallel.recompute=selective"});
  CHECK(plan_memory(selective).ranks.front().recompute_working_bytes == doctest::Approx(sbh * 5 * a * s / (h * t)));
}

TEST_CASE("DTensor's column-parallel linears keep their all-gathered input; Megatron keeps the shard") {
  // torchtitan's 70B at TP8 with sequence parallelism and full AC: only the output head's input outlives
  // its layer, the final norm's output gathered whole, 16 × 8192 tokens × 8192 in bf16 on every TP rank
  // against an eighth of it kept by Megatron-LM's ColumnParallelLinear.
  const Job job = scenario("published/torchtitan-h100-70b-fsdp32-tp8");
  REQUIRE(job.layout.keep_gathered_inputs);
  const Job megatron = scenario("published/torchtitan-h100-70b-fsdp32-tp8", {"parallel.keep_gathered_inputs=false"});
  const double tokens = 16 * 8192.0, h = 8192;
  CHECK(plan_memory(job).ranks.front().activations_bytes - plan_memory(megatron).ranks.front().activations_bytes ==
        doctest::Approx(tokens * h * 2 * (1 - 1.0 / 8)));
}

TEST_CASE("FSDP2's root unit: torchtitan's embedding, final norm and head stay gathered through the step") {
  // Llama 3.1 8B on FSDP8 (torchtitan): 128,256 × 4096 embedding and head and a 4096 norm, gathered in bf16.
  const Job job = scenario("published/torchtitan-h100-8b-fsdp8-sac");
  REQUIRE(job.layout.fsdp_outer_units == FsdpOuterUnits::root);
  const double outside = 2 * 128256.0 * 4096 + 4096;
  CHECK(plan_memory(job).ranks.front().zero3_root_bytes == doctest::Approx(2 * outside));
  // Under pipeline parallelism every stage is kept gathered already (its root included); without the
  // root unit they are gathered per pass like the blocks.
  CHECK(plan_memory(scenario("published/torchtitan-h100-405b-fsdp8-tp8-pp8-1f1b")).ranks.front().zero3_root_bytes == 0.0);
  const Job per_pass = scenario("published/torchtitan-h100-8b-fsdp8-sac", {"parallel.fsdp_outer_units=\"none\""});
  CHECK(plan_memory(per_pass).ranks.front().zero3_root_bytes == 0.0);
  // The unit's gathered bf16 copy, and its buffers in the collectives' stream pools (next test case): its
  // bf16 all-gather buffer in place of a second block's, its fp32 reduce-scatter input beside a block's.
  const double block = 4096.0 * (2 * 4096 + 2 * 1024) + 3 * 4096.0 * 14336 + 2 * 4096;
  CHECK(plan_memory(job).ranks.front().total_bytes() - plan_memory(per_pass).ranks.front().total_bytes() ==
        doctest::Approx(2 * outside + 2 * (outside - block) + 4 * outside));
}

TEST_CASE("FSDP's reduce-scatter and all-gather buffers: their streams' pools beside the compute stream's peak") {
  // torchtitan's 405B (FSDP8 TP8 PP8, fp32 reductions, weights kept gathered under PP): a Llama 3.1 405B
  // block holds, per TP rank, (2h² + 2h·1024 + 3h·53248)/8 + 2h parameters (h = 16384). The all-gather
  // copy-in stream keeps two flat bf16 buffers of a block, the reduce-scatter stream one fp32 input; kept
  // gathered, the whole gradients are model states and nothing more is transient on the compute stream.
  // The first stage's root unit, its TP share of the 128,256 × h embedding, is smaller than a block: its
  // all-gather buffer takes a segment of its own, too small for the blocks' later, and its reduce-scatter
  // input fits in the blocks' freed one.
  // Gathered in bf16 (as run, the linears' weights are gathered in fp8: below).
  const double h = 16384, block = (2 * h * h + 2 * h * 1024 + 3 * h * 53248) / 8 + 2 * h;
  const double root = 128256.0 * h / 8;
  const std::string bf16 = "parallel.fp8_weight_gathers=false";
  const Job kept = scenario("published/torchtitan-h100-405b-fsdp8-tp8-pp8-1f1b", {bf16});
  const RankMemory r = plan_memory(kept).ranks.front();
  CHECK(r.zero3_stream_pool_bytes == doctest::Approx(block * (2 * 2 + 4) + root * 2));
  // A middle stage has no root unit.
  CHECK(plan_memory(kept).ranks[3].zero3_stream_pool_bytes == doctest::Approx(block * (2 * 2 + 4)));
  CHECK(r.grad_reduce_bytes == 0.0);
  CHECK(r.transient_bytes() == doctest::Approx(r.recompute_working_bytes));  // no head here
  // Resharded after each backward, the block's whole bf16 gradients wait on the compute stream for their copy.
  const Job resharded = scenario("published/torchtitan-h100-405b-fsdp8-tp8-pp8-1f1b", {bf16, "parallel.reshard_after_forward=true"});
  const RankMemory rr = plan_memory(resharded).ranks.front();
  CHECK(rr.grad_reduce_bytes == doctest::Approx(block * 2));
  CHECK(rr.zero3_stream_pool_bytes == doctest::Approx(block * (2 * 2 + 4) + root * 2));
  // As run (torchtitan 9dec370's 405B config: enable_fsdp_float8_all_gather): the block's linears gathered
  // in one byte, its norms in two, so the block's flat buffer is block + 2h bytes; now smaller than the
  // root's bf16 one, it reuses that segment after the first block instead of taking a second.
  const double block_fp8 = block + 2 * h;
  const RankMemory f = plan_memory(scenario("published/torchtitan-h100-405b-fsdp8-tp8-pp8-1f1b")).ranks.front();
  CHECK(f.zero3_stream_pool_bytes == doctest::Approx(root * 2 + block_fp8 + block * 4));
  // ZeRO-1 and -2 reduce in place in their gradient buffers and gather nothing per block.
  const RankMemory z1 = plan_memory(scenario("published/torchtitan-h100-405b-fsdp8-tp8-pp8-1f1b", {bf16, "parallel.zero=1"})).ranks.front();
  CHECK(z1.grad_reduce_bytes == 0.0);
  CHECK(z1.zero3_stream_pool_bytes == 0.0);
}

TEST_CASE("FSDP's stream pools: a root unit larger than a block sizes both streams' pools") {
  // Llama 3.1 8B on FSDP8 (torchtitan): the root unit (128,256 × 4096 embedding and head, a 4096 norm)
  // outweighs a block (attention h·(h + 2·1024 + h), SwiGLU 3·h·14336, two norms). The copy-in stream keeps
  // the root's bf16 buffer and the first block's, alive together; the reduce-scatter stream a block's fp32
  // input and the root's, too large for the block's freed segment.
  const double h = 4096, block = h * (2 * h + 2 * 1024) + 3 * h * 14336 + 2 * h, root = 2 * 128256.0 * h + h;
  const Job job = scenario("published/torchtitan-h100-8b-fsdp8-sac");
  const RankMemory r = plan_memory(job).ranks.front();
  CHECK(r.zero3_stream_pool_bytes == doctest::Approx((root + block) * 2 + (root + block) * 4));
  // Without a root unit the parameters outside the blocks go with the blocks' pools.
  const RankMemory plain = plan_memory(scenario("published/torchtitan-h100-8b-fsdp8-sac", {"parallel.fsdp_outer_units=\"none\""})).ranks.front();
  CHECK(plain.zero3_stream_pool_bytes == doctest::Approx(block * (2 * 2 + 4)));
}

TEST_CASE("FSDP2's split units (torchtitan from July 2025): the head kept gathered to its backward, the embedding resharded") {
  // torchao's 8B on FSDP8 under the torchtitan-2025-08 profile: the 128,256 × 4096 embedding a unit resharded
  // after its forward, the final norm and the head a unit gathered from its forward to its backward, across
  // the step's peak. The pools take the larger of the two (the head, by its norm) where the root took both.
  const double h = 4096, block = h * (2 * h + 2 * 1024) + 3 * h * 14336 + 2 * h, head = 128256.0 * h + h;
  const Job job = scenario("published/torchao-b200-750w-8b-fsdp8-bf16");
  REQUIRE(job.layout.fsdp_outer_units == FsdpOuterUnits::split);
  const RankMemory split = plan_memory(job).ranks.front();
  CHECK(split.zero3_root_bytes == doctest::Approx(2 * head));
  CHECK(split.zero3_stream_pool_bytes == doctest::Approx((head + block) * 2 + (head + block) * 4));
  // Against June 2025's root unit: half the gathered copy, and pools sized by one of the two matrices.
  const RankMemory root = plan_memory(scenario("published/torchao-b200-750w-8b-fsdp8-bf16", {"parallel.fsdp_outer_units=\"root\""})).ranks.front();
  CHECK(root.total_bytes() - split.total_bytes() == doctest::Approx(2 * 128256.0 * h + 6 * 128256.0 * h));
}

TEST_CASE("PyTorch pipelining keeps the last stage's outputs, every micro-batch's logits, to the step's end") {
  // torchtitan's 405B, 1F1B over 8 ranks, 8 micro-batches of 4 × 8192 tokens, vocabulary-parallel logits
  // over TP8: when the last micro-batch's loss is taken, the seven before it still hold their bf16 logits.
  const Job job = scenario("published/torchtitan-h100-405b-fsdp8-tp8-pp8-1f1b");
  REQUIRE(job.layout.pipeline_keeps_outputs);
  const MemoryPlan plan = plan_memory(job);
  const double logits = 4 * 8192.0 * 128256 / 8 * 2;
  CHECK(plan.ranks.back().pipeline_outputs_bytes == doctest::Approx(7 * logits));
  CHECK(plan.ranks.front().pipeline_outputs_bytes == 0.0);  // no head there
  // Megatron-LM frees each output once its loss is taken.
  const Job megatron = scenario("published/torchtitan-h100-405b-fsdp8-tp8-pp8-1f1b", {"parallel.pipeline_keeps_outputs=false"});
  CHECK(plan.ranks.back().total_bytes() - plan_memory(megatron).ranks.back().total_bytes() == doctest::Approx(7 * logits));
  // Without a pipeline there is no schedule to keep them.
  CHECK(plan_memory(scenario("published/torchtitan-h100-8b-fsdp8-sac")).ranks.front().pipeline_outputs_bytes == 0.0);
}

TEST_CASE("torchao's fp8 weight gathers: one byte a linear's weight gathered, prefetched and kept") {
  // Llama 3 8B on FSDP8, torchao's tensorwise float8 with enable_fsdp_float8_all_gather (pytorch/ao
  // 8c81863ba's float8 benchmark script): a block holds 4096·(4096 + 2·1024 + 4096) + 3·4096·14336 linear
  // weights and two 4096 norms. ZeRO-3 holds the block being used and the next one prefetched as gathered:
  // 2 × (one byte a linear weight + two a norm weight); gathered in bf16, 2 × 2 bytes a weight. torchao's
  // recipes keep no fp8 copy of a weight beyond the GEMM that casts it (the 16-bit operand is what its
  // autograd function saves), so bf16 gathers hold two bytes a weight, not the three of recipes that keep one.
  const double h = 4096, linears = h * (2 * h + 2 * 1024) + 3 * h * 14336, block = linears + 2 * h;
  const std::string file = "published/torchao-h100-8b-fsdp8-float8-tensorwise";
  const Job job = scenario(file);
  REQUIRE(job.layout.fp8_weight_gathers);
  CHECK(plan_memory(job).ranks.front().zero3_prefetch_bytes == doctest::Approx(2 * (linears + 2 * (block - linears))));
  CHECK(plan_memory(scenario(file, {"parallel.fp8_weight_gathers=false"})).ranks.front().zero3_prefetch_bytes ==
        doctest::Approx(2 * 2 * block));
  CHECK(weight_bytes(job.training) == 2.0);
  Job blockwise = job;
  blockwise.training.fp8_recipe = Fp8Recipe::blockwise;
  CHECK(weight_bytes(blockwise.training) == 3.0);
  // Kept gathered (reshard_after_forward=False), the whole copy is one byte a gathered-fp8 weight beside
  // the fp32 shard: Ψ = 7.5B over 64, a third of them fp8-gathered.
  const double psi = 7.5e9;
  const OptimizerBytes fsdp2{.grads = 4, .params_are_master = true};
  CHECK(model_state_bytes(psi, 3, 64, 2.0, fsdp2, false, 1, psi / 3).params == doctest::Approx(4 * psi / 64 + 2 * psi - psi / 3));
  CHECK(model_state_bytes(psi, 3, 64, 2.0, fsdp2, true, 1, psi / 3).params == doctest::Approx(4 * psi / 64));  // resharded: the shard
}
