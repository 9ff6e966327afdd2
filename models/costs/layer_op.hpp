#pragma once
// One op of a layer with its FLOPs and bytes per pass, where it runs (the context of a rank's
// micro-batch), and the shapes its GEMMs and attention kernels take.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/parallel/layout.hpp"
#include "models/spec/model_spec.hpp"
#include "models/spec/training.hpp"

namespace plumb {

enum class OpClass { gemm, attention, memory };

// Communication a layer needs next to an op, as seen in the forward pass (the backward pass runs the
// layer in reverse, so what comes after an op in forward comes before it in backward).
// tp_enter: the input of a column-parallel GEMM — forward all-gather under sequence parallelism;
// backward all-reduce (reduce-scatter with SP) of its input gradient. tp_exit: the output of a
// row-parallel GEMM — forward all-reduce (reduce-scatter with SP); backward all-gather with SP
// (Narayanan et al. §2.3 f/g operators; Korthikanti et al. §4.2.2). ep_dispatch / ep_combine: the MoE
// all-to-alls, in both passes.
enum class CommPoint : std::uint8_t { none, tp_enter, tp_exit, ep_dispatch, ep_combine };

struct LayerOp {
  std::string name;
  OpClass cls = OpClass::gemm;
  std::array<double, 3> flops{};  // forward, input gradient, weight gradient
  std::array<double, 3> bytes{};  // HBM traffic of each pass
  CommPoint before = CommPoint::none, after = CommPoint::none;  // in forward order
  // GEMMs: `rows` tokens from `in` to `out` features. Forward is rows×in by in×out; the input
  // gradient rows×out by out×in; the weight gradient in×rows by rows×out.
  double rows = 0, in = 0, out = 0;
  // Elementwise ops: the elements they write (rows × written width), what per-element traffic
  // (EagerElementwise) multiplies.
  double elements = 0;
  // Of an elementwise op's forward and backward bytes, the kernels PyTorch runs element by element,
  // each over `elements` (bytes per element of each; ElementwiseTraffic::unvectorized_*).
  std::array<std::vector<double>, 2> unvectorized{};
  // Kept in 16-bit under fp8 training: DeepSeek-V3 §3.3.1 keeps the output head and the MoE gating
  // (with embedding, normalization and attention, which are not GEMMs here) in BF16 or FP32.
  bool high_precision = false;
  // fp8 input quantization (see OpContext::fp8_quantization): `shares_input` when an earlier GEMM of
  // the layer reads the same activation (its fp8 copy serves both); `quantize_rows` when the input is
  // quantized before it is replicated (MoE: once per token before dispatch, not per expert copy).
  bool shares_input = false;
  double quantize_rows = -1;  // < 0: `rows`
  // Several linears read this GEMM's input, so its input gradient is their gradients summed before the
  // backward's tensor-parallel collective: a PyTorch model's separate wq, wk, wv (and w1, w3; torchtitan's
  // Llama), or MLA's two down-projections. Async TP fuses a reduce-scatter only with the one matmul whose
  // output it reduces (micro_pipeline_tp.py), so it leaves these alone.
  bool sums_input_grads = false;
  // The output widths of the separate linears this op stands for when the framework runs them apart
  // (TrainingSpec::separate_projections: torchtitan's wq, wk, wv and w1, w3), summing to `out`; each
  // is its own GEMM over the whole input (models/costs/op_cost.cpp). Empty: one GEMM.
  std::vector<double> parts;
  // Independent GEMMs the rows split into: a rank's routed experts run as one grouped GEMM, each
  // expert over its own rows (rows / groups of them).
  double groups = 1;
  // Work the backward kernel redoes that is not in the model's FLOPs: a flash attention backward
  // recomputes the scores QKᵀ from Q and K (it never stored them), so it does 2·(3·d_qk + 2·d_v) per
  // score against the forward's 2·(d_qk + d_v) — the 2.5× FlashAttention's benchmarks count at equal
  // head dimensions (flash-attention benchmarks/benchmark_flash_attention.py, flops(): bwd = 2.5 × fwd).
  double backward_recompute_flops = 0;
  // A fused attention kernel's keys per query as one call sees them (its efficiency depends on it,
  // GpuSpec::attention_half_sequence); 0: the asymptote.
  double attention_keys = 0;
  // The fused attention kernel drops out the attention probabilities itself (the model's dropout):
  // priced at GpuSpec::attention_dropout_scale_of.
  bool attention_dropout = false;
  // Context parallelism of DeepSeek-V4's compressed attention (models/costs/compressed_attention.hpp):
  // instead of passing KV around a ring, each rank sends the next one its last raw entries
  // (`cp_boundary_bytes`) and all-gather the compressed ones (`cp_gather_bytes`, the gathered total).
  double cp_boundary_bytes = 0, cp_gather_bytes = 0;
  // All-to-all context parallelism (ParallelLayout::cp_comm): the bytes each rank puts into the CP
  // group's all-to-all before the attention kernel (q, k and v) and after it (the output); the backward
  // exchanges the same sizes the other way round (the output gradient before, q, k, v gradients after).
  double cp_exchange_in = 0, cp_exchange_out = 0;
  // Part of a fused MoE kernel (MoeExecution::waves): priced as one wave pipeline with its dispatch and
  // combine, not op by op (models/costs/moe_waves.hpp).
  bool fused_moe = false;
  // What a pass's kernels execute: its FLOPs, and in the input gradient what that backward recomputes.
  double executed_flops(int pass) const {
    return flops[static_cast<std::size_t>(pass)] + (pass == 1 ? backward_recompute_flops : 0.0);
  }
};

// The (M, N, K) of each of a GEMM op's `groups` GEMMs in a pass (0 forward, 1 input gradient, 2 weight
// gradient): C[M×N] = A[M×K]·B[K×N]. A group's rows are M in the forward and input gradient, K in the
// weight gradient.
struct GemmShape {
  double m = 0, n = 0, k = 0, groups = 1;
};
GemmShape gemm_shape(const LayerOp& op, int pass);

// The op over 1/`parts` of its rows: its FLOPs and bytes in proportion (a GEMM split into row chunks,
// as async TP's micro-pipeline runs it).
LayerOp row_chunk(const LayerOp& op, double parts);

// Linear `i` of an op of separate linears (LayerOp::parts) as a GEMM op of its own: its share of the
// FLOPs, and the op's traffic per element of input, weight and output with the whole input its own.
LayerOp linear_of(const LayerOp& op, std::size_t i);

// Where the ops run: `tokens` on this rank for this layer (micro-batch × sequence / cp), attention
// over sequences of `seq` (keys per query), sharded by TP (and SP for elementwise ops) and experts by
// EP/ETP, with `element_bytes` per activation element.
struct OpContext {
  double tokens = 1;
  double seq = 1;
  std::int64_t tp = 1, ep = 1, etp = 1, cp = 1;
  bool sequence_parallel = false;
  double element_bytes = 2;
  bool causal_discount = false;  // executed FLOPs of a causal flash kernel: half the score matrix
  // Attention as Megatron-LM ran it at SC'21: scores materialised by batched GEMMs, then softmax and
  // dropout as separate memory-bound kernels over the full score matrix (no causal saving).
  bool unfused_attention = false;
  // fp8 GEMMs with their own quantization kernels (DeepSeek-V3 §3.5.2): each fp8 GEMM's input is read
  // in bf16 and written in fp8 before the forward, its output gradient likewise before the input
  // gradient, and both are read, transposed and re-quantized for the weight gradient.
  bool fp8_quantization = false;
  Fp8Recipe fp8_recipe = Fp8Recipe::blockwise;  // which casts (TrainingSpec::fp8_recipe)
  // torch.compile fuses the first read of an activation's or gradient's cast into the op before it
  // (torchao's roofline: fuse_with_prev for input and grad_output, never the weight).
  bool compiled = false;
  // Bytes per weight of a separate gradient-accumulation add after each weight-gradient GEMM (see
  // TrainingSpec::fused_grad_accumulation); 0 when the GEMM accumulates in its epilogue.
  double grad_accumulation_bytes = 0;
  // MoE layers run as DeepSeek-V4's fused wave kernel (ParallelLayout::moe_execution).
  bool moe_waves = false;
  // Bytes per routed-expert weight when they are kept narrower than the GEMMs' inputs (FP4 experts:
  // DeepSeek-V4's quantization-aware training and inference, DeepGEMM's FP8×FP4 kernels); 0: as
  // `element_bytes`.
  double expert_weights = 0;
  double expert_weight_bytes(double fallback) const { return expert_weights > 0 ? expert_weights : fallback; }
  // The framework's eager elementwise kernels, where they price this run (TrainingSpec::eager).
  std::optional<EagerElementwise> eager;
  // q, k, v and gate, up as separate linears (TrainingSpec::separate_projections), and whether one fp8
  // cast of their input serves them all: torchtitan's tensorwise float8 under sequence-parallel TP
  // casts the module's input once, before its fp8 all-gather (PrepareFloat8ModuleInput); otherwise each
  // Float8Linear casts it for itself.
  bool separate_projections = false;
  bool one_input_cast = false;
  // The fp8 GEMMs' weights arrive in fp8 from ZeRO-3's gathers (ParallelLayout::fp8_weight_gathers): no
  // per-GEMM weight cast; the input gradient's GEMM takes the weight transposed, a copy of its fp8 bytes.
  bool fp8_weight_gathers = false;
  // Ring attention's merges between its steps (ParallelLayout::cp_merge), priced when cp > 1.
  ParallelLayout::CpMerge cp_merge;
  CpComm cp_comm = CpComm::ring;
};

// The routed experts' ops (their names start "experts: "): their time scales with the expert load.
inline constexpr std::string_view kExpertPrefix = "experts: ";
inline bool expert_op(const LayerOp& op) { return op.name.rfind(kExpertPrefix, 0) == 0; }
// The routed experts' input cast to fp8 (once per token, before dispatch): a fused MoE kernel takes its
// input already in fp8, so the cast stays a kernel of its own on either path.
inline bool expert_input_cast(const LayerOp& op) { return op.name == std::string(kExpertPrefix) + "fp8 quantize (gate+up projection input)"; }
// The routed experts' ops and the token shuffles around them: what a fused MoE kernel replaces.
inline bool routed_moe_op(const LayerOp& op) {
  return expert_op(op) || op.name == "permute (dispatch)" || op.name == "unpermute (combine)";
}

// A fused (flash) attention kernel's work on `query_rows` query rows (tokens × heads), each against
// `keys` keys: the forward's 2·rows·keys·(d_qk + d_v), halved when causal (the masked half skipped);
// the input-gradient pass twice that, and it recomputes QKᵀ (the d_qk share of the forward) besides.
struct FlashAttentionFlops {
  double forward = 0, backward = 0, backward_recompute = 0;
  double backward_executed() const { return backward + backward_recompute; }
};
FlashAttentionFlops flash_attention_flops(double query_rows, double keys, double d_qk, double d_v, bool causal);

// Whether the backward recomputes `op`'s forward under `r` (selective lists; "full" is every op of
// a transformer layer, decided by the caller).
bool recomputed(const LayerOp& op, const Recompute& r);
// The share of `op`'s forward the backward recomputes under `r`, beyond full recomputation (the caller's):
// 1 for the whole ops `recomputed` names and, in a transformer layer, every GEMM under `matmuls`; under
// `alternate_matmuls` the shares of the fused GEMMs that torchtitan's every-second-matmul rule recomputes
// — wk's of the qkv projection (its kv width of q + 2 kv), the out projection (wo), half the gate+up
// projection (w3), none of the down projection (w2).
double recompute_share(const LayerOp& op, const Recompute& r, const AttentionSpec& a, bool transformer_layer);
// Of an op of separate linears, the one that rule recomputes, whose time is its own (wk of q, k, v and
// w3 of w1, w3: the second linear of each); nullopt for other ops and rules.
std::optional<std::size_t> recomputed_linear(const LayerOp& op, const Recompute& r);

}  // namespace plumb
