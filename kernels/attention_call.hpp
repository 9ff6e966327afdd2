#pragma once
// One attention call as the flash kernel (kernels/flash_attention) runs it: `batch_heads` independent
// heads, each `seq` queries against as many keys, Q and K of width d_qk, V and the output of width
// d_v, causal or not; tensors [batch_heads][seq][d] in bf16. Plain C++: the CPU side plans buffers and
// checks shapes with it.
#include <cstddef>
#include <cstdint>

namespace plumb::kernels {

// The kernel's tile: 64 queries (forward) or 64 keys (backward) per thread block.
inline constexpr std::int64_t kAttentionTile = 64;

struct AttentionCall {
  std::int64_t batch_heads = 1, seq = 0, d_qk = 0, d_v = 0;
  bool causal = true;

  // Head widths the kernel is built for: (64, 64), (128, 128) and MLA's (192, 128).
  static constexpr const char* kWidths = "(64, 64), (128, 128) or (192, 128)";
  static bool supported_widths(std::int64_t d_qk, std::int64_t d_v) {
    return (d_qk == 64 && d_v == 64) || (d_qk == 128 && d_v == 128) || (d_qk == 192 && d_v == 128);
  }
  bool supported() const { return supported_widths(d_qk, d_v) && seq > 0 && seq % kAttentionTile == 0 && batch_heads > 0; }

  std::size_t elements(std::int64_t width) const { return static_cast<std::size_t>(batch_heads * seq * width); }
  std::size_t qk_bytes() const { return elements(d_qk) * 2; }    // Q, K, dQ, dK each
  std::size_t v_bytes() const { return elements(d_v) * 2; }      // V, O, dO, dV each
  std::size_t row_bytes() const { return elements(1) * 4; }      // the log-sum-exp, the backward's rowsum(dO·O)
  std::size_t dq_accumulator_bytes() const { return elements(d_qk) * 4; }  // fp32, summed over key tiles
  // Every tensor of a forward and its backward.
  std::size_t bytes() const { return 4 * qk_bytes() + 4 * v_bytes() + 2 * row_bytes() + dq_accumulator_bytes(); }
};

}  // namespace plumb::kernels
