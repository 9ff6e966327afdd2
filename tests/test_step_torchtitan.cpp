// The training step under torchtitan's behaviours: its per-op recomputation, FSDP2 that keeps its
// weights gathered (and its gradients accumulated whole), its sequence-parallel copies, its eager
// elementwise kernels and float8 all-gathers.
#include <doctest/doctest.h>
#include <map>

#include "models/costs/collective.hpp"
#include "models/costs/data_parallel_terms.hpp"
#include "models/costs/flops.hpp"
#include "models/costs/op_cost.hpp"
#include "models/spec/param_count.hpp"
#include "step_fixtures.hpp"

using namespace plumb;
using namespace plumb::test;

namespace {
// One sequence-parallel activation of the async-TP benchmark's 8B rows: micro-batch 12 × sequence 8192 ×
// hidden 4096, bf16 (ground-truth §B, torchtitan's llama3_8b config).
constexpr double kAsyncTp8bActivationBytes = 12.0 * 8192 * 4096 * 2;
}  // namespace

TEST_CASE("torchtitan's per-op recomputation: the shares of the fused GEMMs it runs again") {
  // Every second matmul of wq, wk, wv, wo, w1, w3, w2: wk is 8 of the 32 + 2·8 heads' widths of Llama 3.1
  // 8B's fused qkv projection, wo the whole out projection, w3 half of gate+up, w2 none of down.
  Job job = load_scenario(data_dir() / "scenarios/published/torchtitan-h100-8b-fsdp8-sac.json");
  REQUIRE(job.layout.recompute.alternate_matmuls);
  const OpContext ctx = op_context(job.layout, job.training, job.cluster.gpu);
  std::map<std::string, double> share;
  for (const LayerOp& op : layer_ops(job.model, 0, ctx)) share[op.name] = recompute_share(op, job.layout.recompute, job.model.attention, true);
  CHECK(share.at("qkv projection") == doctest::Approx(8.0 / 48.0));
  CHECK(share.at("out projection") == 1.0);
  CHECK(share.at("gate+up projection") == 0.5);
  CHECK(share.at("down projection") == 0.0);
  CHECK(share.at("core attention") == 0.0);  // SDPA is saved
  CHECK(share.at("attention norm") == 1.0);
  // Outside a transformer block the LM head's GEMM is not recomputed (the final norm is, as a norm).
  for (const LayerOp& op : head_ops(job.model, ctx))
    if (op.cls == OpClass::gemm) CHECK(recompute_share(op, job.layout.recompute, job.model.attention, false) == 0.0);
}

TEST_CASE("ZeRO-3 that keeps its weights gathered moves ZeRO-1's traffic: one gather and one reduce-scatter a step") {
  Job job = load_scenario(data_dir() / "scenarios/published/torchtitan-h100-405b-fsdp8-tp8-pp8-1f1b.json");
  REQUIRE(job.layout.zero == 3);
  REQUIRE_FALSE(job.layout.reshard_after_forward);
  const StageCost kept = stage_costs(job);
  CHECK(kept.param_gather > 0);
  CHECK(kept.grad_sync > 0);
  CHECK(kept.forward.background == 0.0);
  CHECK(kept.backward.background == 0.0);
  job.layout.reshard_after_forward = true;  // per pass: gathers beside every forward and backward
  const StageCost resharded = stage_costs(job);
  CHECK(resharded.param_gather == 0.0);
  CHECK(resharded.forward.background == doctest::Approx(kept.param_gather));
  CHECK(resharded.backward.background > resharded.forward.background);  // its gather and its reduce-scatter
}

