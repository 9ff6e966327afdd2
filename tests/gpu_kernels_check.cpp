// GPU test (ctest label "gpu"): the executor's kernels compute what they claim, against float64 CPU
// references on fresh random inputs (RMSNorm forward and backward, SwiGLU forward and backward, the
// row gather, batched bf16 and fp8 GEMMs, the flash attention forward and backward at each head width
// it is built for, causal and not), and a green context of a quarter of the SMs runs a large
// GEMM about four times slower than the whole GPU.
#include <cmath>
#include <cstdio>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/bench/attention_bench.hpp"
#include "kernels/device_info.hpp"
#include "kernels/gemm_runner.hpp"
#include "kernels/layer_kernels.hpp"
#include "kernels/sm_partition.hpp"
#include "tests/gpu_test_device.hpp"

namespace {

using namespace plumb::kernels;
using bf16 = __nv_bfloat16;

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

// ‖got − want‖ / ‖want‖.
double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

std::mt19937 rng(20261121);

std::vector<double> random_values(std::size_t n) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

// To bf16 on the device (and the values rounded as the device sees them).
struct DeviceBf16 {
  DeviceBuffer buf;
  std::vector<double> host;  // rounded
  explicit DeviceBf16(std::vector<double> v) : buf(v.size() * 2 + 16) {
    std::vector<bf16> h(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      h[i] = __float2bfloat16(static_cast<float>(v[i]));
      v[i] = static_cast<double>(__bfloat162float(h[i]));
    }
    check(cudaMemcpy(buf.p, h.data(), h.size() * 2, cudaMemcpyHostToDevice), "upload");
    host = std::move(v);
  }
  explicit DeviceBf16(std::size_t n) : buf(n * 2 + 16) {
    check(cudaMemset(buf.p, 0xff, n * 2), "poison");  // NaNs: an unwritten element fails the check
  }
  bf16* p() { return static_cast<bf16*>(buf.p); }
};

std::vector<double> download(const void* p, std::size_t n) {
  std::vector<bf16> h(n);
  check(cudaMemcpy(h.data(), p, n * 2, cudaMemcpyDeviceToHost), "download");
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>(__bfloat162float(h[i]));
  return v;
}

// cols 1000: rows of whole 16-byte words (the vector kernels); 1001: the scalar ones.
void check_rmsnorm(std::int64_t cols) {
  const std::int64_t rows = 37;
  DeviceBf16 x(random_values(rows * cols)), w(random_values(cols)), dy(random_values(rows * cols));
  DeviceBf16 y(rows * cols), dx(rows * cols);
  DeviceBuffer rstd(rows * 4);
  rmsnorm_forward(x.p(), w.p(), y.p(), static_cast<float*>(rstd.p), rows, cols, nullptr);
  rmsnorm_backward(x.p(), w.p(), static_cast<float*>(rstd.p), dy.p(), dx.p(), rows, cols, nullptr);
  check(cudaDeviceSynchronize(), "rmsnorm");
  std::vector<double> want_y(rows * cols), want_dx(rows * cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    double sq = 0, dot = 0;
    for (std::int64_t c = 0; c < cols; ++c) sq += x.host[r * cols + c] * x.host[r * cols + c];
    double s = 1 / std::sqrt(sq / cols + 1e-6);
    for (std::int64_t c = 0; c < cols; ++c) dot += w.host[c] * dy.host[r * cols + c] * x.host[r * cols + c];
    for (std::int64_t c = 0; c < cols; ++c) {
      want_y[r * cols + c] = x.host[r * cols + c] * s * w.host[c];
      want_dx[r * cols + c] = s * (w.host[c] * dy.host[r * cols + c] - x.host[r * cols + c] * s * s * dot / cols);
    }
  }
  double ey = relative_error(download(y.p(), rows * cols), want_y), ed = relative_error(download(dx.p(), rows * cols), want_dx);
  expect(ey < 1e-2, "rmsnorm forward (" + std::to_string(cols) + " columns), relative error " + std::to_string(ey));
  expect(ed < 1e-2, "rmsnorm backward (" + std::to_string(cols) + " columns), relative error " + std::to_string(ed));
}

void check_swiglu() {
  const std::int64_t rows = 29, cols = 520;
  DeviceBf16 gu(random_values(rows * 2 * cols)), dout(random_values(rows * cols));
  DeviceBf16 out(rows * cols), dgu(rows * 2 * cols);
  swiglu_forward(gu.p(), out.p(), rows, cols, nullptr);
  swiglu_backward(gu.p(), dout.p(), dgu.p(), rows, cols, nullptr);
  check(cudaDeviceSynchronize(), "swiglu");
  std::vector<double> want(rows * cols), want_d(rows * 2 * cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      double g = gu.host[r * 2 * cols + c], u = gu.host[r * 2 * cols + cols + c], d = dout.host[r * cols + c];
      double sig = 1 / (1 + std::exp(-g));
      want[r * cols + c] = g * sig * u;
      want_d[r * 2 * cols + c] = d * u * (sig + g * sig * (1 - sig));
      want_d[r * 2 * cols + cols + c] = d * g * sig;
    }
  double e = relative_error(download(out.p(), rows * cols), want), ed = relative_error(download(dgu.p(), rows * 2 * cols), want_d);
  expect(e < 1e-2, "swiglu forward, relative error " + std::to_string(e));
  expect(ed < 1e-2, "swiglu backward, relative error " + std::to_string(ed));
}

void check_gather() {
  const std::int64_t rows = 300, cols = 64;
  DeviceBf16 in(random_values(rows * cols)), out(rows * cols);
  std::vector<std::int32_t> index(rows);
  for (std::int64_t i = 0; i < rows; ++i) index[i] = static_cast<std::int32_t>((i * 7919) % rows);
  DeviceBuffer d_index(rows * 4);
  check(cudaMemcpy(d_index.p, index.data(), rows * 4, cudaMemcpyHostToDevice), "index");
  gather_rows(in.p(), static_cast<const std::int32_t*>(d_index.p), out.p(), rows, cols, nullptr);
  check(cudaDeviceSynchronize(), "gather");
  std::vector<double> got = download(out.p(), rows * cols), want(rows * cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) want[r * cols + c] = in.host[index[r] * cols + c];
  expect(relative_error(got, want) == 0, "row gather is exact");
}

// C = A·B per batch, A stored k-major per row (the "TN" layout: A[m][k], B[n][k], C column-major m×n).
void check_gemm(bool fp8) {
  const std::int64_t m = 96, n = 80, k = 128, batch = 3;
  std::vector<double> a = random_values(m * k * batch), b = random_values(n * k * batch);
  DeviceBuffer da(m * k * batch * 2), db(n * k * batch * 2);
  if (fp8) {
    std::vector<__nv_fp8_e4m3> ha(a.size()), hb(b.size());
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(float(ha[i] = __nv_fp8_e4m3(static_cast<float>(a[i]))));
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<double>(float(hb[i] = __nv_fp8_e4m3(static_cast<float>(b[i]))));
    check(cudaMemcpy(da.p, ha.data(), ha.size(), cudaMemcpyHostToDevice), "upload a");
    check(cudaMemcpy(db.p, hb.data(), hb.size(), cudaMemcpyHostToDevice), "upload b");
  } else {
    DeviceBf16 ta(a), tb(b);
    a = ta.host;
    b = tb.host;
    check(cudaMemcpy(da.p, ta.buf.p, a.size() * 2, cudaMemcpyDeviceToDevice), "copy a");
    check(cudaMemcpy(db.p, tb.buf.p, b.size() * 2, cudaMemcpyDeviceToDevice), "copy b");
  }
  DeviceBf16 c(m * n * batch);
  GemmRunner runner;
  runner.run({m, n, k, batch, fp8}, da.p, db.p, c.p(), nullptr);
  check(cudaDeviceSynchronize(), "gemm");
  std::vector<double> want(m * n * batch);
  for (std::int64_t t = 0; t < batch; ++t)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t q = 0; q < k; ++q) s += a[t * m * k + i * k + q] * b[t * n * k + j * k + q];
        want[t * m * n + j * m + i] = s;
      }
  double e = relative_error(download(c.p(), m * n * batch), want);
  expect(e < 1e-2, std::string(fp8 ? "fp8" : "bf16") + " batched GEMM, relative error " + std::to_string(e));
}

