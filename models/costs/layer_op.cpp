#include "models/costs/layer_op.hpp"

namespace plumb {

FlashAttentionFlops flash_attention_flops(double query_rows, double keys, double d_qk, double d_v, bool causal) {
  FlashAttentionFlops f;
  f.forward = 2 * query_rows * keys * (d_qk + d_v) * (causal ? 0.5 : 1.0);
  f.backward = 2 * f.forward;
  f.backward_recompute = f.forward * d_qk / (d_qk + d_v);
  return f;
}

GemmShape gemm_shape(const LayerOp& op, int pass) {
  const double rows = op.rows / op.groups;
  switch (pass) {
    case 0: return {rows, op.out, op.in, op.groups};
    case 1: return {rows, op.in, op.out, op.groups};
    default: return {op.in, op.out, rows, op.groups};
  }
}

LayerOp row_chunk(const LayerOp& op, double parts) {
  LayerOp chunk = op;
  chunk.rows /= parts;
  chunk.elements /= parts;
  for (std::size_t i = 0; i < 3; ++i) {
    chunk.flops[i] /= parts;
    chunk.bytes[i] /= parts;
  }
  return chunk;
}

LayerOp linear_of(const LayerOp& op, std::size_t i) {
  LayerOp one = op;
  const double width = op.parts.at(i), share = width / op.out;
  const double whole = op.rows * op.in + op.in * op.out + op.rows * op.out;
  const double own = op.rows * op.in + op.in * width + op.rows * width;
  one.out = width;
  one.parts.clear();
  for (std::size_t p = 0; p < 3; ++p) {
    one.flops[p] = op.flops[p] * share;
    one.bytes[p] = op.bytes[p] * own / whole;
  }
  return one;
}

bool recomputed(const LayerOp& op, const Recompute& r) {
  auto ends = [&](std::string_view s) { return op.name.ends_with(s); };
  if (r.core_attention && (op.cls == OpClass::attention || ends("(unfused)") || op.name == "ring attention merge")) return true;
  if (r.norms && ends("norm")) return true;
  if (r.mla_up_proj && (ends("q up-projection") || ends("kv up-projection"))) return true;
  if (r.activation && (ends("SwiGLU") || ends("GeLU"))) return true;
  // torchtitan's per-op policies save only matmuls, attention and collectives: the rotary embedding
  // and the K/V copies run again too.
  if ((r.alternate_matmuls || r.matmuls) && (op.name == "RoPE" || op.name == "K/V repeat")) return true;
  return false;
}

double recompute_share(const LayerOp& op, const Recompute& r, const AttentionSpec& a, bool transformer_layer) {
  if (recomputed(op, r)) return 1.0;
  if (!transformer_layer || op.cls != OpClass::gemm) return 0.0;
  if (r.matmuls) return 1.0;
  if (!r.alternate_matmuls) return 0.0;
  if (op.name == "qkv projection") {
    const double q = static_cast<double>(a.heads), kv = static_cast<double>(a.kind == AttentionKind::gqa ? a.kv_heads : a.heads);
    return kv / (q + 2 * kv);
  }
  if (op.name == "out projection") return 1.0;
  if (op.name == "gate+up projection") return 0.5;
  return 0.0;
}

std::optional<std::size_t> recomputed_linear(const LayerOp& op, const Recompute& r) {
  if (!r.alternate_matmuls || r.matmuls || op.parts.size() < 2) return std::nullopt;
  if (op.name == "qkv projection" || op.name == "gate+up projection") return 1;
  return std::nullopt;
}

}  // namespace plumb
