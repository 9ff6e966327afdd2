// Attention as Megatron-Core runs it through Transformer Engine: cuDNN's fused kernel, and context
// parallelism by all-to-all (TE's "a2a"), against the ring that PyTorch and Megatron's p2p run.
#include <doctest/doctest.h>
#include <optional>

#include "models/costs/collective.hpp"
#include "models/costs/flops.hpp"
#include "models/costs/op_cost.hpp"
#include "catalogue_fixtures.hpp"
#include "step_fixtures.hpp"

using namespace plumb;
using namespace plumb::test;

namespace {
const GpuSpec& b200() {
  static const GpuSpec g = gpu("b200");
  return g;
}

// Layer `layer`'s op named `name` (the first layer's by default), under the job's layout, if it has one.
std::optional<LayerOp> find_op(const Job& job, const std::string& name, std::int64_t layer = 0) {
  const OpContext ctx = op_context(job.layout, job.training, job.cluster.gpu);
  for (const LayerOp& op : layer_ops(job.model, layer, ctx))
    if (op.name == name) return op;
  return std::nullopt;
}

LayerOp op_named(const Job& job, const std::string& name, std::int64_t layer = 0) {
  std::optional<LayerOp> op = find_op(job, name, layer);
  if (!op) FAIL("no op " << name);
  return *op;
}

bool has_op(const Job& job, const std::string& name) { return find_op(job, name).has_value(); }

constexpr const char* kCp8 = "published/simumax-b200-llama3-70b-tp1-cp8-seq32k.json";
}  // namespace

TEST_CASE("B200 attention kernels at the rates cudnn-frontend's B200 table measured for each library") {
  // cudnn-frontend bb37575, sdpa_bf16_benchmark_results_NVIDIA_B200.csv (128 query and 8 KV heads, head dim
  // 128, causal, bf16, TFLOP/s of 2250): each kernel's fitted curve through its columns, within the fit's
  // stated error (cuDNN 5.1% RMS, every point within 7.8%; FlashAttention-2 through PyTorch within 2.2%).
  const double peak = 2250;
  const double keys[] = {4096, 8192, 16384, 32768, 65536, 131072};
  const double cudnn_fwd[] = {855.7, 1171.3, 1332.4, 1419.0, 1382.3, 1355.4};
  const double cudnn_bwd[] = {701.3, 942.5, 1074.8, 1108.7, 1073.1, 1047.8};
  const double fa2_fwd[] = {324.9, 373.4, 394.5, 403.7, 408.7, 411.0};
  const double fa2_bwd[] = {256.4, 298.9, 320.0, 330.8, 335.4, 336.0};
  for (int i = 0; i < 6; ++i) {
    INFO(keys[i] << " keys");
    CHECK(b200().attention_efficiency_of("cudnn", false, keys[i]) * peak == doctest::Approx(cudnn_fwd[i]).epsilon(0.066));
    CHECK(b200().attention_efficiency_of("cudnn", true, keys[i]) * peak == doctest::Approx(cudnn_bwd[i]).epsilon(0.079));
    CHECK(b200().attention_efficiency_of("flash2", false, keys[i]) * peak == doctest::Approx(fa2_fwd[i]).epsilon(0.022));
    CHECK(b200().attention_efficiency_of("flash2", true, keys[i]) * peak == doctest::Approx(fa2_bwd[i]).epsilon(0.022));
  }
  // FlashAttention-4 (the fastest kernel, "flash") stays ahead of cuDNN 9.13 in short sequences, as its paper
  // says (up to 1.3x), and FlashAttention-2, without Blackwell's tensor-core instructions, far behind both.
  CHECK(b200().attention_efficiency_of("flash", false, 4096) > 1.3 * b200().attention_efficiency_of("cudnn", false, 4096));
  CHECK(b200().attention_efficiency_of("flash2", false, 8192) < 0.35 * b200().attention_efficiency_of("flash", false, 8192));
  // A GPU with no cuDNN figures prices cuDNN's kernel at its fastest kernel's rates (on Hopper they are about equal).
  const GpuSpec h100 = gpu("h100-sxm");
  REQUIRE(h100.attention_kernels.count("cudnn") == 0);
  for (double k : {2048.0, 8192.0, 65536.0})
    CHECK(h100.attention_efficiency_of("cudnn", true, k) == h100.attention_efficiency_of("flash", true, k));
}

