// PyTorch's async tensor parallelism (parallel.tp_overlap "async"): each sequence-parallel all-gather
// runs with the matmuls that read it, each matmul with the reduce-scatter of its output, in TP chunks
// whose peer copies run on the copy engines.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "models/costs/collective.hpp"
#include "models/costs/flops.hpp"
#include "models/costs/op_cost.hpp"
#include "step_fixtures.hpp"

using namespace plumb;
using namespace plumb::test;

namespace {
const std::string kFile = "published/torchtitan-asynctp-8b-bf16-async-tp.json";

// A pass's segments one after another, without the FSDP traffic beside them.
double segments_span(const Pass& p) {
  double s = 0;
  for (const Segment& g : p.segments) s += g.span();
  return s;
}
std::size_t copy_engine_segments(const Pass& p) {
  return static_cast<std::size_t>(std::count_if(p.segments.begin(), p.segments.end(), [](const Segment& g) { return g.copy_engine; }));
}
}  // namespace

TEST_CASE("async TP: a fused GEMM takes its first chunk, then the longer of the other chunks and the copies") {
  // Llama 3.1 8B, TP8 with sequence parallelism, local batch 12 × 8192 tokens (ground-truth §B).
  const Job async = scenario(kFile), plain = scenario(kFile, {"parallel.tp_overlap=\"none\""});
  REQUIRE(async.layout.tp_overlap == TpOverlap::async);
  const GpuSpec& gpu = async.cluster.gpu;
  const CollectiveLinks links = CollectiveLinks::of(gpu, async.cluster.fabric);
  const GroupPlacement tp{8, 1};
  const double n = 8, activation = 12.0 * 8192 * 4096 * 2, hbm = gpu.hbm_bandwidth * gpu.hbm_efficiency;
  const double copies = (n - 1) / n * activation / links.nvlink;      // the peers' shards, by copy engine
  const double reorder = 2 * activation / hbm;                         // DTensor's chunk + cat, gone when fused
  const double reduce = activation * (1 + 1 / n) / hbm;                // the sum of the stacked partial products
  const double gather = collective_seconds(CollectiveOp::all_gather, activation, tp, links);
  const double scatter = collective_seconds(CollectiveOp::reduce_scatter, activation, tp, links);
  // A chunk is the GEMM over 1/n of its rows, priced at its own shape.
  auto chunk = [&](const LayerOp& op) { return op_time(row_chunk(op, n), 0, gpu, async.training).seconds; };
  auto fused = [&](const LayerOp& op) { return chunk(op) + std::max((n - 1) * chunk(op), copies); };
  // What fusing saves in the forward: column-parallel GEMMs with their all-gather, row-parallel ones with
  // their reduce-scatter, in each of the 32 layers and at the output head.
  const OpContext ctx = op_context(async.layout, async.training, gpu);
  auto saved = [&](const std::vector<LayerOp>& ops) {
    double s = 0;
    for (const LayerOp& op : ops) {
      if (op.cls != OpClass::gemm) continue;
      const double g = op_time(op, 0, gpu, async.training).seconds;
      if (op.before == CommPoint::tp_enter) s += gather + reorder + g - fused(op);
      if (op.after == CommPoint::tp_exit) s += scatter + reorder + g - fused(op) - reduce;
    }
    return s;
  };
  const double expected = 32 * saved(layer_ops(async.model, 0, ctx)) + saved(head_ops(async.model, ctx));
  const StageCost a = stage_costs(async), b = stage_costs(plain);
  CHECK(expected > 0);
  CHECK(relative(segments_span(b.forward) - segments_span(a.forward), expected) < 1e-9);
  // The copies hold no SMs: every fused op is one copy-engine segment, 4 a layer and the head's.
  CHECK(copy_engine_segments(a.forward) == 32 * 4 + 1);
  CHECK(copy_engine_segments(b.forward) == 0);
  // Backward: the output gradient's all-gather before wo's and w2's input gradient, and the head's
  // reduce-scatter. The reduce-scatters of the attention's and the MLP's input gradients stay NCCL's:
  // each sums several linears' gradients (wq, wk, wv; w1, w3) first, and Inductor fuses a
  // reduce-scatter only with the one matmul that produced it.
  CHECK(copy_engine_segments(a.input_grad) == 32 * 2 + 1);
  CHECK(a.input_grad.comm(CommKind::tp) < b.input_grad.comm(CommKind::tp));
}

TEST_CASE("async TP under float8: fused where the cast comes before the gather") {
  // tensorwise casts to fp8 and then gathers (Float8ColwiseParallel), so the matmul reads the gathered
  // tensor; rowwise gathers bf16 and casts it, which Inductor's pass does not fuse. Both fuse the
  // row-parallel GEMMs with their reduce-scatters.
  const Job tensorwise = scenario("published/torchtitan-asynctp-8b-float8-tensorwise-async-tp.json");
  const Job rowwise = scenario("published/torchtitan-asynctp-8b-float8-rowwise-async-tp.json");
  CHECK(copy_engine_segments(stage_costs(tensorwise).forward) == 32 * 4 + 1);
  CHECK(copy_engine_segments(stage_costs(rowwise).forward) == 32 * 2 + 1);  // + the bf16 output head's gather
  CHECK(copy_engine_segments(stage_costs(rowwise).input_grad) == 1);         // the head's reduce-scatter
}

TEST_CASE("async TP against torchtitan's measured speedups: float8 within 0.05, bf16 over, rowwise the least") {
  // torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md, async over vanilla TP: 8B FSDP8 TP8
  // 1.099 (bf16), 1.097 (float8 tensorwise), 1.056 (float8 rowwise); 70B FSDP32 TP8 1.092, 1.164, 1.042.
  // plumb, simulated: the float8 rows within 0.05 of them; the bf16 rows over by 0.11 and 0.14, the named
  // miss (docs/fidelity.md); rowwise, whose gathers a cast reads, gains least at both sizes, as measured.
  auto speedup = [](const std::string& row) {
    const std::string file = "published/torchtitan-asynctp-" + row + "-async-tp.json";
    return run(scenario(file, {"parallel.tp_overlap=\"none\""})).report.step_time / run(scenario(file)).report.step_time;
  };
  for (const std::string size : {"8b", "70b"}) {
    const double bf16 = speedup(size + "-bf16"), tensorwise = speedup(size + "-float8-tensorwise"), rowwise = speedup(size + "-float8-rowwise");
    const double measured_tensorwise = size == "8b" ? 1.097 : 1.164, measured_rowwise = size == "8b" ? 1.056 : 1.042;
    const double measured_bf16 = size == "8b" ? 1.099 : 1.092;
    CAPTURE(size);
    CHECK(std::abs(tensorwise - measured_tensorwise) < 0.05);
    CHECK(std::abs(rowwise - measured_rowwise) < 0.05);
    CHECK(bf16 > measured_bf16);
    CHECK(bf16 < measured_bf16 + 0.15);
    CHECK(rowwise < std::min(bf16, tensorwise));
    CHECK(rowwise > 1.0);
  }
}

TEST_CASE("async TP needs what Inductor's pass needs") {
  CHECK_THROWS_AS(scenario(kFile, {"training.compile=false"}), InputError);
  CHECK_THROWS_AS(scenario(kFile, {"parallel.sequence_parallel=false"}), InputError);
  CHECK_THROWS_AS(scenario("published/torchtitan-h100-8b-fsdp8-sac-compile.json", {"parallel.tp_overlap=\"async\""}), InputError);
  CHECK_NOTHROW(scenario(kFile));
}
