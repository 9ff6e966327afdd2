#pragma once
// The builders every op list uses: a GEMM, an elementwise op, the residual add (models/costs internal).
#include <string>

#include "models/costs/layer_op.hpp"
#include "models/spec/model_spec.hpp"

namespace plumb {

// A GEMM over `rows` tokens from `in` to `out` features: 2·rows·in·out FLOPs per pass. Bytes: read the
// input and the weight, write the output (the input gradient reads the output gradient and weight,
// the weight gradient reads both activations).
inline LayerOp gemm(std::string name, double rows, double in, double out, double e) {
  double f = 2 * rows * in * out;
  double traffic = (rows * in + in * out + rows * out) * e;
  LayerOp op{std::move(name), OpClass::gemm, {f, f, f}, {traffic, traffic, traffic}};
  op.rows = rows;
  op.in = in;
  op.out = out;
  return op;
}

// An elementwise op reading `read` and writing `write` elements per token, in 16-bit (fp8 training
// keeps elementwise work in bf16); no weight gradient. Its backward reads what the forward read (the
// saved inputs) and the output gradient, and writes the input gradient: read + write in, read out —
// unless `backward` gives its traffic in elements per token.
inline constexpr double kElementwiseBytes = 2.0;
inline LayerOp elementwise(std::string name, double rows, double read, double write, double e = kElementwiseBytes,
                    double backward = -1) {
  double forward = rows * (read + write) * e;
  double back = rows * (backward >= 0 ? backward : 2 * read + write) * e;
  LayerOp op{std::move(name), OpClass::memory, {rows * read, rows * read, 0}, {forward, back, 0}};
  op.elements = rows * write;
  return op;
}

// The residual connection after each block: read the block output and the residual stream, write
// the sum; with bias and dropout (GPT, Megatron-LM's fused bias-dropout-add) also the bias and a
// one-byte mask (half a 16-bit element).
inline LayerOp residual(const ModelSpec& m, double rows, double h) {
  // Backward: the sum passes its gradient through unchanged (no traffic of its own); dropout's reads
  // the gradient and the one-byte mask and writes its input gradient.
  if (m.dropout) return elementwise("bias+dropout+residual add", rows, 2 * h, 1.5 * h, kElementwiseBytes, 2.5 * h);
  return elementwise("residual add", rows, 2 * h, h, kElementwiseBytes, 0);
}

}  // namespace plumb