TEST_CASE("fp8 weight gathers move a linear's weight in one byte, cast on its shard beside the gather") {
  // torchtitan's 405B as run (enable_fsdp_float8_all_gather): the stage's one gather a step moves its
  // linears' weights in fp8 and its norms in bf16, a little over half the bf16 gather's bytes; the casts
  // before it (5 bytes a shard weight) and the step's amax pass (4) are HBM work over an eighth of them.
  const std::string file = "published/torchtitan-h100-405b-fsdp8-tp8-pp8-1f1b.json";
  const Job fp8 = scenario(file);
  REQUIRE(fp8.layout.fp8_weight_gathers);
  const Job bf16 = scenario(file, {"parallel.fp8_weight_gathers=false"});
  const StageCost on = stage_costs(fp8), off = stage_costs(bf16);
  CHECK(on.param_gather < 0.56 * off.param_gather);
  CHECK(on.param_gather > 0.5 * off.param_gather);
  CHECK(on.optimizer > off.optimizer);
  // A bf16 or rowwise run, or one without ZeRO-3, cannot gather its weights in fp8: the scenario says so.
  CHECK_THROWS_WITH_AS(scenario(file, {"parallel.zero=1"}), doctest::Contains("/parallel/fp8_weight_gathers"), InputError);
  CHECK_THROWS_WITH_AS(scenario(file, {"training.fp8_recipe=\"rowwise\""}), doctest::Contains("tensorwise"), InputError);
}

TEST_CASE("HSDP: ZeRO-3 shards within groups of dp_shard ranks and sums the shards' gradients over the replicas") {
  // torchtitan's 8B on 128 H100 (16 nodes) with 8-rank shard groups: each rank holds an eighth of the states,
  // not a 128th; the weights are gathered inside a node; each backward's reduce-scatter (fp32) is followed by
  // an all-reduce of the shard's gradients over the 16 replicas, a node apart.
  const std::string file = "published/torchtitan-h100-8b-fsdp128-sac.json";
  const Job full = scenario(file), hsdp = scenario(file, {"parallel.dp_shard=8"});
  REQUIRE(hsdp.layout.dense_dp_shards() == 8);
  CHECK(hsdp.layout.dp_replicas() == 16);
  CHECK(plan_memory(hsdp).ranks[0].optimizer_bytes == doctest::Approx(16 * plan_memory(full).ranks[0].optimizer_bytes));
  const StageParams held = stage_params(hsdp)[0];
  const CollectiveLinks links = CollectiveLinks::of(hsdp.cluster.gpu, hsdp.cluster.fabric);
  const double gather = collective_seconds(CollectiveOp::all_gather, 2 * held.dense, GroupPlacement{8, 1}, links);
  const double scatter = collective_seconds(CollectiveOp::reduce_scatter, 4 * held.dense, GroupPlacement{8, 1}, links);
  const double replicas = collective_seconds(CollectiveOp::all_reduce, 4 * held.dense / 8, GroupPlacement{16, 16}, links);
  const StageCost s = stage_costs(hsdp);
  CHECK(s.forward.background == doctest::Approx(gather));
  CHECK(s.backward.background == doctest::Approx(gather + scatter + replicas));
  // dp_shard equal to dp is plain ZeRO-3.
  CHECK(stage_costs(scenario(file, {"parallel.dp_shard=128"})).backward.background == doctest::Approx(stage_costs(full).backward.background));
  CHECK_THROWS_WITH_AS(scenario(file, {"parallel.dp_shard=3"}), doctest::Contains("/parallel/dp_shard: dp_shard 3 does not divide dp 128"), InputError);
  CHECK_THROWS_WITH_AS(scenario(file, {"parallel.zero=0", "parallel.dp_shard=8"}), doctest::Contains("with ZeRO-0 nothing is sharded"), InputError);
}

