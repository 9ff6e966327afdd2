#pragma once
// DeepSeek-V4's compressed attention and mHC residual streams as ops (technical report §2.1–2.2; shapes
// from the reference inference/model.py, ../shared/reference/deepseek-v4.md). Each query reads a sliding
// window of raw KV plus compressed KV entries: every entry of a heavily compressed layer (HCA, ratio
// 128), the indexer's top-k of a sparse layer's (CSA, ratio 4), none in a window-only layer.
#include <cstdint>
#include <string>
#include <vector>

#include "models/costs/layer_op.hpp"
#include "models/spec/model_spec.hpp"

namespace plumb {

// Keys one query reads over a sequence of `seq`: in full (the model-FLOPs convention, as for dense
// attention: no causal discount), or, `causal`, the mean over the sequence's positions that a causal
// kernel executes — the window fills over its first `window` positions, compressed entries appear one
// per `ratio` tokens, and top-k caps them once ratio·k tokens have passed. Continuous approximations
// (floors dropped).
struct CompressedKeys {
  double window = 0;      // raw KV entries
  double compressed = 0;  // compressed entries attended
  double scored = 0;      // compressed entries the indexer scores (CSA)
  double total() const { return window + compressed; }
};
CompressedKeys compressed_keys(const ModelSpec& m, std::int64_t layer, double seq, bool causal);

// Context parallelism for compressed attention, in two stages (DeepSeek-V4 report §3; the reference's
// "Training recipe"): each rank passes the next one the entries its first tokens need from before its
// chunk — the sliding window's raw KV and, in a sparse layer, the previous block's compressor inputs
// (its own and the indexer's) — then the compressed KV (and in a sparse layer the indexer's compressed
// keys) is all-gathered. Bytes for one micro-batch of `sequences` sequences whose `tokens` are this
// rank's chunk, in 16-bit: what the rank sends to its neighbour, and the all-gather's whole output.
struct CpExchange {
  double boundary_bytes = 0;
  double gather_bytes = 0;
};
CpExchange compressed_cp_exchange(const ModelSpec& m, std::int64_t layer, double tokens, double sequences, std::int64_t cp);

// The attention block of a compressed-attention layer, from the query down-projection to the output
// projection (the norm before and the residual after are the caller's).
void add_compressed_attention_ops(std::vector<LayerOp>& ops, const ModelSpec& m, std::int64_t layer, const OpContext& c);

// mHC around a block over `rows` tokens: before it, the mixing values (a [n·h → (2+n)·n] matmul) and the
// Sinkhorn-normalised pre-mix of the n streams into the block's input; after it, the post-mix writing
// the n streams back. With one stream, the plain residual add.
void add_stream_mix_in(std::vector<LayerOp>& ops, const ModelSpec& m, double rows, const std::string& block);
void add_stream_mix_out(std::vector<LayerOp>& ops, const ModelSpec& m, double rows, const std::string& block);

}  // namespace plumb
