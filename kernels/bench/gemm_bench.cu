#include "kernels/bench/gemm_bench.hpp"

#include <algorithm>
#include <cuda_runtime.h>
#include <memory>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/device_fill.hpp"
#include "kernels/gemm_runner.hpp"

namespace plumb::kernels {

int sm_clock_mhz() {
  int device = 0, khz = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device), "cudaDeviceGetAttribute(clock)");
  return khz / 1000;
}

GemmTiming time_gemm(std::int64_t m, std::int64_t n, std::int64_t k, GemmInputs inputs, int warmup, int repetitions) {
  int device = 0, l2 = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2)");
  GemmCall g{m, n, k, 1, inputs == GemmInputs::fp8_e4m3};
  const Element in = g.fp8 ? Element::fp8_e4m3 : Element::bf16;
  const std::size_t set = g.a_bytes() + g.b_bytes() + g.c_bytes();
  // Enough copies that one pass over them is twice L2: each repetition reads operands from HBM.
  const int sets = static_cast<int>(std::clamp<std::size_t>(2 * static_cast<std::size_t>(l2) / set + 1, 1, 64));
  std::vector<std::unique_ptr<DeviceBuffer>> a, b, c;
  for (int i = 0; i < sets; ++i) {
    a.push_back(std::make_unique<DeviceBuffer>(g.a_bytes()));
    b.push_back(std::make_unique<DeviceBuffer>(g.b_bytes()));
    c.push_back(std::make_unique<DeviceBuffer>(g.c_bytes()));
    fill_nonzero(a.back()->p, static_cast<std::size_t>(m * k), in, 17u + 2u * static_cast<std::uint32_t>(i));
    fill_nonzero(b.back()->p, static_cast<std::size_t>(k * n), in, 18u + 2u * static_cast<std::uint32_t>(i));
  }
  GemmRunner runner;
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  auto launch = [&](int i) {
    auto s = static_cast<std::size_t>(i % sets);
    runner.run(g, a[s]->p, b[s]->p, c[s]->p, stream);
  };
  std::vector<double> seconds = time_runs(stream, warmup, repetitions, launch);
  cudaStreamDestroy(stream);
  GemmTiming t;
  t.median_seconds = seconds[seconds.size() / 2];
  t.min_seconds = seconds.front();
  t.repetitions = repetitions;
  return t;
}

}  // namespace plumb::kernels