TEST_CASE("FSDP2 kept gathered accumulates each backward's gradients whole, in fp32, on the compute stream") {
  // Per step, in bytes per parameter: one micro-batch copies its bf16 gradients into the fp32 reduce-scatter
  // input (2 + 4); with m of them the first is upcast (2 + 4), each later one added in (4 + 2 + 4), and the
  // sum copied into the input after the last (4 + 4). With bf16 reductions no upcast: the later ones are
  // autograd's in-place additions (2 + 2 + 2), then the copy (2 + 2).
  CHECK(unsharded_accumulation_bytes(4, 1) == 6.0);
  CHECK(unsharded_accumulation_bytes(4, 8) == doctest::Approx((6.0 + 7 * 10.0 + 8.0) / 8));
  CHECK(unsharded_accumulation_bytes(2, 8) == doctest::Approx((7 * 6.0 + 4.0) / 8));
  // torchtitan's 405B under PP (8 micro-batches, fp32 reductions): every backward and W pass carries its
  // share over the stage's parameters at the HBM rate; the forward carries none.
  const std::string file = "published/torchtitan-h100-405b-fsdp8-tp8-pp8-1f1b.json";
  const Job job = scenario(file);
  REQUIRE(job.microbatches() == 8);
  Job plain = job;
  plain.layout.zero = 1;  // the same traffic once per step, no FSDP2 passes
  const StageCost kept = stage_costs(job, 1), zero1 = stage_costs(plain, 1);
  const StageParams held = stage_params(job)[1];
  const GpuSpec& gpu = job.cluster.gpu;
  const double pass = (held.dense + held.expert) * unsharded_accumulation_bytes(4, 8) / (gpu.hbm_bandwidth * gpu.hbm_efficiency);
  CHECK(relative(kept.backward.compute() - zero1.backward.compute(), pass) < 1e-9);
  CHECK(relative(kept.weight_grad.compute() - zero1.weight_grad.compute(), pass) < 1e-9);
  CHECK(kept.forward.compute() == doctest::Approx(zero1.forward.compute()));
}

TEST_CASE("torchtitan's sequence-parallel collectives copy the gathered activation once each, on the compute stream") {
  // PyTorch's functional collectives gather and scatter along dim 0, so DTensor's sequence-sharded
  // activations are put in order by chunk + cat: each all-gather's output and each reduce-scatter's
  // input read and written once more at the HBM rate (frameworks/torchtitan-2024-12.json's source).
  const std::string file = "published/torchtitan-asynctp-8b-bf16-vanilla-tp.json";
  const Job with = scenario(file), without = scenario(file, {"parallel.sequence_parallel_copies=false"});
  REQUIRE(with.layout.sequence_parallel_copies);
  const StageCost a = stage_costs(with), b = stage_costs(without);
  const GpuSpec& gpu = with.cluster.gpu;
  const double copy = 2 * kAsyncTp8bActivationBytes / (gpu.hbm_bandwidth * gpu.hbm_efficiency);
  // Two all-gathers and two reduce-scatters a layer each way (attention and MLP), 32 layers, and the
  // gather of the final norm's output before the output head; the collectives themselves are unchanged.
  CHECK(relative(a.forward.compute() - b.forward.compute(), (32 * 4 + 1) * copy) < 1e-9);
  CHECK(relative(a.input_grad.compute() - b.input_grad.compute(), (32 * 4 + 1) * copy) < 1e-9);
  CHECK(relative(a.forward.comm(CommKind::tp), b.forward.comm(CommKind::tp)) < 1e-12);
  // Megatron-LM's collectives write the layout the GEMMs read: no copies.
  CHECK_FALSE(scenario("published/simumax-b200-llama3-70b-tp8-ep1-pp1-mbc4.json").layout.sequence_parallel_copies);
}

