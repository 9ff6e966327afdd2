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

}  // namespace plumb