// Attention against float64: O = softmax(Q·Kᵀ/√d_qk, mask)·V per head; dP = dO·Vᵀ, dS = P ∘ (dP − rowsum(dP ∘ P)),
// dQ = dS·K/√d_qk, dK = dSᵀ·Q/√d_qk, dV = Pᵀ·dO.
void check_attention(std::int64_t heads, std::int64_t seq, std::int64_t dqk, std::int64_t dv, bool causal) {
  const AttentionCall call{heads, seq, dqk, dv, causal};
  const std::size_t nq = call.elements(dqk), nv = call.elements(dv);
  DeviceBf16 q(random_values(nq)), k(random_values(nq)), v(random_values(nv)), dout(random_values(nv));
  DeviceBf16 o(nv), dq(nq), dk(nq), dv_(nv);
  DeviceBuffer lse(call.row_bytes()), delta(call.row_bytes()), dq_sum(call.dq_accumulator_bytes());
  const AttentionTensors t{q.p(), k.p(), v.p(), o.p(), static_cast<float*>(lse.p)};
  flash_attention_forward(call, t, nullptr);
  flash_attention_backward(call, t, {dout.p(), static_cast<float*>(delta.p), static_cast<float*>(dq_sum.p), dq.p(), dk.p(), dv_.p()}, nullptr);
  check(cudaDeviceSynchronize(), "flash attention");
  std::vector<double> want_o(nv), want_dq(nq, 0.0), want_dk(nq, 0.0), want_dv(nv, 0.0);
  const double scale = 1 / std::sqrt(static_cast<double>(dqk));
  std::vector<double> p(static_cast<std::size_t>(seq)), dp(static_cast<std::size_t>(seq));
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t i = 0; i < seq; ++i) {
      const std::int64_t keys = causal ? i + 1 : seq;
      const double* qi = &q.host[static_cast<std::size_t>((h * seq + i) * dqk)];
      double most = -INFINITY, sum = 0;
      for (std::int64_t j = 0; j < keys; ++j) {
        double s = 0;
        for (std::int64_t c = 0; c < dqk; ++c) s += qi[c] * k.host[static_cast<std::size_t>((h * seq + j) * dqk + c)];
        p[static_cast<std::size_t>(j)] = s * scale;
        most = std::max(most, s * scale);
      }
      for (std::int64_t j = 0; j < keys; ++j) sum += (p[static_cast<std::size_t>(j)] = std::exp(p[static_cast<std::size_t>(j)] - most));
      double rowsum = 0;
      for (std::int64_t j = 0; j < keys; ++j) {
        double& pj = p[static_cast<std::size_t>(j)];
        pj /= sum;
        double d = 0;
        for (std::int64_t c = 0; c < dv; ++c) {
          const std::size_t vi = static_cast<std::size_t>((h * seq + j) * dv + c), oi = static_cast<std::size_t>((h * seq + i) * dv + c);
          want_o[oi] += pj * v.host[vi];
          d += dout.host[oi] * v.host[vi];
          want_dv[vi] += pj * dout.host[oi];
        }
        dp[static_cast<std::size_t>(j)] = d;
        rowsum += pj * d;
      }
      for (std::int64_t j = 0; j < keys; ++j) {
        const double ds = p[static_cast<std::size_t>(j)] * (dp[static_cast<std::size_t>(j)] - rowsum) * scale;
        for (std::int64_t c = 0; c < dqk; ++c) {
          want_dq[static_cast<std::size_t>((h * seq + i) * dqk + c)] += ds * k.host[static_cast<std::size_t>((h * seq + j) * dqk + c)];
          want_dk[static_cast<std::size_t>((h * seq + j) * dqk + c)] += ds * qi[c];
        }
      }
    }
  const std::string what = "flash attention (" + std::to_string(dqk) + ", " + std::to_string(dv) + ")" + (causal ? " causal" : "") + ", ";
  const double eo = relative_error(download(o.p(), nv), want_o), eq = relative_error(download(dq.p(), nq), want_dq);
  const double ek = relative_error(download(dk.p(), nq), want_dk), ev = relative_error(download(dv_.p(), nv), want_dv);
  expect(eo < 2e-2, what + "forward, relative error " + std::to_string(eo));
  expect(eq < 3e-2 && ek < 3e-2 && ev < 3e-2,
         what + "backward, relative errors dQ " + std::to_string(eq) + ", dK " + std::to_string(ek) + ", dV " + std::to_string(ev));
}