TEST_CASE("torchtitan without torch.compile runs its elementwise ops as eager PyTorch kernels, with their bytes") {
  // frameworks/torchtitan-2024-12.json: bytes per output element of each op's eager chain (RMSNorm 36
  // forward, RoPE's fp32 complex multiply 20, silu and mul 10, ...); repeat_kv copies K and V to every
  // query head. Llama 3 8B: hidden 4096, 32 query heads and 8 KV heads of 128, FFN 14336.
  const std::string file = "published/torchtitan-h100-8b-fsdp8-sac.json";
  const Job eager = scenario(file), compiled = scenario(file, {"training.compile=true"});
  REQUIRE(eager.training.eager() != nullptr);
  REQUIRE(compiled.training.eager() != nullptr);  // RoPE's complex multiply stays aten's (test_torch_llama_h200.cpp)
  REQUIRE_FALSE(compiled.training.eager()->attention_norm.has_value());
  auto op = [](const std::vector<LayerOp>& ops, const std::string& name) -> const LayerOp* {
    for (const LayerOp& o : ops)
      if (o.name == name) return &o;
    return nullptr;
  };
  const OpContext ce = op_context(eager.layout, eager.training, eager.cluster.gpu);
  const OpContext cc = op_context(compiled.layout, compiled.training, compiled.cluster.gpu);
  const std::vector<LayerOp> e = layer_ops(eager.model, 0, ce), c = layer_ops(compiled.model, 0, cc);
  const double T = 2 * 8192, h = 4096, q = 4096, kv = 1024, f = 14336;
  REQUIRE(op(e, "attention norm"));
  CHECK(op(e, "attention norm")->bytes[0] == doctest::Approx(T * h * 36));
  CHECK(op(e, "attention norm")->bytes[1] == doctest::Approx(T * h * 104));  // + the sum of wq, wk, wv's gradients
  CHECK(op(e, "MLP norm")->bytes[1] == doctest::Approx(T * h * 98));
  CHECK(op(e, "RoPE")->bytes[0] == doctest::Approx(T * (q + kv) * 20));
  CHECK(op(e, "SwiGLU")->bytes[0] == doctest::Approx(T * f * 10));
  CHECK(op(e, "SwiGLU")->bytes[1] == doctest::Approx(T * f * 18));
  CHECK(op(e, "residual add")->bytes[1] == doctest::Approx(T * h * 6));
  REQUIRE(op(e, "K/V repeat"));
  CHECK(op(e, "K/V repeat")->bytes[0] == doctest::Approx(T * (2 * kv + 2 * q) * 2));
  // Compiled, each chain is one fused pass: the norm reads and writes the activation once, and the K/V
  // copies are gone (Inductor feeds attention the expanded view); RoPE keeps its eager bytes.
  CHECK(op(c, "attention norm")->bytes[0] == doctest::Approx(T * h * 4));
  CHECK(op(c, "RoPE")->bytes[0] == doctest::Approx(T * (q + kv) * 20));
  CHECK(op(c, "SwiGLU")->bytes[0] == doctest::Approx(T * f * 6));
  CHECK(op(c, "K/V repeat") == nullptr);
  // The step: the eager forward is slower by exactly its ops' extra time (the extra bytes at the HBM
  // rate, the unvectorized kernels at theirs; no kernel overhead in this profile).
  double extra = 0;
  const GpuSpec& gpu = eager.cluster.gpu;
  for (const LayerOp& o : e) extra += op_time(o, 0, gpu, eager.training).seconds;
  for (const LayerOp& o : c) extra -= op_time(o, 0, gpu, compiled.training).seconds;
  const StepCosts se = step_costs(eager), sc = step_costs(compiled);
  const double layers = static_cast<double>(eager.model.layers);
  const LayerOp* final_norm = nullptr;
  const std::vector<LayerOp> head = head_ops(eager.model, ce);
  for (const LayerOp& o : head)
    if (o.name.ends_with("final norm")) final_norm = &o;
  REQUIRE(final_norm);
  const double head_extra = op_time(*final_norm, 0, gpu, eager.training).seconds - gpu.hbm_seconds(T * h * 4);
  CHECK(relative(se.stages[0].forward.compute() - sc.stages[0].forward.compute(), layers * extra + head_extra) < 1e-9);
  CHECK(head_extra > gpu.hbm_seconds(T * h * (36 - 4)));  // its unvectorized kernels are slower than their bytes
  // Megatron-LM's profile has no eager figures: its ops are Transformer Engine's fused kernels.
  CHECK(scenario("published/simumax-b200-llama3-70b-tp8-ep1-pp1-mbc4.json").training.eager() == nullptr);
}

