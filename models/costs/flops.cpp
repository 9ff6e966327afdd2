#include "models/costs/flops.hpp"

#include <algorithm>

#include "models/costs/compressed_attention.hpp"
#include "models/costs/op_builders.hpp"

namespace plumb {
namespace {

// Under fp8 every fp8 GEMM gets a memory-bound quantization op before it. DeepSeek-V3 §3.5.2
// describes the kernels: "read 128 BF16 activation values ... from HBM for quantization, and the
// quantized FP8 values are then written back to HBM" (2 + 1 bytes an element: the forward's input, the
// input gradient's output gradient), and for the weight gradient the 1×128-tile fp8 copies are "read
// out, dequantized, transposed, re-quantized into 128x1 tiles, and stored" (1 + 1 bytes an element,
// input and output gradient). The per-128 scales (4 bytes per 128 elements) are left out. A
// communication point before the GEMM moves to its quantization, which comes first.
//
// torchao's float8 recipes (torchao 6243040, torchao/testing/float8/roofline_utils.py
// get_tensor_memory_traffic_ovhd_s, bytes an element, bf16 in): they cast every step, the weight too.
// tensorwise: an activation or gradient 2 (amax read) + 2 + 1 + 1 (one kernel writing both layouts);
// the weight 2 + 3 forward and 3 more in backward. rowwise: an activation or gradient 2 + 1 + 2 (fp8 rows
// and a bf16 transposed copy) + 2 + 1; the weight 3 forward and 4 + 3 in backward. Compiled, an
// activation's or gradient's first read fuses into the op before (2 bytes less). rowwise's backward GEMMs
// run cuBLAS's tensorwise kernel with unit scales and rescale the output after it (torchao/float8/
// float8_ops.py addmm_float8_unwrapped, "the rowwise CUTLASS-based kernel is so slow without
// fast-accum"): the input gradient and the weight gradient read and written once more in bf16.
// `linears` Float8Linear modules read the input (OpContext::separate_projections): each casts it
// (`in` elements) for itself unless `casts` is 1, and each rescales its own input gradient.
std::array<double, 3> torchao_cast_bytes(const LayerOp& op, double in, double grad, double linears, double casts, const OpContext& c) {
  const double weights = op.in * op.out * op.groups, fused = c.compiled ? 2.0 : 0.0;
  if (c.fp8_recipe == Fp8Recipe::tensorwise) {
    // The weight: its amax read, then cast once for the forward and once, transposed, for the input
    // gradient (torchao's roofline: 2 + 3 and 3 bytes a weight). Gathered in fp8 by ZeRO-3, it is used as
    // gathered in the forward, and torchao's mm copies it transposed for the input gradient's cuBLAS call
    // (float8_ops.py preprocess_addmm: b_data.t().contiguous().t() of a row-major operand): 1 read, 1 written.
    const bool gathered = c.fp8_weight_gathers && !expert_op(op);
    return {in * casts * (6 - fused) + (gathered ? 0.0 : weights * 5), grad * (6 - fused) + weights * (gathered ? 2 : 3), 0};
  }
  return {in * casts * (8 - fused) + weights * 3, grad * (8 - fused) + weights * 7 + linears * op.rows * op.in * 4, weights * 4};
}

void add_fp8_quantization(std::vector<LayerOp>& ops, const OpContext& c) {
  std::vector<LayerOp> out;
  out.reserve(2 * ops.size());
  for (LayerOp& op : ops) {
    if (op.cls == OpClass::gemm && !op.high_precision) {
      bool expert = expert_op(op);
      std::string gemm = expert ? op.name.substr(kExpertPrefix.size()) : op.name;
      double in = op.rows * op.in, grad = op.rows * op.out;
      double forward = op.shares_input ? 0.0 : (op.quantize_rows < 0 ? op.rows : op.quantize_rows) * op.in * 3;
      LayerOp q{(expert ? std::string(kExpertPrefix) : std::string()) + "fp8 quantize (" + gemm + " input)",
                OpClass::memory, {0, 0, 0}, {forward, grad * 3, (op.shares_input ? 0.0 : in) * 2 + grad * 2}};
      const double linears = std::max<double>(1.0, static_cast<double>(op.parts.size()));
      if (c.fp8_recipe != Fp8Recipe::blockwise)
        q.bytes = torchao_cast_bytes(op, op.shares_input ? 0.0 : in, grad, linears, c.one_input_cast ? 1.0 : linears, c);
      q.before = op.before;
      op.before = CommPoint::none;
      out.push_back(std::move(q));
    }
    out.push_back(std::move(op));
  }
  ops = std::move(out);
}

// Without fused accumulation each GEMM's weight gradient is added to the accumulated gradients by an
// elementwise kernel after it: it reads the new gradient and reads and writes the accumulator,
// `bytes` per weight (a grouped expert GEMM has one weight matrix per expert). It runs in the weight-
// gradient pass, once per micro-batch, whatever the load on the experts.
void add_grad_accumulation(std::vector<LayerOp>& ops, double bytes) {
  std::vector<LayerOp> out;
  out.reserve(2 * ops.size());
  for (LayerOp& op : ops) {
    const bool weighted = op.cls == OpClass::gemm;
    const double weights = op.in * op.out * op.groups;
    std::string name = "weight-gradient accumulation (" + op.name + ")";
    out.push_back(std::move(op));
    if (weighted) out.push_back({std::move(name), OpClass::memory, {0, 0, 0}, {0, 0, weights * bytes}});
  }
  ops = std::move(out);
}

// The framework's eager figures for an elementwise op, by the name plumb gives it; none: priced fused.
const std::optional<ElementwiseTraffic>* eager_traffic(const LayerOp& op, const EagerElementwise& e) {
  if (op.cls != OpClass::memory) return nullptr;
  auto ends = [&](std::string_view s) { return op.name.ends_with(s); };
  if (op.name == "attention norm") return &e.attention_norm;
  if (op.name == "MLP norm") return &e.mlp_norm;
  if (ends("final norm")) return &e.final_norm;
  if (op.name == "RoPE") return &e.rope;
  if (ends("SwiGLU")) return &e.swiglu;
  if (op.name == "residual add") return &e.residual;
  if (op.name == "cross-entropy (fp32 logits)") return &e.cross_entropy;
  return nullptr;
}

// Eager kernels move more than the fused ones: their bytes per element from the framework profile.
void apply_eager_elementwise(std::vector<LayerOp>& ops, const EagerElementwise& e) {
  for (LayerOp& op : ops)
    if (const std::optional<ElementwiseTraffic>* t = eager_traffic(op, e); t && *t) {
      op.bytes = {op.elements * (*t)->forward, op.elements * (*t)->backward, 0};
      op.unvectorized = {(*t)->unvectorized_forward, (*t)->unvectorized_backward};
    }
}

// Separate linears over one input (LayerOp::parts) each write an input gradient, and autograd sums
// them before the input's own backward. Under tensor parallelism the sum is a kernel of its own before
// the reduce-scatter (Inductor cannot fuse a pointwise op into the collective or into cuBLAS's GEMMs):
// it reads each linear's gradient and writes one. Without it Inductor fuses the sum into the norm's
// backward, which reads the other gradients besides. Eager norm figures that count the sums already
// (torchtitan's: EagerElementwise) leave nothing to add.
void add_input_grad_sums(std::vector<LayerOp>& ops, const OpContext& c) {
  if (c.eager && c.eager->attention_norm) return;
  std::vector<LayerOp> out;
  out.reserve(ops.size() + 2);
  for (LayerOp& op : ops) {
    std::optional<LayerOp> sum;
    if (const auto linears = static_cast<double>(op.parts.size()); linears > 1)
      sum = LayerOp{"input-gradient sum (" + op.name + ")", OpClass::memory, {0, 0, 0},
                    {0, (c.tp > 1 ? linears + 1 : linears - 1) * op.rows * op.in * kElementwiseBytes, 0}};
    out.push_back(std::move(op));
    if (sum) out.push_back(std::move(*sum));
  }
  ops = std::move(out);
}

// Every op a layer, head or MTP module runs besides its own: the fp8 quantization kernels, the
// separate gradient accumulation, the sums of separate linears' input gradients, and the eager
// framework's own elementwise traffic.
void add_kernels_around_gemms(std::vector<LayerOp>& ops, const OpContext& c) {
  if (c.separate_projections) add_input_grad_sums(ops, c);
  if (c.fp8_quantization) add_fp8_quantization(ops, c);
  if (c.grad_accumulation_bytes > 0) add_grad_accumulation(ops, c.grad_accumulation_bytes);
  if (c.eager) apply_eager_elementwise(ops, *c.eager);
}

// `tp_region` is tp_enter when the MLP is tensor-parallel (its first GEMM column-, its last row-parallel);
// `separate`: the gate and up projections run as two linears (OpContext::separate_projections).
void add_mlp(std::vector<LayerOp>& ops, const ModelSpec& m, MlpKind kind, double rows, double f, double shard, double e,
             const std::string& prefix, CommPoint tp_region, bool separate = false) {
  double h = static_cast<double>(m.hidden);
  if (kind == MlpKind::swiglu) {
    ops.push_back(gemm(prefix + "gate+up projection", rows, h, 2 * f / shard, e));
    ops.back().sums_input_grads = true;
    if (separate) ops.back().parts = {f / shard, f / shard};
    ops.push_back(elementwise(prefix + "SwiGLU", rows, 2 * f / shard, f / shard));
  } else {
    ops.push_back(gemm(prefix + "up projection", rows, h, f / shard, e));
    ops.push_back(elementwise(prefix + "GeLU", rows, f / shard, f / shard));
  }
  ops[ops.size() - 2].before = tp_region;
  ops.push_back(gemm(prefix + "down projection", rows, f / shard, h, e));
  ops.back().after = tp_region == CommPoint::none ? CommPoint::none : CommPoint::tp_exit;
}

// Rotary position embedding of `width` query and key elements per token: a fused kernel (Transformer
// Engine's, Megatron-LM's default --apply-rope-fusion) reads and writes them once; its backward reads
// the output gradient and writes the input gradient.
void add_rope(std::vector<LayerOp>& ops, const ModelSpec& m, double rows, double width) {
  if (m.position != PositionKind::rope || width <= 0) return;
  ops.push_back(elementwise("RoPE", rows, width, width, kElementwiseBytes, 2 * width));
}

}  // namespace

namespace {

void add_moe_or_mlp(std::vector<LayerOp>& ops, const ModelSpec& m, std::int64_t layer, const OpContext& c);

// All-to-all context parallelism (OpContext::cp_comm): one kernel over every key for heads/cp of the
// heads (the FLOPs on a rank are the ring's), the exchanges' sizes on the attention op, and Transformer
// Engine's reordering of each exchanged tensor (flash_attn_a2a_communicate: a movedim made contiguous
// and an index_select of the sequence chunks on each side of the all-to-all, two passes that each read
// and write the tensor) as one memory-bound op before the kernel: q, k, v and the output forward, their
// gradients backward.
void add_cp_exchange(std::vector<LayerOp>& ops, const AttentionSpec& a, double T, double heads, double tp, const OpContext& c) {
  const double d_qk = static_cast<double>(a.qk_head_dim()), d_v = static_cast<double>(a.out_head_dim());
  const double kv_heads = kv_heads_on_rank(a, static_cast<std::int64_t>(tp), false);
  const double qkv = T * heads * d_qk + T * kv_heads * (d_qk + d_v), out = T * heads * d_v;
  LayerOp& attention = ops.back();
  attention.cp_exchange_in = qkv * c.element_bytes;
  attention.cp_exchange_out = out * c.element_bytes;
  const double bytes = 2 * 2 * (qkv + out) * c.element_bytes;
  LayerOp copies;
  copies.name = "CP all-to-all reorders";
  copies.cls = OpClass::memory;
  copies.bytes = {bytes, bytes, 0};
  copies.elements = 2 * (qkv + out);
  ops.insert(ops.end() - 1, copies);
}

// Ring attention's merges (OpContext::cp_merge): each of the cp − 1 steps after the first folds its
// partial output into the running one, and in the backward adds its q, k and v gradients to their
// accumulators, every step over the whole local tensors (the load-balanced half steps are counted
// whole: PyTorch's _partial_update rebuilds the whole tensor with torch.cat).
void add_ring_merges(std::vector<LayerOp>& ops, const AttentionSpec& a, double T, double heads, double tp, const OpContext& c) {
  if (c.cp < 2 || (c.cp_merge.forward <= 0 && c.cp_merge.backward <= 0)) return;
  const double steps = static_cast<double>(c.cp - 1), d_qk = static_cast<double>(a.qk_head_dim()), d_v = static_cast<double>(a.out_head_dim());
  const double kv_heads = kv_heads_on_rank(a, static_cast<std::int64_t>(tp), c.cp_merge.repeated_kv);
  const double out = T * heads * d_v, grads = T * heads * d_qk + T * kv_heads * (d_qk + d_v);
  ops.push_back({"ring attention merge", OpClass::memory, {0, 0, 0}, {steps * c.cp_merge.forward * out, steps * c.cp_merge.backward * grads, 0}});
  ops.back().elements = steps * out;
}

// A rank's routed experts as one grouped GEMM: each expert over its own rows, and the weights of every
// expert that receives a token read (at most one per row: a decode-sized batch touches few of them), at
// the experts' weight bytes.
void group_expert_gemm(LayerOp& op, double experts, const OpContext& c) {
  // Experts with no token run no GEMM (grouped kernels skip empty groups).
  op.groups = std::min(experts, std::max(1.0, op.rows));
  const double weights = op.groups * op.in * op.out * c.expert_weight_bytes(c.element_bytes);
  const double traffic = (op.rows * op.in + op.rows * op.out) * c.element_bytes + weights;
  op.bytes = {traffic, traffic, traffic};
}

std::vector<LayerOp> layer_ops_unquantized(const ModelSpec& m, std::int64_t layer, const OpContext& c) {
  const double h = static_cast<double>(m.hidden), e = c.element_bytes, T = c.tokens;
  const double tp = static_cast<double>(c.tp), sp = c.sequence_parallel ? tp : 1.0;
  const AttentionSpec& a = m.attention;
  const double heads = static_cast<double>(a.heads) / tp;
  const CommPoint tp_region = c.tp > 1 ? CommPoint::tp_enter : CommPoint::none;
  std::vector<LayerOp> ops;
  add_stream_mix_in(ops, m, T / sp, "attention");
  ops.push_back(elementwise("attention norm", T / sp, h, h));
  if (a.kind == AttentionKind::compressed) {
    add_compressed_attention_ops(ops, m, layer, c);
    add_moe_or_mlp(ops, m, layer, c);
    return ops;
  }
  const std::size_t first_projection = ops.size();
  if (a.kind == AttentionKind::mla) {
    double q_lora = static_cast<double>(a.q_lora_rank), kv_lora = static_cast<double>(a.kv_lora_rank);
    double qk = static_cast<double>(a.qk_head_dim()), nope = static_cast<double>(a.qk_nope_head_dim);
    if (a.q_lora_rank > 0) {
      ops.push_back(gemm("q down-projection", T, h, q_lora, e));
      ops.push_back(gemm("q up-projection", T, q_lora, heads * qk, e));
    } else {
      ops.push_back(gemm("q projection", T, h, heads * qk, e));
    }
    ops.push_back(gemm("kv down-projection", T, h, kv_lora + static_cast<double>(a.qk_rope_head_dim), e));
    ops.back().shares_input = a.q_lora_rank > 0;  // the normed hidden states the q down-projection read
    ops[first_projection].sums_input_grads = a.q_lora_rank > 0;
    ops.push_back(gemm("kv up-projection", T, kv_lora, heads * (nope + static_cast<double>(a.v_head_dim)), e));
    // Rotary embedding on the queries' rope dimensions and the one shared rope key.
    add_rope(ops, m, T, heads * static_cast<double>(a.qk_rope_head_dim) + static_cast<double>(a.qk_rope_head_dim));
  } else {
    double q = heads * static_cast<double>(a.head_dim), kv = static_cast<double>(a.kv_heads) / tp * static_cast<double>(a.head_dim);
    ops.push_back(gemm("qkv projection", T, h, q + 2 * kv, e));
    ops.back().sums_input_grads = true;
    if (c.separate_projections) ops.back().parts = {q, kv, kv};
    add_rope(ops, m, T, q + kv);
    // Eager grouped-query attention copies K and V out to every query head (torchtitan's repeat_kv);
    // the backward sums their gradients back per group.
    // The copy reads a broadcast (expanded) view, so it is PyTorch's strided copy kernel, element by
    // element (CUDALoops.cuh); the backward's sum over each group is a reduction.
    if (c.eager && c.eager->kv_repeat_copy && kv < q) {
      ops.push_back(elementwise("K/V repeat", T, 2 * kv, 2 * q, kElementwiseBytes, 2 * q + 2 * kv));
      ops.back().unvectorized[0] = {ops.back().bytes[0] / ops.back().elements};
    }
  }
  // Scores and the weighted sum: 2·T·seq·heads·(d_qk + d_v) forward; the input gradient does twice
  // that (Qi et al. Table 1: 4s vs 8s per sbh), the scores have no weights.
  ops[first_projection].before = tp_region;
  const FlashAttentionFlops f = flash_attention_flops(T * heads, c.seq, static_cast<double>(a.qk_head_dim()),
                                                      static_cast<double>(a.out_head_dim()), c.causal_discount && !c.unfused_attention);
  double io = T * heads * static_cast<double>(2 * a.qk_head_dim() + 2 * a.out_head_dim()) * e;  // q, k, v, out
  ops.push_back({"core attention", OpClass::attention, {f.forward, f.backward, 0}, {io, 2 * io, 0}});
  if (!c.unfused_attention) {
    ops.back().backward_recompute_flops = f.backward_recompute;  // the flash backward's QKᵀ again
    ops.back().attention_dropout = m.dropout;
  }
  if (c.cp > 1 && c.cp_comm == CpComm::all_to_all) {
    add_cp_exchange(ops, a, T, heads, tp, c);
  } else {
    // Under ring context parallelism each kernel call sees the local chunk of keys (a ring step's block).
    ops.back().attention_keys = c.seq / static_cast<double>(std::max<std::int64_t>(1, c.cp));
    add_ring_merges(ops, a, T, heads, tp, c);
  }
  // Unfused: softmax reads the scores and writes probabilities; dropout reads them and writes its
  // output and a one-byte mask (half a 16-bit element); the batched GEMMs themselves write the scores
  // and read the dropout output back (one element each). Backward: the GEMMs write the output
  // gradient and read the scores' gradient back; dropout reads the gradient and mask, writes its
  // input gradient; softmax reads that and the probabilities, writes the scores' gradient: 8.5.
  if (c.unfused_attention) ops.push_back(elementwise("softmax+dropout (unfused)", T * heads * c.seq, 3, 3.5, kElementwiseBytes, 8.5));
  ops.push_back(gemm("out projection", T, heads * static_cast<double>(a.out_head_dim()), h, e));
  if (c.tp > 1) ops.back().after = CommPoint::tp_exit;
  add_moe_or_mlp(ops, m, layer, c);
  return ops;
}

// After the attention block: its residual (or mHC post-mix), then the MLP or MoE block with its own.
void add_moe_or_mlp(std::vector<LayerOp>& ops, const ModelSpec& m, std::int64_t layer, const OpContext& c) {
  const double h = static_cast<double>(m.hidden), e = c.element_bytes, T = c.tokens;
  const double tp = static_cast<double>(c.tp), sp = c.sequence_parallel ? tp : 1.0;
  const CommPoint tp_region = c.tp > 1 ? CommPoint::tp_enter : CommPoint::none;
  add_stream_mix_out(ops, m, T / sp, "attention");
  add_stream_mix_in(ops, m, T / sp, "MLP");
  ops.push_back(elementwise("MLP norm", T / sp, h, h));
  if (!m.is_moe_layer(layer)) {
    add_mlp(ops, m, m.mlp.kind, T, static_cast<double>(m.mlp.ffn_hidden), tp, e, "", tp_region, c.separate_projections);
    add_stream_mix_out(ops, m, T / sp, "MLP");
    return;
  }
  const MoeSpec& moe = *m.moe;
  double k = static_cast<double>(moe.top_k);
  ops.push_back(gemm("router", T / sp, h, static_cast<double>(moe.experts), kElementwiseBytes));
  ops.back().high_precision = true;
  ops.push_back(elementwise("permute (dispatch)", T / sp * k, h, h, kElementwiseBytes, 2 * h));  // a gather back
  if (c.ep > 1 && !c.moe_waves) ops.back().after = CommPoint::ep_dispatch;
  // Balanced routing: each EP rank receives as many token copies as it sends, T·k of them.
  add_mlp(ops, m, MlpKind::swiglu, T / sp * k, static_cast<double>(moe.expert_ffn_hidden), static_cast<double>(c.etp), e,
          std::string(kExpertPrefix), CommPoint::none);
  ops[ops.size() - 3].quantize_rows = T / sp;  // DeepSeek-V3 §3.3.3: quantized to fp8, then dispatched
  const double local_experts = std::max(1.0, static_cast<double>(moe.experts) / static_cast<double>(c.ep));
  for (LayerOp* op : {&ops[ops.size() - 3], &ops.back()}) group_expert_gemm(*op, local_experts, c);
  if (c.ep > 1 && !c.moe_waves) ops.back().after = CommPoint::ep_combine;
  if (moe.shared_experts > 0)
    add_mlp(ops, m, MlpKind::swiglu, T, static_cast<double>(moe.shared_experts * moe.shared_expert_ffn_hidden), tp, e,
            "shared expert: ", tp_region);
  ops.push_back(elementwise("unpermute (combine)", T / sp * k, h, h, kElementwiseBytes, 2 * h));
  add_stream_mix_out(ops, m, T / sp, "MLP");
}

}  // namespace


double kv_heads_on_rank(const AttentionSpec& a, std::int64_t tp, bool repeated) {
  const std::int64_t kv = repeated || a.kind != AttentionKind::gqa ? a.heads : a.kv_heads;
  return static_cast<double>(kv) / static_cast<double>(std::max<std::int64_t>(1, tp));
}

std::vector<LayerOp> layer_ops(const ModelSpec& m, std::int64_t layer, const OpContext& c) {
  std::vector<LayerOp> ops = layer_ops_unquantized(m, layer, c);
  add_kernels_around_gemms(ops, c);
  if (c.moe_waves && m.is_moe_layer(layer))
    for (LayerOp& op : ops) {
      // The routed experts' kernels and the token shuffles around them, in one fused kernel
      // (moe_waves.hpp). Tokens land in expert order by TMA, and the SwiGLU with the down projection's fp8
      // cast run in the first GEMM's epilogue (DeepGEMM sm100_fp8_fp4_mega_moe.cuh): no HBM pass of
      // their own.
      op.fused_moe = routed_moe_op(op);
      const bool absorbed = op.fused_moe && op.cls == OpClass::memory && !expert_input_cast(op);
      if (absorbed) {
        op.name += " (in the fused kernel)";
        op.flops = {0, 0, 0};
        op.bytes = {0, 0, 0};
      }
    }
  return ops;
}

std::vector<LayerOp> head_ops(const ModelSpec& m, const OpContext& c) {
  const double h = static_cast<double>(m.hidden);
  const double tp = static_cast<double>(c.tp), sp = c.sequence_parallel ? tp : 1.0;
  const double vocab = static_cast<double>(m.vocab) / tp;
  std::vector<LayerOp> ops{elementwise("final norm", c.tokens / sp, h, h), gemm("LM head", c.tokens, h, vocab, kElementwiseBytes),
                           elementwise("cross-entropy (fp32 logits)", c.tokens, vocab, vocab, 4.0, 2 * vocab)};  // softmax − one-hot
  ops[1].high_precision = true;
  if (c.tp > 1) ops[1].before = CommPoint::tp_enter;
  add_kernels_around_gemms(ops, c);  // the head stays in 16-bit: no fp8 quantization
  return ops;
}

std::vector<LayerOp> mtp_extra_ops(const ModelSpec& m, const OpContext& c) {
  const double h = static_cast<double>(m.hidden), tp = static_cast<double>(c.tp);
  const double sp = c.sequence_parallel ? tp : 1.0;
  std::vector<LayerOp> ops{elementwise("MTP norms", c.tokens / sp, 2 * h, 2 * h), gemm("MTP projection", c.tokens, 2 * h, h / tp, c.element_bytes)};
  add_kernels_around_gemms(ops, c);
  for (LayerOp& op : head_ops(m, c)) {
    op.name = "MTP " + op.name;
    ops.push_back(std::move(op));
  }
  return ops;
}


PassFlops sum_flops(const std::vector<LayerOp>& ops) {
  PassFlops p;
  for (const LayerOp& o : ops) {
    if (o.cls == OpClass::memory) continue;  // elementwise work is bytes, not FLOPs, in every convention here
    p.forward += o.flops[0];
    p.input_grad += o.flops[1];
    p.weight_grad += o.flops[2];
  }
  return p;
}

namespace {

// One token's work through the layers and the head, in one walk over their ops.
struct TokenFlops {
  PassFlops passes;             // forward, input and weight gradients, the head's included
  double head_forward = 0;      // of passes.forward: the head's
  double flash_recompute = 0;   // the scores a flash backward computes again
  double rerun_forward = 0;     // the forward a selective `recompute` reruns: each op's recompute_share
};

TokenFlops per_token(const ModelSpec& m, double seq, bool causal, const Recompute& recompute = {}) {
  OpContext c;
  c.tokens = 1;
  c.seq = seq;
  c.causal_discount = causal;
  TokenFlops t;
  auto add = [&](const std::vector<LayerOp>& ops, bool transformer_layer) {
    PassFlops p = sum_flops(ops);
    t.passes.forward += p.forward;
    t.passes.input_grad += p.input_grad;
    t.passes.weight_grad += p.weight_grad;
    for (const LayerOp& o : ops) {
      if (transformer_layer) t.flash_recompute += o.backward_recompute_flops;
      if (o.cls != OpClass::memory) t.rerun_forward += recompute_share(o, recompute, m.attention, transformer_layer) * o.flops[0];
    }
    return p;
  };
  for (std::int64_t l = 0; l < m.layers; ++l) add(layer_ops(m, l, c), true);
  t.head_forward = add(head_ops(m, c), false).forward;
  return t;
}

}  // namespace

double model_flops_per_token(const ModelSpec& m, double seq) { return per_token(m, seq, false).passes.total(); }

double hardware_flops_per_token(const ModelSpec& m, double seq, const Recompute& recompute, bool causal) {
  const TokenFlops t = per_token(m, seq, causal, recompute);
  const double extra = recompute.full ? t.passes.forward - t.head_forward : t.rerun_forward;
  OpContext c;
  c.seq = seq;
  c.causal_discount = causal;
  const std::vector<LayerOp> mtp_layer = layer_ops(m, m.mtp_layer(), c);
  double flash_recompute = t.flash_recompute;
  for (const LayerOp& o : mtp_layer) flash_recompute += static_cast<double>(m.mtp_depth) * o.backward_recompute_flops;
  double mtp = static_cast<double>(m.mtp_depth) * (sum_flops(mtp_layer).total() + sum_flops(mtp_extra_ops(m, c)).total());
  return t.passes.total() + extra + mtp + (causal ? flash_recompute : 0.0);
}

}  // namespace plumb