double time_big_gemm(cudaStream_t stream, GemmRunner& runner, DeviceBuffer& a, DeviceBuffer& b, DeviceBuffer& c) {
  const GemmCall g{8192, 8192, 8192, 1, false};
  std::vector<double> s = time_runs(stream, 3, 10, [&](int) { runner.run(g, a.p, b.p, c.p, stream); });
  return s[s.size() / 2];
}

void check_green_context(int sms) {
  DeviceBuffer a(8192ull * 8192 * 2), b(8192ull * 8192 * 2), c(8192ull * 8192 * 2);
  check(cudaMemset(a.p, 0x3c, 8192ull * 8192 * 2), "fill a");
  check(cudaMemset(b.p, 0x3c, 8192ull * 8192 * 2), "fill b");
  cudaStream_t whole = nullptr;
  check(cudaStreamCreate(&whole), "stream");
  GemmRunner full_runner;
  double full = time_big_gemm(whole, full_runner, a, b, c);
  SmPartition part(0, 4, sms / 4 / 8 * 8);
  part.enter(0);
  GemmRunner quarter_runner;
  double quarter = time_big_gemm(part.stream(0), quarter_runner, a, b, c);
  part.leave();
  double ratio = quarter / full, share = static_cast<double>(sms) / part.sms(0);
  expect(ratio > 0.7 * share && ratio < 1.3 * share,
         "a " + std::to_string(part.sms(0)) + "-SM green context runs an 8192³ GEMM " + std::to_string(ratio) + "× slower (SM ratio " +
             std::to_string(share) + ")");
  cudaStreamDestroy(whole);
}

}  // namespace

int main() {
  std::optional<DeviceInfo> gpu0 = first_gpu_or_skip();
  if (!gpu0) return 77;
  try {
    check_rmsnorm(1000);
    check_rmsnorm(1001);
    check_swiglu();
    check_gather();
    check_gemm(false);
    if (gpu0->compute_capability_major * 10 + gpu0->compute_capability_minor >= 89) check_gemm(true);
    // Three heads of two 64-token tiles: the causal diagonal, a tile below it and one above it.
    check_attention(3, 128, 64, 64, true);
    check_attention(3, 128, 128, 128, false);
    check_attention(3, 128, 192, 128, true);
    check_green_context(gpu0->sms);
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
