#include "models/costs/compressed_attention.hpp"

#include <algorithm>

#include "models/costs/op_builders.hpp"

namespace plumb {
namespace {

// Mean over positions t = 0..s−1 of min(t/ratio, cap): entries grow one per `ratio` tokens up to `cap`.
double mean_capped_growth(double s, double ratio, double cap) {
  const double full = s / ratio;  // entries at the last position
  if (full <= cap) return full / 2.0;
  const double ramp = cap * ratio;  // positions before the cap is reached
  return (cap * ramp / 2.0 + cap * (s - ramp)) / s;
}

}  // namespace

CompressedKeys compressed_keys(const ModelSpec& m, std::int64_t layer, double seq, bool causal) {
  const AttentionSpec& a = m.attention;
  const double window = static_cast<double>(a.sliding_window);
  const double cap_none = 1e300;
  CompressedKeys k;
  k.window = causal ? mean_capped_growth(seq, 1.0, window) : std::min(window, seq);
  const std::int64_t ratio = m.compress_ratio(layer);
  if (ratio == 0) return k;
  const double r = static_cast<double>(ratio);
  if (ratio == a.sparse_ratio) {
    const double topk = static_cast<double>(a.index_topk);
    k.scored = causal ? mean_capped_growth(seq, r, cap_none) : seq / r;
    k.compressed = causal ? mean_capped_growth(seq, r, topk) : std::min(topk, seq / r);
  } else {
    k.compressed = causal ? mean_capped_growth(seq, r, cap_none) : seq / r;
  }
  return k;
}

CpExchange compressed_cp_exchange(const ModelSpec& m, std::int64_t layer, double tokens, double sequences, std::int64_t cp) {
  CpExchange x;
  if (cp <= 1) return x;
  const AttentionSpec& a = m.attention;
  const double c = static_cast<double>(a.head_dim), bytes = 2.0;
  const std::int64_t ratio = m.compress_ratio(layer);
  const bool sparse = ratio > 0 && ratio == a.sparse_ratio;
  const double index_dim = static_cast<double>(a.index_head_dim);
  double boundary = static_cast<double>(a.sliding_window) * c;  // raw KV entries per sequence
  if (sparse)  // the overlapping block before the chunk: entry and gate projections, 2·2c and 2·2·index_dim wide
    boundary += static_cast<double>(ratio) * (4 * c + 4 * index_dim);
  x.boundary_bytes = sequences * boundary * bytes;
  if (ratio > 0)
    x.gather_bytes = static_cast<double>(cp) * tokens / static_cast<double>(ratio) * (c + (sparse ? index_dim : 0.0)) * bytes;
  return x;
}

void add_compressed_attention_ops(std::vector<LayerOp>& ops, const ModelSpec& m, std::int64_t layer, const OpContext& c) {
  const AttentionSpec& a = m.attention;
  const double h = static_cast<double>(m.hidden), e = c.element_bytes, T = c.tokens;
  const double tp = static_cast<double>(c.tp);
  const double heads = static_cast<double>(a.heads) / tp, width = static_cast<double>(a.head_dim);
  const double q_lora = static_cast<double>(a.q_lora_rank);
  const std::size_t first = ops.size();
  ops.push_back(gemm("q down-projection", T, h, q_lora, e));
  ops.push_back(elementwise("q norm", T, q_lora, q_lora));
  ops.push_back(gemm("q up-projection", T, q_lora, heads * width, e));
  ops.push_back(gemm("kv projection (one shared head)", T, h, width, e));
  ops.back().shares_input = true;  // the normed hidden states the q down-projection read
  ops.push_back(elementwise("kv norm + rope", T, width, width));
  ops[first].before = c.tp > 1 ? CommPoint::tp_enter : CommPoint::none;
  const std::int64_t ratio = m.compress_ratio(layer);
  if (ratio > 0) {
    const bool sparse = ratio == a.sparse_ratio;
    const double wide = (sparse ? 2.0 : 1.0) * width;  // overlapping windows: twice the channels
    // Entry and gate projections of every token, then a softmax-weighted pool per `ratio` tokens.
    ops.push_back(gemm("KV compressor projections", T, h, 2 * wide, e));
    ops.back().shares_input = true;
    ops.push_back(elementwise("KV compressor pooling", T, 2 * wide, width / static_cast<double>(ratio)));
    if (sparse) {
      const double index = static_cast<double>(a.index_heads * a.index_head_dim);
      const double index_dim = static_cast<double>(a.index_head_dim);
      ops.push_back(gemm("indexer query projection", T, q_lora, index, e));
      ops.push_back(gemm("indexer head weights", T, h, static_cast<double>(a.index_heads), e));
      ops.back().shares_input = true;
      ops.push_back(gemm("indexer key compressor projections", T, h, 4 * index_dim, e));
      ops.back().shares_input = true;
      ops.push_back(elementwise("indexer key pooling", T, 4 * index_dim, index_dim / static_cast<double>(ratio)));
      // Scores of every query against every compressed key (a ReLU dot product per indexer head), then
      // the top-k over them; no values, so the work is the score half of an attention kernel.
      const CompressedKeys full = compressed_keys(m, layer, c.seq, false);
      const CompressedKeys run = compressed_keys(m, layer, c.seq, c.causal_discount);
      const double rows = T * static_cast<double>(a.index_heads);
      const double forward = 2 * rows * full.scored * index_dim;
      LayerOp score{"indexer scores", OpClass::attention, {forward, 2 * forward, 0},
                    {T * (index + full.scored * index_dim) * e, 2 * T * (index + full.scored * index_dim) * e, 0}};
      if (c.causal_discount) {  // what the kernel executes: the causal mean of the keys
        score.flops[0] = 2 * rows * run.scored * index_dim;
        score.flops[1] = 2 * score.flops[0];
      }
      ops.push_back(std::move(score));
      ops.push_back(elementwise("indexer top-k", T, (c.causal_discount ? run.scored : full.scored), static_cast<double>(a.index_topk), 4.0));
    }
  }
  // Core attention over the window and the compressed entries: one 512-wide KV head serves as key and
  // value for every query head (K = V), and a sink logit per head joins the softmax.
  const CompressedKeys keys = compressed_keys(m, layer, c.seq, c.causal_discount && !c.unfused_attention);
  const FlashAttentionFlops f = flash_attention_flops(T * heads, keys.total(), width, width, false);
  const double io = T * heads * 4 * width * e;  // q, out, and their gradients' share; K/V are one head
  ops.push_back({"core attention (window + compressed)", OpClass::attention, {f.forward, f.backward, 0}, {io, 2 * io, 0}});
  ops.back().backward_recompute_flops = f.backward_recompute;
  const CpExchange cp = compressed_cp_exchange(m, layer, T, T * static_cast<double>(c.cp) / c.seq, c.cp);
  ops.back().cp_boundary_bytes = cp.boundary_bytes;
  ops.back().cp_gather_bytes = cp.gather_bytes;
  // Grouped low-rank output: each of the rank's o_groups/tp groups maps its heads to o_lora_rank, then
  // one projection back to the hidden size.
  const double groups = static_cast<double>(a.o_groups) / tp, o_lora = static_cast<double>(a.o_lora_rank);
  LayerOp grouped = gemm("grouped output projection", T * groups, heads * width / groups, o_lora, e);
  grouped.groups = groups;
  grouped.flops = {2 * T * heads * width * o_lora, 2 * T * heads * width * o_lora, 2 * T * heads * width * o_lora};
  ops.push_back(std::move(grouped));
  ops.push_back(gemm("out projection", T, groups * o_lora, h, e));
  if (c.tp > 1) ops.back().after = CommPoint::tp_exit;
}

void add_stream_mix_in(std::vector<LayerOp>& ops, const ModelSpec& m, double rows, const std::string& block) {
  if (m.residual_streams <= 1) return;
  const double n = static_cast<double>(m.residual_streams), h = static_cast<double>(m.hidden);
  LayerOp mix = gemm("mHC mixing values (" + block + ")", rows, n * h, (2 + n) * n, kElementwiseBytes);
  mix.high_precision = true;  // fp32 weights (checkpoint hc_*_fn)
  ops.push_back(std::move(mix));
  // Sinkhorn on the n×n combination (a few hundred flops a token) fused with the pre-mix: read the n
  // streams, write the block's input.
  ops.push_back(elementwise("mHC Sinkhorn + pre-mix (" + block + ")", rows, n * h, h));
}

void add_stream_mix_out(std::vector<LayerOp>& ops, const ModelSpec& m, double rows, const std::string& block) {
  const double h = static_cast<double>(m.hidden);
  if (m.residual_streams <= 1) {
    ops.push_back(residual(m, rows, h));
    return;
  }
  // Read the n streams and the block's output, write n streams: n·h (x·combination) + h (post weights).
  // Backward reads the saved streams and the n stream gradients, writes both gradients.
  const double n = static_cast<double>(m.residual_streams);
  ops.push_back(elementwise("mHC post-mix (" + block + ")", rows, (n + 1) * h, n * h, kElementwiseBytes, 3 * n * h + h));
}

}  // namespace plumb