TEST_CASE("torchtitan's float8 tensorwise TP gathers fp8: each sequence-parallel all-gather moves half the bytes") {
  // torchtitan (f6a9daa, 820504e parallelize_llama.py) uses torchao's Float8ColwiseParallel /
  // Float8RowwiseParallel for tensorwise float8: the column-parallel input is cast before its forward
  // all-gather, the row-parallel output gradient before its backward one; reduce-scatters stay bf16.
  const std::string file = "published/torchtitan-asynctp-8b-float8-tensorwise-vanilla-tp.json";
  const Job fp8 = scenario(file), bf16 = scenario(file, {"parallel.fp8_all_gathers=false"});
  REQUIRE(fp8.layout.fp8_all_gathers);
  const StageCost a = stage_costs(fp8), b = stage_costs(bf16);
  const CollectiveLinks links = CollectiveLinks::of(fp8.cluster.gpu, fp8.cluster.fabric);
  const double bytes = kAsyncTp8bActivationBytes;
  auto gather = [&](double x) { return collective_cost(CollectiveOp::all_gather, x, {8, 1}, links).seconds; };
  const double saved = gather(bytes) - gather(bytes / 2);
  // Forward: two gathers a layer (attention and MLP inputs) and the head's; their DTensor copies halve too.
  const double gathers = 32 * 2 + 1;
  CHECK(relative(b.forward.comm(CommKind::tp) - a.forward.comm(CommKind::tp), gathers * saved) < 1e-9);
  // Without the module-input cast (PrepareFloat8ModuleInput) each of wq, wk, wv and w1, w3 casts the
  // gathered input for itself: 2 + 1 more compiled tensorwise casts a layer, 4 bytes an element.
  const double casts = 32 * 3 * fp8.cluster.gpu.hbm_seconds(bytes / 2 * 4);
  CHECK(relative(b.forward.compute() - a.forward.compute(), gathers * fp8.cluster.gpu.hbm_seconds(bytes) + casts) < 1e-9);
  // Backward: the two output-gradient gathers of each layer (attention out and MLP down projections).
  CHECK(relative(b.input_grad.comm(CommKind::tp) - a.input_grad.comm(CommKind::tp), 32 * 2 * saved) < 1e-9);
  // Only with fp8 and sequence parallelism.
  CHECK_THROWS_AS(scenario("published/torchtitan-asynctp-8b-bf16-vanilla-tp.json", {"parallel.fp8_all_gathers=true"}), InputError);
}

