#include "validate/host/host_kernels.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>

namespace plumb::host {
namespace {

using ColMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMap = Eigen::Map<RowMatrix>;
using ConstRowMap = Eigen::Map<const RowMatrix>;

constexpr std::int64_t kBlock = kernels::kAttentionTile;  // queries per block
constexpr float kRmsEpsilon = 1e-6f;

std::size_t offset(std::int64_t head, std::int64_t seq, std::int64_t width) { return static_cast<std::size_t>(head * seq * width); }

// Keys a query block may see: all of them, or (causal) those up to its last query.
std::int64_t visible_keys(const kernels::AttentionCall& c, std::int64_t block_end) { return c.causal ? block_end : c.seq; }

// The block's probabilities P = exp(S − lse) from its scores S = Q·Kᵀ·scale, masked above the diagonal.
void probabilities(RowMatrix& s, std::int64_t first_query, bool causal, const float* lse) {
  for (Eigen::Index i = 0; i < s.rows(); ++i)
    for (Eigen::Index j = 0; j < s.cols(); ++j)
      s(i, j) = causal && j > first_query + i ? 0.0f : std::exp(s(i, j) - lse[i]);
}

}  // namespace

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::vector<float> varied_floats(std::size_t n, float phase) {
  std::vector<float> v(std::max<std::size_t>(n, 1));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.25f + 0.5f * std::sin(0.61f * static_cast<float>(i % 7919) + phase);
  return v;
}

std::uint16_t to_bf16(float x) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  if (std::isnan(x)) return 0x7fc0;
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<std::uint16_t>(bits >> 16);
}

float from_bf16(std::uint16_t x) {
  const std::uint32_t bits = static_cast<std::uint32_t>(x) << 16;
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void gemm(const kernels::GemmCall& g, const float* a, const float* b, float* c) {
  using Map = Eigen::Map<const ColMatrix>;
  for (std::int64_t i = 0; i < g.batch; ++i) {
    Map A(a + i * g.m * g.k, g.m, g.k), B(b + i * g.k * g.n, g.k, g.n);
    Eigen::Map<ColMatrix> C(c + i * g.m * g.n, g.m, g.n);
    C.noalias() = A * B;
  }
}

AttentionTensors::AttentionTensors(const kernels::AttentionCall& c)
    : q(c.elements(c.d_qk)), k(q.size()), v(c.elements(c.d_v)), o(v.size()), lse(c.elements(1)), dout(v.size()), dq(q.size()),
      dk(q.size()), dv(v.size()) {
  // Different in every tensor: the softmax sees varied scores.
  q = varied_floats(q.size(), 0.1f);
  k = varied_floats(k.size(), 1.3f);
  v = varied_floats(v.size(), 2.9f);
  dout = varied_floats(dout.size(), 4.1f);
}

void attention_forward(const kernels::AttentionCall& c, AttentionTensors& t) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.d_qk));
  for (std::int64_t h = 0; h < c.batch_heads; ++h) {
    ConstRowMap K(t.k.data() + offset(h, c.seq, c.d_qk), c.seq, c.d_qk), V(t.v.data() + offset(h, c.seq, c.d_v), c.seq, c.d_v);
    for (std::int64_t q0 = 0; q0 < c.seq; q0 += kBlock) {
      const std::int64_t rows = std::min(kBlock, c.seq - q0), keys = visible_keys(c, q0 + rows);
      ConstRowMap Q(t.q.data() + offset(h, c.seq, c.d_qk) + static_cast<std::size_t>(q0 * c.d_qk), rows, c.d_qk);
      RowMatrix s = (Q * K.topRows(keys).transpose()) * scale;
      float* lse = t.lse.data() + offset(h, c.seq, 1) + q0;
      for (std::int64_t i = 0; i < rows; ++i) {
        float top = -std::numeric_limits<float>::infinity();
        const std::int64_t seen = c.causal ? q0 + i + 1 : keys;
        for (std::int64_t j = 0; j < seen; ++j) top = std::max(top, s(i, j));
        float sum = 0;
        for (std::int64_t j = 0; j < seen; ++j) sum += std::exp(s(i, j) - top);
        lse[i] = top + std::log(sum);
      }
      probabilities(s, q0, c.causal, lse);
      RowMap O(t.o.data() + offset(h, c.seq, c.d_v) + static_cast<std::size_t>(q0 * c.d_v), rows, c.d_v);
      O.noalias() = s * V.topRows(keys);
    }
  }
}