TEST_CASE("Megatron-Core on Transformer Engine runs cuDNN's attention, and its step prices it so") {
  const Job job = scenario("published/simumax-b200-llama3-70b-tp2-ep1-pp1-mbc8.json");
  REQUIRE(job.training.attention_kernel == AttentionKernel::cudnn);
  // Core attention's forward at cuDNN's rate over 4,096 keys (attention's own sustained clock, not the
  // GEMMs', and the slowest chip on both).
  const LayerOp attention = op_named(job, "core attention");
  const double pace = b200().peak_dense.at(MathDtype::bf16) * job.cluster.gpu.attention_sustained_scale();
  CHECK(job.cluster.gpu.attention_sustained_scale() > job.cluster.gpu.sustained_scale(MathDtype::bf16));
  const double expected = attention.executed_flops(0) / (pace * b200().attention_efficiency_of("cudnn", false, 4096));
  CHECK(op_time(attention, 0, job.cluster.gpu, job.training).seconds == doctest::Approx(expected).epsilon(1e-9));
  // The same step with FlashAttention-4 instead is faster by the attention's difference alone.
  const Job fa4 = scenario("published/simumax-b200-llama3-70b-tp2-ep1-pp1-mbc8.json", {"training.attention_kernel=flash"});
  const double cudnn_s = op_time(attention, 0, job.cluster.gpu, job.training).seconds;
  const double fa4_s = op_time(attention, 0, fa4.cluster.gpu, fa4.training).seconds;
  CHECK(cudnn_s / fa4_s == doctest::Approx(b200().attention_efficiency_of("flash", false, 4096) /
                                           b200().attention_efficiency_of("cudnn", false, 4096)));
  CHECK(stage_costs(job).forward.compute() - stage_costs(fa4).forward.compute() ==
        doctest::Approx(job.model.layers * (cudnn_s - fa4_s)).epsilon(1e-6));
}

TEST_CASE("A fused attention that drops out its probabilities runs at the rate FA4's dropout kernels measured on sm_100") {
  // flash-attention PR #2597 (GB200, p 0.125): forward 75-85%, backward 60-70% of the no-dropout rate;
  // the profile takes the midpoints. Megatron's GPT 6.9B (attention dropout 0.1) against the same model
  // without dropout: the forward 1/0.80 and the backward 1/0.65 as long, the layer's other ops alike.
  const std::string file = "published/megatron-b200-mghpcc-gpt6.9b-8gpu.json";
  const Job job = scenario(file);
  REQUIRE(job.model.dropout);
  const LayerOp with = op_named(job, "core attention");
  CHECK(with.attention_dropout);
  LayerOp without = with;
  without.attention_dropout = false;
  const GpuSpec& gpu = job.cluster.gpu;
  const double overhead = gpu.kernel_overhead;
  CHECK((op_time(with, 0, gpu, job.training).seconds - overhead) / (op_time(without, 0, gpu, job.training).seconds - overhead) ==
        doctest::Approx(1 / 0.80));
  CHECK((op_time(with, 1, gpu, job.training).seconds - overhead) / (op_time(without, 1, gpu, job.training).seconds - overhead) ==
        doctest::Approx(1 / 0.65));
  // A GPU without the figure prices dropout at no cost; an unfused attention prices it as its own kernel.
  const Job h100 = scenario(file, {"cluster.gpu=h100-sxm", "cluster.fabric=dgx-h100-ndr"});
  CHECK(op_time(op_named(h100, "core attention"), 1, h100.cluster.gpu, h100.training).seconds ==
        doctest::Approx(op_time(without, 1, h100.cluster.gpu, h100.training).seconds));
  const Job unfused = scenario(file, {"training.attention_kernel=unfused"});
  CHECK_FALSE(op_named(unfused, "core attention").attention_dropout);
}