TEST_CASE("torchtitan's separate wq, wk, wv and w1, w3: one GEMM each over the whole input, and under float8 one cast each") {
  // torchtitan's Llama (model.py at f6a9daa and 820504e) builds wq, wk, wv and w1, w3 as separate
  // nn.Linear modules; Megatron-LM fuses them (linear_qkv, linear_fc1).
  const std::string file = "published/torchtitan-asynctp-8b-float8-rowwise-vanilla-tp.json";
  const Job job = scenario(file), fused = scenario(file, {"training.projections=fused"});
  REQUIRE(job.training.separate_projections);
  CHECK_FALSE(scenario("published/simumax-b200-llama3-70b-tp8-ep1-pp1-mbc4.json").training.separate_projections);
  const GpuSpec& gpu = job.cluster.gpu;
  const OpContext ctx = op_context(job.layout, job.training, gpu), fctx = op_context(fused.layout, fused.training, gpu);
  std::map<std::string, LayerOp> ops, fops;
  for (LayerOp& op : layer_ops(job.model, 0, ctx)) ops.emplace(op.name, op);
  for (LayerOp& op : layer_ops(fused.model, 0, fctx)) fops.emplace(op.name, op);
  // Llama 3.1 8B at TP8: wq 32 heads / 8 × 128 wide, wk and wv 8 / 8 × 128; w1 and w3 14336 / 8.
  const LayerOp& qkv = ops.at("qkv projection");
  CHECK(qkv.parts == std::vector<double>{512, 128, 128});
  CHECK(ops.at("gate+up projection").parts == std::vector<double>{1792, 1792});
  CHECK(fops.at("qkv projection").parts.empty());
  // Each part a kernel at its own shape, reading the whole gathered input: the weight gradient of wk is
  // in × 128 over K = 98,304 tokens, priced as its own GEMM; the three sum to the op's time.
  const double peak = gpu.peak_dense.at(MathDtype::fp8) * gpu.sustained_scale(MathDtype::fp8);
  for (int pass = 0; pass < 3; ++pass) {
    double sum = 0;
    for (double width : qkv.parts) {
      LayerOp one = qkv;
      one.parts.clear();
      one.out = width;
      const GemmShape g = gemm_shape(one, pass);
      const double flops = 2 * qkv.rows * qkv.in * width, bytes = qkv.bytes[static_cast<std::size_t>(pass)] *
                                                                  (qkv.rows * qkv.in + qkv.in * width + qkv.rows * width) /
                                                                  (qkv.rows * qkv.in + qkv.in * qkv.out + qkv.rows * qkv.out);
      sum += std::max(flops / (peak * gpu.gemm_efficiency_of(g.m, g.n, g.k, 1, MathDtype::fp8, pass == 2)), gpu.hbm_seconds(bytes)) +
             gpu.kernel_overhead;
    }
    CHECK(op_time(qkv, pass, gpu, job.training).seconds == doctest::Approx(sum).epsilon(1e-12));
  }
  // What the passes move: the input three times, the weight and output once.
  const double whole = qkv.rows * qkv.in + qkv.in * qkv.out + qkv.rows * qkv.out;
  CHECK(pass_bytes(qkv, 0) == doctest::Approx(qkv.bytes[0] * (whole + 2 * qkv.rows * qkv.in) / whole));
  CHECK(pass_bytes(fops.at("qkv projection"), 0) == fops.at("qkv projection").bytes[0]);
  // The per-op AC policy reruns wk (and w3): its own GEMM's time, not its width's share of the three.
  const Recompute& rc = job.layout.recompute;
  REQUIRE(rc.alternate_matmuls);
  const LayerOp wk = linear_of(qkv, 1);
  CHECK(wk.out == 128);
  CHECK(wk.flops[0] == doctest::Approx(2 * qkv.rows * qkv.in * 128));
  CHECK(recompute_seconds(qkv, rc, job.model.attention, true, gpu, job.training) == op_time(wk, 0, gpu, job.training).seconds);
  CHECK(recompute_seconds(qkv, rc, job.model.attention, true, gpu, job.training) >
        recompute_share(qkv, rc, job.model.attention, true) * op_time(qkv, 0, gpu, job.training).seconds);
  CHECK(op_time(linear_of(ops.at("gate+up projection"), 1), 0, gpu, job.training).seconds ==
        recompute_seconds(ops.at("gate+up projection"), rc, job.model.attention, true, gpu, job.training));
  // Slower than one fused GEMM: wk and wv are 128 wide and read the whole 98,304 × 4096 input.
  CHECK(op_time(qkv, 0, gpu, job.training).seconds > 1.2 * op_time(fops.at("qkv projection"), 0, gpu, fused.training).seconds);
  // Rowwise float8 without TP's module-input cast: each linear casts the input (6 bytes an element
  // compiled) and rescales its own input gradient (4 bytes an input element each).
  const double in = qkv.rows * qkv.in;
  const auto& cast = ops.at("fp8 quantize (qkv projection input)").bytes, fcast = fops.at("fp8 quantize (qkv projection input)").bytes;
  CHECK(cast[0] - fcast[0] == doctest::Approx(2 * in * 6));
  CHECK(cast[1] - fcast[1] == doctest::Approx(2 * in * 4));
  CHECK(ops.at("fp8 quantize (gate+up projection input)").bytes[0] - fops.at("fp8 quantize (gate+up projection input)").bytes[0] ==
        doctest::Approx(in * 6));
  // Tensorwise with fp8 all-gathers casts the module's input once, before the gather.
  const Job tw = scenario("published/torchtitan-asynctp-8b-float8-tensorwise-vanilla-tp.json");
  const Job twf = scenario("published/torchtitan-asynctp-8b-float8-tensorwise-vanilla-tp.json", {"training.projections=fused"});
  auto cast_of = [](const Job& j) {
    for (const LayerOp& op : layer_ops(j.model, 0, op_context(j.layout, j.training, j.cluster.gpu)))
      if (op.name == "fp8 quantize (qkv projection input)") return op.bytes[0];
    return 0.0;
  };
  CHECK(cast_of(tw) == doctest::Approx(cast_of(twf)));
  // A bad word is refused with the JSON path.
  CHECK_THROWS_AS(scenario(file, {"training.projections=split"}), InputError);
}

