// Every bundled GPU and fabric profile reads strictly (each figure with its source), and the
// profiles agree with the published figures in shared/reference/published.md.
#include <doctest/doctest.h>

#include "catalogue_fixtures.hpp"
#include "models/catalogue.hpp"
#include "models/hardware.hpp"

using namespace plumb;

using test::fabric;
using test::gpu;

TEST_CASE("every bundled GPU profile reads, with a source for each figure") {
  auto names = catalogue_names(kGpuProfiles);
  CHECK(names == std::vector<std::string>{"a100-sxm-80gb", "b200", "h100-sxm", "h200-sxm", "h800-sxm"});
  for (const std::string& name : names) {
    GpuSpec g = gpu(name);
    INFO(name);
    // Every figure, the efficiencies included, has its source: nine everywhere, Hopper's fp8 GEMM
    // table and backward attention efficiency, and the HBM efficiency where one was measured.
    std::size_t optional = !g.gemm_efficiency_fp8.empty() + g.attention_backward_efficiency.has_value() +
                           g.sources.count("hbm_efficiency");
    CHECK(g.sources.size() == 9 + optional);
    bool hopper = name == "h100-sxm" || name == "h800-sxm" || name == "h200-sxm";
    CHECK(optional == (hopper ? 3u : name == "a100-sxm-80gb" ? 1u : 0u));
    // fp8 GEMMs with fine-grained scaling reach less of their (doubled) peak than bf16 ones of theirs.
    if (hopper) CHECK(g.gemm_efficiency_at(1e12, MathDtype::fp8) < g.gemm_efficiency_at(1e12, MathDtype::bf16));
    // Tensor-core fp8 doubles bf16 wherever fp8 exists (Hopper whitepaper; B200 datasheet), to the
    // 0.1 TFLOP/s the datasheets print (989.4 and 1978.9 are both rounded).
    if (g.peak_dense.count(MathDtype::fp8))
      CHECK(g.peak_dense.at(MathDtype::fp8) == doctest::Approx(2 * g.peak_dense.at(MathDtype::bf16)).epsilon(1e-4));
  }
  CHECK_FALSE(gpu("a100-sxm-80gb").peak_dense.count(MathDtype::fp8));
  CHECK(gpu("a100-sxm-80gb").peak_dense.at(MathDtype::bf16) == doctest::Approx(312e12));  // SC'21: 312 TFLOP/s
  CHECK(gpu("h800-sxm").sms == 132);  // DeepSeek-V3: 20 of the 132 SMs
  // Measured large-GEMM ceilings (ml-engineering's MAMF table): 792.1 of 989 on H100, 267.9 of 312 on A100.
  CHECK(gpu("h100-sxm").gemm_efficiency_at(1e12) == doctest::Approx(792.1 / 989).epsilon(1e-3));
  CHECK(gpu("a100-sxm-80gb").gemm_efficiency_at(1e12) == doctest::Approx(267.9 / 312).epsilon(1e-3));
}

TEST_CASE("every bundled fabric profile reads") {
  for (const std::string& name : catalogue_names(kFabricProfiles)) {
    INFO(name);
    CHECK(fabric(name).gpus_per_node == 8);
  }
}

TEST_CASE("fabric figures match the published ones") {
  // DeepSeek-V3 §3.2.2: NVLink 160 GB/s, about 3.2× IB's 50 GB/s (one 400 Gb/s NIC per GPU).
  FabricSpec ds = fabric("h800-deepseek");
  CHECK(ds.nic_rate == doctest::Approx(50e9));
  CHECK(*ds.nvlink_effective_per_gpu == doctest::Approx(160e9));
  CHECK(*ds.nvlink_effective_per_gpu / ds.nic_rate == doctest::Approx(3.2));
  CHECK(ds.nics_per_node == ds.gpus_per_node);
  // NCCL maintainers: 8× H100 NVLink 450 GB/s line rate, ~370 GB/s effective; NDR 46–48 GB/s per NIC.
  FabricSpec ndr = fabric("dgx-h100-ndr");
  CHECK(gpu("h100-sxm").nvlink_bandwidth_per_direction == doctest::Approx(450e9));
  CHECK(*ndr.nvlink_effective_per_gpu == doctest::Approx(370e9));
  CHECK(*ndr.nic_effective >= 46e9);
  CHECK(*ndr.nic_effective <= 48e9);
  // Selene: 8× 200 Gb/s HDR per node (SC'21 §5).
  FabricSpec selene = fabric("selene-a100-hdr");
  CHECK(selene.nics_per_node == 8);
  CHECK(selene.nic_rate == doctest::Approx(25e9));
}
