#include "models/costs/op_cost.hpp"

#include <algorithm>
#include <cmath>

namespace plumb {

namespace {

// An elementwise pass's HBM time, its unvectorized kernels each at the longer of their bytes and their
// elements (GpuSpec::unvectorized_seconds), the rest of its bytes at the HBM rate.
double memory_seconds(const LayerOp& op, std::size_t p, const GpuSpec& gpu) {
  if (p > 1 || op.unvectorized[p].empty()) return gpu.hbm_seconds(op.bytes[p]);
  double rest = op.bytes[p], seconds = 0;
  for (double b : op.unvectorized[p]) {
    rest -= b * op.elements;
    seconds += gpu.unvectorized_seconds(op.elements, b * op.elements);
  }
  return seconds + gpu.hbm_seconds(std::max(rest, 0.0));
}

// Whether a GEMM runs as its groups' dense GEMMs on streams (training.grouped_gemm_streams).
bool on_streams(const GemmShape& g, const TrainingSpec& training) { return g.groups > 1 && training.grouped_gemm_streams > 0; }

// Kernels a GEMM's pass launches one after another: a grouped GEMM on streams, one a round.
double gemm_launches(const GemmShape& g, const TrainingSpec& training) {
  if (!on_streams(g, training)) return 1.0;
  return std::ceil(g.groups / static_cast<double>(training.grouped_gemm_streams));
}

// A GEMM op that runs as several linears over the same input (LayerOp::parts): each its own kernel at
// its own shape, each reading the whole input (forward and weight gradient) or writing a whole input
// gradient (input gradient), its share of the weight and its own output.
OpTime separate_gemms_time(const LayerOp& op, int pass, const GpuSpec& gpu, MathDtype dtype, double peak, const TrainingSpec& training) {
  double seconds = 0, compute_bound = 0;
  for (std::size_t i = 0; i < op.parts.size(); ++i) {
    const LayerOp part = linear_of(op, i);
    const GemmShape g = gemm_shape(part, pass);
    const double compute = part.executed_flops(pass) / (peak * gemm_efficiency(gpu, g, dtype, pass, training));
    const double memory = gpu.hbm_seconds(part.bytes[static_cast<std::size_t>(pass)]);
    seconds += std::max(compute, memory) + gpu.kernel_overhead * gemm_launches(g, training);
    if (compute >= memory) compute_bound += compute;
  }
  return {seconds, compute_bound >= seconds / 2};
}

}  // namespace

// Streams: full rounds of as many GEMMs as streams sharing the SMs, then the groups left over.
double gemm_efficiency(const GpuSpec& gpu, const GemmShape& g, MathDtype dtype, int pass, const TrainingSpec& training) {
  const bool weight_gradient = pass == 2;
  if (!on_streams(g, training)) return gpu.gemm_efficiency_of(g.m, g.n, g.k, g.groups, dtype, weight_gradient);
  const double streams = std::min(static_cast<double>(training.grouped_gemm_streams), g.groups);
  const double rounds = std::floor(g.groups / streams), rest = g.groups - rounds * streams;
  double time = rounds * streams / gpu.concurrent_gemms_efficiency(g.m, g.n, g.k, streams, dtype, weight_gradient);
  if (rest > 0) time += rest / gpu.concurrent_gemms_efficiency(g.m, g.n, g.k, rest, dtype, weight_gradient);
  return g.groups / time;
}

OpTime op_time(const LayerOp& op, int pass, const GpuSpec& gpu, const TrainingSpec& training) {
  const auto p = static_cast<std::size_t>(pass);
  // Every pass that does work is a kernel launch (unfused attention's several, counted as one).
  const double overhead = op.flops[p] > 0 || op.bytes[p] > 0 ? gpu.kernel_overhead : 0.0;
  if (op.cls == OpClass::memory) return {memory_seconds(op, p, gpu) + overhead, false};
  // fp8 runs the GEMMs only, less the output head and the router (DeepSeek-V3 §3.3: attention and
  // elementwise work stay in bf16).
  bool fp8 = training.precision == Precision::fp8 && op.cls == OpClass::gemm && !op.high_precision &&
             gpu.peak_dense.count(MathDtype::fp8);
  const MathDtype dtype = fp8 ? MathDtype::fp8 : MathDtype::bf16;
  const bool fused_attention = op.cls != OpClass::gemm && training.attention_kernel != AttentionKernel::unfused;
  double peak = gpu.peak_dense.at(dtype) * (fused_attention ? gpu.attention_sustained_scale() : gpu.sustained_scale(dtype));
  if (op.cls == OpClass::gemm && op.parts.size() > 1) return separate_gemms_time(op, pass, gpu, dtype, peak, training);
  const double memory = memory_seconds(op, p, gpu);
  double efficiency = 1.0, launches = 1.0;
  if (op.cls == OpClass::gemm) {
    const GemmShape g = gemm_shape(op, pass);
    efficiency = gemm_efficiency(gpu, g, dtype, pass, training);
    launches = gemm_launches(g, training);
  } else if (!fused_attention)
    efficiency = gpu.gemm_efficiency_at(op.flops[p], dtype);  // unfused attention is batched GEMMs
  else
    efficiency = gpu.attention_efficiency_of(attention_kernel_name(training.attention_kernel), pass != 0, op.attention_keys) *
                 (op.attention_dropout ? gpu.attention_dropout_scale_of(pass != 0) : 1.0);
  double compute = op.executed_flops(pass) / (peak * efficiency);
  return {std::max(compute, memory) + overhead * launches, compute >= memory};
}

double pass_bytes(const LayerOp& op, int pass) {
  if (op.cls != OpClass::gemm || op.parts.size() < 2) return op.bytes[static_cast<std::size_t>(pass)];
  double bytes = 0;
  for (std::size_t i = 0; i < op.parts.size(); ++i) bytes += linear_of(op, i).bytes[static_cast<std::size_t>(pass)];
  return bytes;
}

double recompute_seconds(const LayerOp& op, const Recompute& r, const AttentionSpec& a, bool transformer_layer, const GpuSpec& gpu,
                         const TrainingSpec& training) {
  if (const std::optional<std::size_t> i = recomputed_linear(op, r); i && transformer_layer)
    return op_time(linear_of(op, *i), 0, gpu, training).seconds;
  const double share = recompute_share(op, r, a, transformer_layer);
  return share > 0 ? share * op_time(op, 0, gpu, training).seconds : 0.0;
}

OpContext op_context(const ParallelLayout& layout, const TrainingSpec& training, const GpuSpec& gpu) {
  OpContext c;
  c.tokens = static_cast<double>(layout.micro_batch * (training.seq_len / layout.cp));
  c.seq = static_cast<double>(training.seq_len);
  c.tp = layout.tp;
  c.ep = layout.ep;
  c.etp = layout.etp;
  c.cp = layout.cp;
  c.moe_waves = layout.moe_execution == MoeExecution::waves;
  c.expert_weights = training.expert_weight_bytes;
  c.sequence_parallel = layout.sequence_parallel;
  c.element_bytes = training.fp8_gemm_inputs ? 1.0 : 2.0;
  c.causal_discount = true;  // flash kernels skip the masked half
  c.unfused_attention = training.attention_kernel == AttentionKernel::unfused;
  c.fp8_quantization = training.precision == Precision::fp8 && gpu.peak_dense.count(MathDtype::fp8);
  c.fp8_recipe = training.fp8_recipe;
  c.compiled = training.compiled;
  c.separate_projections = training.separate_projections;
  c.one_input_cast = layout.fp8_all_gathers && layout.tp > 1;
  c.fp8_weight_gathers = layout.fp8_weight_gathers;
  c.cp_merge = layout.cp_merge;
  c.cp_comm = layout.cp_comm;
  // A separate add reads the GEMM's 16-bit weight gradient and reads and writes the accumulator.
  if (const EagerElementwise* eager = training.eager()) c.eager = *eager;
  if (!training.fused_grad_accumulation) {
    c.grad_accumulation_bytes = 2.0 + 2.0 * training.optimizer.grads;
    // Every micro-batch is priced alike: autograd's free first one as the average over the step's.
    if (training.grad_accumulation_skips_first) {
      const auto m = static_cast<double>(std::max<std::int64_t>(1, microbatches(layout, training)));
      c.grad_accumulation_bytes *= (m - 1) / m;
    }
  }
  return c;
}

}  // namespace plumb
