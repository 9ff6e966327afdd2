#include "kernels/flash_attention.hpp"

#include <cmath>
#include <mma.h>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cuda_check.hpp"

namespace plumb::kernels {
namespace {

namespace wmma = nvcuda::wmma;
using bf16 = __nv_bfloat16;

constexpr int kTile = static_cast<int>(kAttentionTile);  // queries (forward) or keys (backward) per block
constexpr int kWarps = kTile / 16;                        // each warp owns 16 of the tile's rows
constexpr int kThreads = 32 * kWarps;
constexpr float kLog2e = 1.4426950408889634f;

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// Shared-memory rows are padded against bank conflicts; WMMA needs leading dimensions of whole 16
// bytes and fragment pointers on 32 bytes, which 16-row steps of these widths keep.
__host__ __device__ constexpr int padded(int d) { return d + 8; }  // bf16 rows of width d
constexpr int kScoreLd = kTile + 4;            // fp32 score rows
constexpr int kProbLd = kTile + 8;             // bf16 probability rows
constexpr std::size_t round128(std::size_t b) { return (b + 127) / 128 * 128; }
constexpr std::size_t bf16_tile(int d) { return round128(std::size_t{kTile} * padded(d) * 2); }
constexpr std::size_t score_tile() { return round128(std::size_t{kTile} * kScoreLd * 4); }
constexpr std::size_t prob_tile() { return round128(std::size_t{kTile} * kProbLd * 2); }

// Forward: Q, K, V tiles, the scores, the probabilities, the output accumulator, row max and sum.
template <int DQK, int DV>
struct ForwardSmem {
  static constexpr std::size_t q = 0, k = q + bf16_tile(DQK), v = k + bf16_tile(DQK), s = v + bf16_tile(DV), p = s + score_tile(),
                               o = p + prob_tile(), stats = o + round128(std::size_t{kTile} * (DV + 4) * 4),
                               bytes = stats + round128(2 * kTile * 4);
};
// Backward: K, V (the block's keys), Q, dO (the query tile), Sᵀ and dPᵀ in fp32, Pᵀ and dSᵀ in bf16,
// the tile's log-sum-exp and rowsum(dO·O), a 16×16 fp32 scratch per warp.
template <int DQK, int DV>
struct BackwardSmem {
  static constexpr std::size_t k = 0, v = k + bf16_tile(DQK), q = v + bf16_tile(DV), dout = q + bf16_tile(DQK), s = dout + bf16_tile(DV),
                               dp = s + score_tile(), p = dp + score_tile(), ds = p + prob_tile(), rows = ds + prob_tile(),
                               scratch = rows + round128(2 * kTile * 4), bytes = scratch + round128(kWarps * 256 * 4);
};

__device__ float warp_max(float x) {
  for (int o = 16; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ float warp_sum(float x) {
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// kTile rows of width D from `src` (rows of D) into `dst` (padded rows), 16 bytes per load.
template <int D>
__device__ void load_tile(bf16* dst, const bf16* src) {
  constexpr int vectors = D / 8;
  for (int i = threadIdx.x; i < kTile * vectors; i += kThreads) {
    const int r = i / vectors, c = i % vectors;
    *reinterpret_cast<uint4*>(dst + r * padded(D) + c * 8) = *reinterpret_cast<const uint4*>(src + static_cast<std::size_t>(r) * D + c * 8);
  }
}

// out[16 × kTile] (fp32, rows of kScoreLd) = a[16 × D] · b[kTile × D]ᵀ: a warp's 16 rows of a tile
// against every row of another (scores; the backward's transposed scores and dPᵀ).
template <int D>
__device__ void rows_times_tile_t(const bf16* a, const bf16* b, float* out) {
  for (int c = 0; c < kTile / 16; ++c) {
    FragC acc;
    wmma::fill_fragment(acc, 0.f);
    for (int d = 0; d < D / 16; ++d) {
      FragA x;
      FragBT y;
      wmma::load_matrix_sync(x, a + d * 16, padded(D));
      wmma::load_matrix_sync(y, b + c * 16 * padded(D) + d * 16, padded(D));
      wmma::mma_sync(acc, x, y, acc);
    }
    wmma::store_matrix_sync(out + c * 16, acc, kScoreLd, wmma::mem_row_major);
  }
}

// acc += a[16 × kTile] · b[kTile × 16]: a is bf16 with rows of kProbLd (Layout row_major: a's own
// rows; col_major: columns of the matrix stored there, a transpose read in place), b 16 columns of
// a tile of width D.
template <int D, typename Layout>
__device__ void accumulate_strip(FragC& acc, const bf16* a, const bf16* b) {
  for (int t = 0; t < kTile / 16; ++t) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, Layout> x;
    FragB y;
    wmma::load_matrix_sync(x, a + (std::is_same_v<Layout, wmma::row_major> ? t * 16 : t * 16 * kProbLd), kProbLd);
    wmma::load_matrix_sync(y, b + t * 16 * padded(D), padded(D));
    wmma::mma_sync(acc, x, y, acc);
  }
}

// A warp's 16×16 fp32 fragment (scaled) to bf16 rows of width `ld` in global memory, through its scratch.
__device__ void store_fragment_bf16(FragC& acc, float scale, float* scratch, bf16* out, std::size_t ld) {
  wmma::store_matrix_sync(scratch, acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int e = threadIdx.x % 32; e < 256; e += 32) out[static_cast<std::size_t>(e / 16) * ld + e % 16] = __float2bfloat16(scratch[e] * scale);
  __syncwarp();
}

template <int DQK, int DV>
__global__ void __launch_bounds__(kThreads) forward_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
                                                           bf16* __restrict__ o, float* __restrict__ lse, int seq, bool causal, float scale_log2) {
  extern __shared__ __align__(128) unsigned char smem[];
  using L = ForwardSmem<DQK, DV>;
  bf16* sq = reinterpret_cast<bf16*>(smem + L::q);
  bf16* sk = reinterpret_cast<bf16*>(smem + L::k);
  bf16* sv = reinterpret_cast<bf16*>(smem + L::v);
  float* ss = reinterpret_cast<float*>(smem + L::s);
  bf16* sp = reinterpret_cast<bf16*>(smem + L::p);
  float* so = reinterpret_cast<float*>(smem + L::o);
  float* row_max = reinterpret_cast<float*>(smem + L::stats);
  float* row_sum = row_max + kTile;
  constexpr int ldo = DV + 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, row0 = 16 * warp;
  // Causal blocks with the most key tiles first, so the short ones fill the tail.
  const int q_tile = gridDim.x - 1 - blockIdx.x;
  const std::size_t head = blockIdx.y, first_row = head * seq + static_cast<std::size_t>(q_tile) * kTile;
  load_tile<DQK>(sq, q + first_row * DQK);
  for (int i = threadIdx.x; i < kTile * ldo; i += kThreads) so[i] = 0.f;
  if (threadIdx.x < kTile) {
    row_max[threadIdx.x] = -INFINITY;
    row_sum[threadIdx.x] = 0.f;
  }
  const int key_tiles = causal ? q_tile + 1 : seq / kTile;
  for (int j = 0; j < key_tiles; ++j) {
    __syncthreads();  // every warp is done with the last K and V tiles
    load_tile<DQK>(sk, k + (head * seq + static_cast<std::size_t>(j) * kTile) * DQK);
    load_tile<DV>(sv, v + (head * seq + static_cast<std::size_t>(j) * kTile) * DV);
    __syncthreads();
    // S = Q·Kᵀ for this warp's 16 queries against the tile's keys.
    rows_times_tile_t<DQK>(sq + row0 * padded(DQK), sk, ss + row0 * kScoreLd);
    __syncwarp();
    // Online softmax, a row at a time (each lane two keys): new max, probabilities, the running sum,
    // and the output so far rescaled to the new max.
    for (int r = 0; r < 16; ++r) {
      const int row = row0 + r, query = q_tile * kTile + row;
      float s0 = ss[row * kScoreLd + lane] * scale_log2, s1 = ss[row * kScoreLd + lane + 32] * scale_log2;
      if (causal && j * kTile + lane > query) s0 = -INFINITY;
      if (causal && j * kTile + lane + 32 > query) s1 = -INFINITY;
      const float old_max = row_max[row];
      const float new_max = fmaxf(old_max, warp_max(fmaxf(s0, s1)));  // finite: key j·64 ≤ query
      const float p0 = exp2f(s0 - new_max), p1 = exp2f(s1 - new_max), alpha = exp2f(old_max - new_max);
      const float sum = warp_sum(p0 + p1);
      sp[row * kProbLd + lane] = __float2bfloat16(p0);
      sp[row * kProbLd + lane + 32] = __float2bfloat16(p1);
      for (int c = lane; c < DV; c += 32) so[row * ldo + c] *= alpha;
      __syncwarp();  // every lane has read the old max
      if (lane == 0) {
        row_max[row] = new_max;
        row_sum[row] = row_sum[row] * alpha + sum;
      }
    }
    __syncwarp();
    // O += P·V for this warp's rows.
    for (int c = 0; c < DV / 16; ++c) {
      FragC acc;
      wmma::load_matrix_sync(acc, so + row0 * ldo + c * 16, ldo, wmma::mem_row_major);
      accumulate_strip<DV, wmma::row_major>(acc, sp + row0 * kProbLd, sv + c * 16);
      wmma::store_matrix_sync(so + row0 * ldo + c * 16, acc, ldo, wmma::mem_row_major);
    }
    __syncwarp();
  }
  for (int r = 0; r < 16; ++r) {
    const int row = row0 + r;
    const float inverse = 1.f / row_sum[row];
    bf16* out = o + (first_row + row) * DV;
    for (int c = lane; c < DV; c += 32) out[c] = __float2bfloat16(so[row * ldo + c] * inverse);
    if (lane == 0) lse[first_row + row] = row_max[row] + log2f(row_sum[row]);
  }
}

// Per query row: delta = rowsum(dO ∘ O); the dQ accumulator zeroed. One warp per row.
__global__ void backward_prologue(const bf16* __restrict__ o, const bf16* __restrict__ dout, float* __restrict__ delta,
                                  float* __restrict__ dq_accumulator, std::int64_t rows, int dv, int dqk) {
  const std::int64_t row = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float s = 0.f;
  for (int c = lane; c < dv; c += 32) s += __bfloat162float(o[row * dv + c]) * __bfloat162float(dout[row * dv + c]);
  s = warp_sum(s);
  if (lane == 0) delta[row] = s;
  for (int c = lane; c < dqk; c += 32) dq_accumulator[row * dqk + c] = 0.f;
}

__global__ void to_bf16(const float* __restrict__ in, bf16* __restrict__ out, std::int64_t n) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(in[i]);
}

// One block per (key tile, head): its warps own 16 keys each and keep dK and dV in registers over
// the query tiles; dQ is summed over key tiles with fp32 atomics.
template <int DQK, int DV>
__global__ void __launch_bounds__(kThreads) backward_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v,
                                                            const bf16* __restrict__ dout, const float* __restrict__ lse,
                                                            const float* __restrict__ delta, float* __restrict__ dq_accumulator,
                                                            bf16* __restrict__ dk, bf16* __restrict__ dv, int seq, bool causal, float scale,
                                                            float scale_log2) {
  extern __shared__ __align__(128) unsigned char smem[];
  using L = BackwardSmem<DQK, DV>;
  bf16* sk = reinterpret_cast<bf16*>(smem + L::k);
  bf16* sv = reinterpret_cast<bf16*>(smem + L::v);
  bf16* sq = reinterpret_cast<bf16*>(smem + L::q);
  bf16* sdo = reinterpret_cast<bf16*>(smem + L::dout);
  float* ss = reinterpret_cast<float*>(smem + L::s);
  float* sdp = reinterpret_cast<float*>(smem + L::dp);
  bf16* sp = reinterpret_cast<bf16*>(smem + L::p);
  bf16* sds = reinterpret_cast<bf16*>(smem + L::ds);
  float* s_lse = reinterpret_cast<float*>(smem + L::rows);
  float* s_delta = s_lse + kTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, row0 = 16 * warp;
  float* scratch = reinterpret_cast<float*>(smem + L::scratch) + warp * 256;
  const int key_tile = blockIdx.x;
  const std::size_t head = blockIdx.y, first_key = head * seq + static_cast<std::size_t>(key_tile) * kTile;
  load_tile<DQK>(sk, k + first_key * DQK);
  load_tile<DV>(sv, v + first_key * DV);
  FragC dk_acc[DQK / 16], dv_acc[DV / 16];
  for (FragC& f : dk_acc) wmma::fill_fragment(f, 0.f);
  for (FragC& f : dv_acc) wmma::fill_fragment(f, 0.f);
  for (int i = causal ? key_tile : 0; i < seq / kTile; ++i) {
    const std::size_t first_query = head * seq + static_cast<std::size_t>(i) * kTile;
    __syncthreads();  // every warp is done with the last query tile
    load_tile<DQK>(sq, q + first_query * DQK);
    load_tile<DV>(sdo, dout + first_query * DV);
    if (threadIdx.x < kTile) {
      s_lse[threadIdx.x] = lse[first_query + threadIdx.x];
      s_delta[threadIdx.x] = delta[first_query + threadIdx.x];
    }
    __syncthreads();
    // Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ for this warp's 16 keys against the tile's queries.
    rows_times_tile_t<DQK>(sk + row0 * padded(DQK), sq, ss + row0 * kScoreLd);
    rows_times_tile_t<DV>(sv + row0 * padded(DV), sdo, sdp + row0 * kScoreLd);
    __syncwarp();
    // Pᵀ from the forward's log-sum-exp; dSᵀ = Pᵀ ∘ (dPᵀ − delta).
    for (int r = 0; r < 16; ++r) {
      const int row = row0 + r, key = key_tile * kTile + row;
      for (int half = 0; half < 2; ++half) {
        const int col = lane + 32 * half, query = i * kTile + col;
        float p = exp2f(ss[row * kScoreLd + col] * scale_log2 - s_lse[col]);
        if (causal && key > query) p = 0.f;
        sp[row * kProbLd + col] = __float2bfloat16(p);
        sds[row * kProbLd + col] = __float2bfloat16(p * (sdp[row * kScoreLd + col] - s_delta[col]));
      }
    }
    __syncwarp();
    // dV += Pᵀ·dO and dK += dSᵀ·Q for this warp's keys.
    for (int c = 0; c < DV / 16; ++c) accumulate_strip<DV, wmma::row_major>(dv_acc[c], sp + row0 * kProbLd, sdo + c * 16);
    for (int c = 0; c < DQK / 16; ++c) accumulate_strip<DQK, wmma::row_major>(dk_acc[c], sds + row0 * kProbLd, sq + c * 16);
    __syncthreads();  // every warp's dSᵀ rows are written
    // dQ += dS·K for this warp's 16 queries: dS read as the transpose of dSᵀ, added to the fp32 sum.
    for (int c = 0; c < DQK / 16; ++c) {
      FragC acc;
      wmma::fill_fragment(acc, 0.f);
      accumulate_strip<DQK, wmma::col_major>(acc, sds + row0, sk + c * 16);
      wmma::store_matrix_sync(scratch, acc, 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32)
        atomicAdd(dq_accumulator + (first_query + row0 + e / 16) * DQK + c * 16 + e % 16, scratch[e] * scale);
      __syncwarp();
    }
  }
  for (int c = 0; c < DQK / 16; ++c) store_fragment_bf16(dk_acc[c], scale, scratch, dk + (first_key + row0) * DQK + c * 16, DQK);
  for (int c = 0; c < DV / 16; ++c) store_fragment_bf16(dv_acc[c], 1.f, scratch, dv + (first_key + row0) * DV + c * 16, DV);
}

void require(const AttentionCall& c) {
  if (!c.supported())
    throw std::invalid_argument("flash attention: " + std::to_string(c.batch_heads) + " heads of " + std::to_string(c.seq) +
                                " tokens with widths (" + std::to_string(c.d_qk) + ", " + std::to_string(c.d_v) +
                                ") are not supported: the kernel takes sequences of whole 64-token tiles and head widths " +
                                AttentionCall::kWidths);
  if (c.batch_heads > 65535) throw std::invalid_argument("flash attention: at most 65535 heads per call");
}

// Opens the kernel's dynamic shared memory beyond the 48 KiB default, or says the GPU has too little.
template <typename Kernel>
void allow_shared(Kernel kernel, std::size_t bytes, const char* what) {
  int device = 0, most = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "cudaDeviceGetAttribute");
  if (static_cast<std::size_t>(most) < bytes)
    throw std::runtime_error(std::string(what) + " needs " + std::to_string(bytes) + " bytes of shared memory per block; this GPU allows " +
                             std::to_string(most));
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)), what);
}

