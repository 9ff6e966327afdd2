#include "kernels/bench/attention_bench.hpp"

#include "kernels/device_fill.hpp"

namespace plumb::kernels {

AttentionBuffers::AttentionBuffers(const AttentionCall& c, std::uint32_t seed)
    : q(c.qk_bytes()), k(c.qk_bytes()), v(c.v_bytes()), o(c.v_bytes()), dout(c.v_bytes()), dq(c.qk_bytes()), dk(c.qk_bytes()),
      dv(c.v_bytes()), lse(c.row_bytes()), delta(c.row_bytes()), dq_accumulator(c.dq_accumulator_bytes()) {
  fill_nonzero(q.p, c.elements(c.d_qk), Element::bf16, seed + 1);
  fill_nonzero(k.p, c.elements(c.d_qk), Element::bf16, seed + 2);
  fill_nonzero(v.p, c.elements(c.d_v), Element::bf16, seed + 3);
  fill_nonzero(o.p, c.elements(c.d_v), Element::bf16, seed + 4);  // what a forward writes before any backward reads it
  fill_nonzero(dout.p, c.elements(c.d_v), Element::bf16, seed + 5);
  check(cudaMemset(lse.p, 0, c.row_bytes()), "cudaMemset(lse)");
}

AttentionTensors AttentionBuffers::tensors() {
  return {static_cast<const __nv_bfloat16*>(q.p), static_cast<const __nv_bfloat16*>(k.p), static_cast<const __nv_bfloat16*>(v.p),
          static_cast<__nv_bfloat16*>(o.p), static_cast<float*>(lse.p)};
}

AttentionGradients AttentionBuffers::gradients() {
  return {static_cast<const __nv_bfloat16*>(dout.p), static_cast<float*>(delta.p), static_cast<float*>(dq_accumulator.p),
          static_cast<__nv_bfloat16*>(dq.p), static_cast<__nv_bfloat16*>(dk.p), static_cast<__nv_bfloat16*>(dv.p)};
}

AttentionTiming time_attention(const AttentionCall& c, int warmup, int repetitions) {
  AttentionBuffers b(c, 77);
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  AttentionTiming t;
  t.repetitions = repetitions;
  try {
    const AttentionTensors x = b.tensors();
    const AttentionGradients g = b.gradients();
    std::vector<double> f = time_runs(stream, warmup, repetitions, [&](int) { flash_attention_forward(c, x, stream); });
    std::vector<double> w = time_runs(stream, warmup, repetitions, [&](int) { flash_attention_backward(c, x, g, stream); });
    t.forward_seconds = f[f.size() / 2];
    t.backward_seconds = w[w.size() / 2];
  } catch (...) {
    cudaStreamDestroy(stream);
    throw;
  }
  cudaStreamDestroy(stream);
  return t;
}

}  // namespace plumb::kernels