TEST_CASE("separate linears' input gradients are summed: a kernel before TP's reduce-scatter, reads fused into the norm without TP") {
  auto sums = [](const Job& j) {
    std::map<std::string, double> bytes;
    for (const LayerOp& op : layer_ops(j.model, 0, op_context(j.layout, j.training, j.cluster.gpu)))
      if (op.name.starts_with("input-gradient sum")) {
        CHECK(op.bytes[0] == 0.0);
        CHECK(op.bytes[2] == 0.0);
        bytes[op.name] = op.bytes[1];
      }
    return bytes;
  };
  // TP8, compiled: each sum reads the three (two) linears' bf16 gradients of the gathered input and writes one.
  const std::map<std::string, double> tp = sums(scenario("published/torchtitan-asynctp-8b-bf16-vanilla-tp.json"));
  CHECK(tp.at("input-gradient sum (qkv projection)") == doctest::Approx(4 * kAsyncTp8bActivationBytes));
  CHECK(tp.at("input-gradient sum (gate+up projection)") == doctest::Approx(3 * kAsyncTp8bActivationBytes));
  // FSDP only, compiled (local batch 2 × 8192): the norm's backward reads the other gradients.
  const double one = 2.0 * 8192 * 4096 * 2;
  const std::map<std::string, double> fsdp = sums(scenario("published/torchtitan-h100-8b-fsdp8-sac-compile.json"));
  CHECK(fsdp.at("input-gradient sum (qkv projection)") == doctest::Approx(2 * one));
  CHECK(fsdp.at("input-gradient sum (gate+up projection)") == doctest::Approx(one));
  // Eager: torchtitan's norm figures already hold the sums (104 and 98 bytes against the bare 92).
  CHECK(sums(scenario("published/torchtitan-h100-8b-fsdp8-sac.json")).empty());
  // Fused projections have one gradient: nothing to sum.
  CHECK(sums(scenario("published/torchtitan-asynctp-8b-bf16-vanilla-tp.json", {"training.projections=fused"})).empty());
}

TEST_CASE("ring attention's merges as each framework runs them: PyTorch's fp32 accumulators, Transformer Engine's bf16 ones") {
  auto merge = [](const Job& j) -> std::optional<LayerOp> {
    for (const LayerOp& op : layer_ops(j.model, 0, op_context(j.layout, j.training, j.cluster.gpu)))
      if (op.name == "ring attention merge") return op;
    return std::nullopt;
  };
  // torchtitan, Llama 3.1 8B at CP8 (32,768 of 262,144 tokens a GPU, 32 heads of 128): seven merges, 10
  // bytes an element compiled, and K and V expanded to all 32 heads before SDPA (repeat_kv).
  const Job tt = scenario("published/torchtitan-h100-8b-fsdp1-cp8.json");
  REQUIRE(tt.layout.cp_merge.repeated_kv);
  const std::optional<LayerOp> t = merge(tt);
  REQUIRE(t);
  const double T = 32768, width = 32 * 128;
  CHECK(t->bytes[0] == doctest::Approx(7 * 10 * T * width));
  CHECK(t->bytes[1] == doctest::Approx(7 * 10 * T * (width + 2 * width)));
  CHECK(t->bytes[2] == 0.0);
  // Megatron-Core on Transformer Engine, Llama 3 70B at TP1 CP8, sequence 32,768: bf16 corrections (6
  // bytes), grouped-query K and V at their 8 heads, as its ring (p2p, Megatron's default) runs them.
  const Job te = scenario("published/simumax-b200-llama3-70b-tp1-cp8-seq32k.json", {"parallel.cp_comm=ring"});
  REQUIRE_FALSE(te.layout.cp_merge.repeated_kv);
  const std::optional<LayerOp> m = merge(te);
  REQUIRE(m);
  CHECK(m->bytes[0] == doctest::Approx(7 * 6 * 4096.0 * 64 * 128));
  CHECK(m->bytes[1] == doctest::Approx(7 * 6 * 4096.0 * (64 * 128 + 8 * 256)));
  // Without context parallelism, or without the framework's figures, there is nothing to merge.
  CHECK_FALSE(merge(scenario("published/torchtitan-h100-8b-fsdp8-cp1.json")));
  CHECK_FALSE(merge(scenario("published/torchtitan-h100-8b-fsdp1-cp8.json", {"parallel.cp_merge={\"forward\": 0, \"backward\": 0}"})));
  // Megatron's selective recomputation of core attention reruns the merges with it.
  Recompute core;
  core.core_attention = true;
  CHECK(recomputed(*m, core));
  // Priced on the compute stream: the step is slower by about their HBM time (the 8B CP8 step: 7 × 32
  // layers' merges, full AC running the forward's twice).
  const Job bare = scenario("published/torchtitan-h100-8b-fsdp1-cp8.json", {"parallel.cp_merge={\"forward\": 0, \"backward\": 0}"});
  const StageCost a = stage_costs(tt), b = stage_costs(bare);
  const double merges = 32 * tt.cluster.gpu.hbm_seconds(2 * t->bytes[0] + t->bytes[1]);
  CHECK((a.forward.compute() + a.backward.compute()) - (b.forward.compute() + b.backward.compute()) ==
        doctest::Approx(merges + 32 * 3 * tt.cluster.gpu.kernel_overhead).epsilon(1e-6));
}