template <int DQK, int DV>
void forward(const AttentionCall& c, const AttentionTensors& t, cudaStream_t stream) {
  constexpr std::size_t bytes = ForwardSmem<DQK, DV>::bytes;
  allow_shared(forward_kernel<DQK, DV>, bytes, "flash attention forward");
  const dim3 grid(static_cast<unsigned>(c.seq / kTile), static_cast<unsigned>(c.batch_heads));
  forward_kernel<DQK, DV><<<grid, kThreads, bytes, stream>>>(t.q, t.k, t.v, t.o, t.lse, static_cast<int>(c.seq), c.causal,
                                                             kLog2e / std::sqrt(static_cast<float>(DQK)));
  check(cudaGetLastError(), "flash attention forward launch");
}

template <int DQK, int DV>
void backward(const AttentionCall& c, const AttentionTensors& t, const AttentionGradients& g, cudaStream_t stream) {
  constexpr std::size_t bytes = BackwardSmem<DQK, DV>::bytes;
  allow_shared(backward_kernel<DQK, DV>, bytes, "flash attention backward");
  const std::int64_t rows = c.batch_heads * c.seq;
  backward_prologue<<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream>>>(t.o, g.dout, g.delta, g.dq_accumulator, rows, DV, DQK);
  check(cudaGetLastError(), "flash attention backward prologue launch");
  const dim3 grid(static_cast<unsigned>(c.seq / kTile), static_cast<unsigned>(c.batch_heads));
  const float scale = 1.f / std::sqrt(static_cast<float>(DQK));
  backward_kernel<DQK, DV><<<grid, kThreads, bytes, stream>>>(t.q, t.k, t.v, g.dout, t.lse, g.delta, g.dq_accumulator, g.dk, g.dv,
                                                              static_cast<int>(c.seq), c.causal, scale, scale * kLog2e);
  check(cudaGetLastError(), "flash attention backward launch");
  const std::int64_t n = rows * DQK;
  to_bf16<<<static_cast<unsigned>(std::min<std::int64_t>((n + 255) / 256, 65535)), 256, 0, stream>>>(g.dq_accumulator, g.dq, n);
  check(cudaGetLastError(), "flash attention dQ conversion launch");
}

}  // namespace

void flash_attention_forward(const AttentionCall& c, const AttentionTensors& t, cudaStream_t stream) {
  require(c);
  if (c.d_qk == 64) forward<64, 64>(c, t, stream);
  else if (c.d_qk == 128) forward<128, 128>(c, t, stream);
  else forward<192, 128>(c, t, stream);
}

void flash_attention_backward(const AttentionCall& c, const AttentionTensors& t, const AttentionGradients& g, cudaStream_t stream) {
  require(c);
  if (c.d_qk == 64) backward<64, 64>(c, t, g, stream);
  else if (c.d_qk == 128) backward<128, 128>(c, t, g, stream);
  else backward<192, 128>(c, t, g, stream);
}

}  // namespace plumb::kernels