void attention_backward(const kernels::AttentionCall& c, AttentionTensors& t) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.d_qk));
  std::fill(t.dk.begin(), t.dk.end(), 0.0f);
  std::fill(t.dv.begin(), t.dv.end(), 0.0f);
  for (std::int64_t h = 0; h < c.batch_heads; ++h) {
    ConstRowMap K(t.k.data() + offset(h, c.seq, c.d_qk), c.seq, c.d_qk), V(t.v.data() + offset(h, c.seq, c.d_v), c.seq, c.d_v);
    RowMap dK(t.dk.data() + offset(h, c.seq, c.d_qk), c.seq, c.d_qk), dV(t.dv.data() + offset(h, c.seq, c.d_v), c.seq, c.d_v);
    for (std::int64_t q0 = 0; q0 < c.seq; q0 += kBlock) {
      const std::int64_t rows = std::min(kBlock, c.seq - q0), keys = visible_keys(c, q0 + rows);
      const std::size_t qk_at = offset(h, c.seq, c.d_qk) + static_cast<std::size_t>(q0 * c.d_qk);
      const std::size_t v_at = offset(h, c.seq, c.d_v) + static_cast<std::size_t>(q0 * c.d_v);
      ConstRowMap Q(t.q.data() + qk_at, rows, c.d_qk), O(t.o.data() + v_at, rows, c.d_v), dO(t.dout.data() + v_at, rows, c.d_v);
      RowMatrix p = (Q * K.topRows(keys).transpose()) * scale;
      probabilities(p, q0, c.causal, t.lse.data() + offset(h, c.seq, 1) + q0);
      dV.topRows(keys).noalias() += p.transpose() * dO;
      RowMatrix dp = dO * V.topRows(keys).transpose();
      const Eigen::VectorXf d = (dO.cwiseProduct(O)).rowwise().sum();
      RowMatrix ds = p.cwiseProduct(dp.colwise() - d) * scale;
      RowMap(t.dq.data() + qk_at, rows, c.d_qk).noalias() = ds * K.topRows(keys);
      dK.topRows(keys).noalias() += ds.transpose() * Q;
    }
  }
}

void rmsnorm_forward(const std::uint16_t* x, const std::uint16_t* w, std::uint16_t* y, float* rstd, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint16_t* xr = x + r * cols;
    float sum = 0;
    for (std::int64_t i = 0; i < cols; ++i) sum += from_bf16(xr[i]) * from_bf16(xr[i]);
    const float inv = 1.0f / std::sqrt(sum / static_cast<float>(cols) + kRmsEpsilon);
    rstd[r] = inv;
    for (std::int64_t i = 0; i < cols; ++i) y[r * cols + i] = to_bf16(from_bf16(xr[i]) * inv * from_bf16(w[i]));
  }
}

void rmsnorm_backward(const std::uint16_t* x, const std::uint16_t* w, const float* rstd, const std::uint16_t* dy, std::uint16_t* dx,
                      std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint16_t *xr = x + r * cols, *dyr = dy + r * cols;
    float dot = 0;  // Σ dy·w·x
    for (std::int64_t i = 0; i < cols; ++i) dot += from_bf16(dyr[i]) * from_bf16(w[i]) * from_bf16(xr[i]);
    const float inv = rstd[r], k = dot * inv * inv * inv / static_cast<float>(cols);
    for (std::int64_t i = 0; i < cols; ++i)
      dx[r * cols + i] = to_bf16(from_bf16(dyr[i]) * from_bf16(w[i]) * inv - from_bf16(xr[i]) * k);
  }
}

void swiglu_forward(const std::uint16_t* in, std::uint16_t* out, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < cols; ++i) {
      const float g = from_bf16(in[r * 2 * cols + i]), u = from_bf16(in[r * 2 * cols + cols + i]);
      out[r * cols + i] = to_bf16(g / (1.0f + std::exp(-g)) * u);
    }
}

void swiglu_backward(const std::uint16_t* in, const std::uint16_t* dy, std::uint16_t* din, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < cols; ++i) {
      const float g = from_bf16(in[r * 2 * cols + i]), u = from_bf16(in[r * 2 * cols + cols + i]), d = from_bf16(dy[r * cols + i]);
      const float sig = 1.0f / (1.0f + std::exp(-g));
      din[r * 2 * cols + i] = to_bf16(d * u * sig * (1.0f + g * (1.0f - sig)));
      din[r * 2 * cols + cols + i] = to_bf16(d * g * sig);
    }
}

void gather_rows(const std::uint16_t* x, const std::int32_t* index, std::uint16_t* y, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(y + r * cols, x + static_cast<std::int64_t>(index[r]) * cols, static_cast<std::size_t>(cols) * sizeof(std::uint16_t));
}

}  // namespace plumb::host
