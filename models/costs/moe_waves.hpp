#pragma once
// DeepSeek-V4's fine-grained expert parallelism (report §3.1; DeepGEMM's MegaMoE kernel, PRs #304 and
// #316, deepseek-ai/DeepGEMM at 891d57b4): one persistent kernel per MoE layer on all SMs. A rank's
// experts run in waves; while a wave's experts compute (both GEMMs and the SwiGLU), the next wave's
// tokens are pulled in FP8 (dispatch) and the previous wave's outputs leave in BF16 (combine). As a
// three-stage pipeline over W equal waves:
//   time = D + G + C + (W − 1) · max(D, G, C) + fixed + max(reduction, end barrier)
// with D, G, C one wave's dispatch, compute and combine; the kernel's serial setup and barriers (`fixed`)
// are not overlapped; after the barrier that follows the last combine, the final top-k sum of the
// returned copies (`reduction`) runs beside the workspace clean-up and the barrier that ends the kernel.
#include <array>
#include <cstdint>

namespace plumb {

// DeepGEMM's wave rule (csrc/jit_kernels/heuristics/mega_moe.hpp at 891d57b4): BLOCK_M (tokens per
// tile) from the expected tokens per expert (cut-offs 8.5 / 16.5 / 32.5 / 64.5 / 96.5 → 16, 32, 64,
// 96, 128, else 192); L1 tiles per expert = ⌈⌈tokens per expert⌉ / BLOCK_M⌉ × 2·ffn / 128; experts per
// wave = ⌈2 · SMs / L1 tiles per expert⌉ (two tiles per SM: uneven routing leaves some short), at most
// the rank's experts and raised to a divisor of them; under one token per expert, one wave of all.
struct WavePlan {
  double tokens_per_expert = 0;
  std::int64_t block_m = 0;
  std::int64_t experts_per_wave = 1;
  std::int64_t waves = 1;
};
WavePlan wave_plan(double pairs_per_rank, std::int64_t experts_per_rank, std::int64_t expert_ffn, std::int64_t sms);

// One pass of the fused kernel: its stages summed over all waves (seconds).
struct WavePipeline {
  std::int64_t waves = 1;
  double dispatch = 0, compute = 0, combine = 0;
  double reduction = 0, fixed = 0;
  double end_barrier = 0;  // runs beside the reduction
  double total() const;
  // The wave's communication outlasts its compute: overlap no longer hides it (the report's bound on
  // compute per byte of interconnect, 2 × expert width FLOP/byte for FP8 in and BF16 out).
  bool comm_bound() const { return dispatch > compute || combine > compute; }
};

// The kernel's serial cost beside its waves, as DeepGEMM's kernel comments time its parts (891d57b4,
// impls/sm100_fp8_fp4_mega_moe.cuh): the SM-offset atomics (~6.5 µs), writing the source indices (~2 µs)
// and two NVLink barriers (grid sync, cross-rank signal, grid sync: ~4 µs each; comm/barrier.cuh tags 1
// and 2), before the pull and before the combine's reduction. A third barrier (tag 3) ends the kernel
// after the dispatch warps have cleaned the workspace, beside the epilogue warps' reduction.
inline constexpr double kMegaMoeFixedSeconds = (6.5 + 2.0 + 2 * 4.0) * 1e-6;
inline constexpr double kMegaMoeEndBarrierSeconds = 4.0e-6;
// The reduction's floor, one token's chain: its first returned copy loaded, summed and written ~3 µs
// (the kernel's comment "1 token, 1 topk latency"), each further copy one more load from HBM, loaded two
// deep so that only its latency shows: a cold 8 KB TMA load on a B200 takes a median 2,088 cycles at
// 1.965 GHz, 1.06 µs (SemiAnalysisAI/microbench-blackwell 9a068d8, tma2d_latency/tma2d_lat_results.csv,
// one CTA a SM, L2 flushed; the kernel is SM100-only, so a B200 figure). The same benchmark's earlier
// committed run (f435322) measured 962 cycles, 0.49 µs: the figure is uncertain by about 2×.
inline constexpr double kMegaMoeFirstCopySeconds = 3.0e-6;
inline constexpr double kSm100TmaLoadLatencySeconds = 2088.0 / 1.965e9;
double reduction_floor(double top_k);

// The memory passes of the non-fused path the fused kernel is measured against, as DeepGEMM's MegaMoE
// benchmark runs it (tests/test_mega_moe.py at 54e2261: DeepEP V2's dispatch and combine around two
// grouped GEMMs and tilelang's SwiGLU): bytes of
//  [0] DeepEP's dispatch copy epilogue (deep_ep impls/dispatch_copy_epilogue.cuh, dd758ca, `do_expand`):
//      each token a rank received read once, written into each of its expert slots — FP8 with one
//      UE8M0 scale per 32 channels, or bf16;
//  [1] the SwiGLU with the routing weights applied, written as the down projection's FP8 input
//      (swiglu_apply_weight_to_fp8: bf16 gate and up read, FP8 and its per-32 scales written), or bf16;
//  [2] DeepEP's combine reduce epilogue (impls/combine_reduce_epilogue.cuh): each token's returned bf16
//      copies, one per top-k slot, read and summed into one.
// Per rank: `tokens` it holds, `ranks_reached` the ranks a token goes to on average; balanced routing.
std::array<double, 3> separate_path_memory_bytes(double tokens, double top_k, double ranks_reached, double hidden,
                                                 double expert_ffn, bool fp8);
}  // namespace plumb