TEST_CASE("All-to-all context parallelism: one kernel over every key, its exchanges blocking it") {
  const Job a2a = scenario(kCp8), ring = scenario(kCp8, {"parallel.cp_comm=ring"});
  REQUIRE(a2a.layout.cp_comm == CpComm::all_to_all);
  REQUIRE(ring.layout.cp_comm == CpComm::ring);
  // Llama 3 70B at TP1 CP8 over 32,768 tokens: 4,096 local tokens, 64 query and 8 KV heads of 128.
  const LayerOp whole = op_named(a2a, "core attention"), block = op_named(ring, "core attention");
  CHECK(whole.attention_keys == 0.0);  // every key: the curve's reference, no short-block discount
  CHECK(block.attention_keys == 32768.0 / 8);
  CHECK(whole.flops[0] == block.flops[0]);  // the same work on a rank, by heads instead of by keys
  const double T = 4096, q = T * 64 * 128, kv = T * 8 * 128;
  CHECK(whole.cp_exchange_in == doctest::Approx((q + 2 * kv) * 2));
  CHECK(whole.cp_exchange_out == doctest::Approx(q * 2));
  // TE's reorders: two passes, each reading and writing each exchanged tensor, forward and backward.
  const LayerOp reorder = op_named(a2a, "CP all-to-all reorders");
  CHECK(reorder.bytes[0] == doctest::Approx(4 * (q + 2 * kv + q) * 2));
  CHECK(reorder.bytes[1] == reorder.bytes[0]);
  CHECK_FALSE(has_op(ring, "CP all-to-all reorders"));
  // No ring, so no merges, though the framework gives their figures.
  REQUIRE(a2a.layout.cp_merge.forward > 0);
  CHECK_FALSE(has_op(a2a, "ring attention merge"));
  CHECK(has_op(ring, "ring attention merge"));
  // Exposed on the CP group: q, k, v over and the output back a layer forward; the output gradient over
  // and the q, k, v gradients back backward.
  const CollectiveLinks links = CollectiveLinks::of(a2a.cluster.gpu, a2a.cluster.fabric);
  const GroupPlacement node{8, 1};  // the CP group: the eight GPUs of one node
  const double one = collective_seconds(CollectiveOp::all_to_all, whole.cp_exchange_in, node, links) +
                     collective_seconds(CollectiveOp::all_to_all, whole.cp_exchange_out, node, links);
  REQUIRE(one > 0);
  const StageCost s = stage_costs(a2a);
  CHECK(s.forward.comm(CommKind::cp) == doctest::Approx(a2a.model.layers * one).epsilon(1e-9));
  CHECK(s.backward.comm(CommKind::cp) == doctest::Approx(a2a.model.layers * one).epsilon(1e-9));
  // The ring hides its sends behind the blocks; the all-to-all cannot, but runs one kernel at the
  // full sequence's rate: here that wins (cuDNN at 32,768 keys against eight blocks of 4,096).
  CHECK(run(a2a).report.step_time < run(ring).report.step_time);
}