TEST_CASE("PyTorch's context parallelism all-gathers K and V beside the first block, and passes their gradients around the ring") {
  // torchtitan's 405B at TP8 CP8 over 262,144 tokens: 32,768 a rank, K and V repeated to the 16 query heads a
  // TP rank holds (repeat_kv before SDPA), 128 wide each, bf16; the CP group spans eight nodes.
  const Job gathered = scenario("published/torchtitan-h100-405b-fsdp1-cp8.json");
  const Job ring = scenario("published/torchtitan-h100-405b-fsdp1-cp8.json", {"parallel.cp_comm=ring"});
  REQUIRE(gathered.layout.cp_comm == CpComm::all_gather);  // the framework's: PyTorch's default rotate method
  const double kv = 32768.0 * 16 * (128 + 128) * 2;
  const CollectiveLinks links = CollectiveLinks::of(gathered.cluster.gpu, gathered.cluster.fabric);
  const double gather = collective_seconds(CollectiveOp::all_gather, 8 * kv, GroupPlacement{8, 8}, links);
  const double sends = 7 * collective_seconds(CollectiveOp::send_recv, kv, GroupPlacement{2, 2}, links);
  const StageCost g = stage_costs(gathered), r = stage_costs(ring);
  // Forward: one gather a layer where the ring sends seven times; backward (full AC: the forward again
  // first): the gather again and the gradients' seven sends, where the ring sends K and V and their gradients.
  CHECK(g.forward.comm(CommKind::cp) / r.forward.comm(CommKind::cp) == doctest::Approx(gather / sends));
  CHECK(g.backward.comm(CommKind::cp) / r.backward.comm(CommKind::cp) == doctest::Approx((2 * gather + sends) / (3 * sends)));
  // Across nodes the gather (1.9 GB out of each rank's NIC) outlasts the first block it hides behind,
  // where each ring step's send hides behind its block: CP communication is exposed, the step slower.
  const Run gathered_run = run(gathered), ring_run = run(ring);
  const auto cp = static_cast<std::size_t>(CommKind::cp);
  CHECK(ring_run.report.exposed[cp] == 0.0);
  CHECK(gathered_run.report.exposed[cp] > 0.0);
  CHECK(gathered_run.report.step_time > ring_run.report.step_time);
  CHECK(g.forward.compute() == doctest::Approx(r.forward.compute()));  // the same kernels
}

TEST_CASE("the 500 W H100's default limit: a torchtitan step slower than the same boards at 700 W, by less than the clocks") {
  // h100-sxm-96gb-500w runs at its default_power_limit (500 W): tensor-core work and attention at
  // ((500 - 70) / (700 - 70))^0.53 = 0.817 of their 700 W clocks, memory-bound kernels (HBM) and the
  // network not at all. So the step slows, but by less than 1 / 0.817.
  const Job at_500 = scenario("published/torchtitan-h100-8b-fsdp8-sac.json");
  const Job at_700 = scenario("published/torchtitan-h100-8b-fsdp8-sac.json", {"cluster.power_limit=\"700W\""});
  const double clocks = std::pow(430.0 / 630.0, 0.53);
  REQUIRE(at_500.cluster.gpu.power_clock_scale == doctest::Approx(clocks));
  CHECK(at_700.cluster.gpu.power_clock_scale == doctest::Approx(1.0));
  const double slower = run(at_500).report.step_time / run(at_700).report.step_time;
  INFO("step at 500 W over 700 W: " << slower);
  CHECK(slower > 1.10);
  CHECK(slower < 1.0 / clocks);
}