TEST_CASE("Transformer Engine's grouped GEMM: one cuBLAS GEMM an expert, four streams sharing the SMs") {
  // TE v2.11 multi_stream_cublas_gemm: expert i's GEMM on compute stream i % 4 (num_compute_streams = 4).
  // DeepSeek-V3 truncated, EP4: 64 local experts of 512 tokens each (4,096 tokens a rank, top-8 of 256,
  // padded to capacity), 7168 → 2 × 2048 for gate+up.
  const Job job = scenario("published/simumax-b200-deepseek-v3-tp1-ep4-pp2-mbc4.json");
  REQUIRE(job.training.grouped_gemm_streams == 4);  // the megatron-core-2026-01 profile's
  const LayerOp experts = op_named(job, "experts: gate+up projection", 1);  // layer 0 is dense
  const GemmShape g = gemm_shape(experts, 0);
  REQUIRE(g.groups == doctest::Approx(64));
  REQUIRE(g.m == doctest::Approx(512));
  const GpuSpec& gpu = job.cluster.gpu;
  const GemmShapeModel& dense = gpu.gemm_model.at(MathDtype::bf16);
  // 16 rounds of four GEMMs at once: the dense kernel's model over four GEMMs' tiles.
  const double four = dense.efficiency(g.m, g.n, g.k, 4, gpu.sms);
  const double pace = gpu.peak_dense.at(MathDtype::bf16) * gpu.sustained_scale(MathDtype::bf16);
  CHECK(op_time(experts, 0, gpu, job.training).seconds == doctest::Approx(experts.executed_flops(0) / (pace * four)).epsilon(1e-9));
  // One grouped kernel over all 64 experts' tiles fills its waves better: faster.
  const Job grouped = scenario("published/simumax-b200-deepseek-v3-tp1-ep4-pp2-mbc4.json", {"training.grouped_gemm_streams=0"});
  const double one_kernel = op_time(experts, 0, gpu, grouped.training).seconds;
  CHECK(one_kernel == doctest::Approx(experts.executed_flops(0) / (pace * gpu.gemm_efficiency_of(g.m, g.n, g.k, 64, MathDtype::bf16))));
  CHECK(one_kernel < op_time(experts, 0, gpu, job.training).seconds);
  // Six experts on four streams: a round of four, then two.
  LayerOp six = row_chunk(experts, 64.0 / 6);  // six experts' rows, FLOPs and bytes
  six.groups = 6;
  const GemmShape g6 = gemm_shape(six, 0);
  REQUIRE(g6.m == doctest::Approx(g.m));
  const double per_gemm = six.executed_flops(0) / 6 / pace;
  CHECK(op_time(six, 0, gpu, job.training).seconds ==
        doctest::Approx(4 * per_gemm / dense.efficiency(g.m, g.n, g.k, 4, gpu.sms) + 2 * per_gemm / dense.efficiency(g.m, g.n, g.k, 2, gpu.sms))
            .epsilon(1e-9));
}

TEST_CASE("The backward's TP traffic beside its GEMMs, as Transformer Engine's column-parallel linears run it") {
  // TE v2.11 _Linear/_LayerNormLinear.backward under sequence parallelism: the saved input shard all-gathered
  // again (async) beside the input gradient's GEMM, the input gradient's reduce-scatter (async) beside the
  // weight gradient's. Llama 3 70B at TP8: two column-parallel linears a layer (qkv, gate+up).
  const Job job = scenario("published/simumax-b200-llama3-70b-tp8-ep1-pp1-mbc8.json");
  REQUIRE(job.layout.tp_backward_overlap);  // the megatron-core-2026-01 profile's
  REQUIRE(job.layout.sequence_parallel);
  const Job exposed = scenario("published/simumax-b200-llama3-70b-tp8-ep1-pp1-mbc8.json", {"parallel.tp_backward_overlap=false"});
  const StageCost with = stage_costs(job), without = stage_costs(exposed);
  auto overlapped_tp = [](const Pass& p) {
    std::size_t n = 0;
    for (const Segment& s : p.segments) n += s.overlapped && s.kind == CommKind::tp;
    return n;
  };
  // The output head is a column-parallel linear too (Megatron's ColumnParallelLinear, the same autograd function).
  const auto linears = 2 * static_cast<std::size_t>(job.model.layers) + 1;
  CHECK(overlapped_tp(without.backward) == 0);
  CHECK(overlapped_tp(with.backward) == 2 * linears);  // a re-gather and a reduce-scatter for each
  // The re-gathers are traffic the forward's gathered copies spared before: the forward's all-gathers again. The
  // forward moves two all-gathers and two reduce-scatters a layer, alike in bytes, and the head's all-gather.
  const double gather = with.forward.comm(CommKind::tp) / static_cast<double>(2 * linears - 1);
  CHECK(with.backward.comm(CommKind::tp) - without.backward.comm(CommKind::tp) ==
        doctest::Approx(static_cast<double>(linears) * gather).epsilon(1e-6));
  CHECK(with.backward.compute() == doctest::Approx(without.backward.compute()));
  CHECK(with.backward.span() < without.backward.span());  // more traffic, less of it in the way
  // A split backward (zero-bubble schedules) defers the weight gradient: the reduce-scatter has nothing to hide
  // under and waits after the input gradient, the re-gather still beside it.
  CHECK(overlapped_tp(with.input_grad) == linears);
  CHECK(with.forward.span() == doctest::Approx(without.forward.span()));  // the forward is as it was
}
