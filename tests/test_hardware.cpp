// Every bundled GPU and fabric profile reads strictly (each figure with its source), and the
// profiles agree with the published figures in shared/reference/published.md.
#include <doctest/doctest.h>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <unistd.h>

#include "catalogue_fixtures.hpp"
#include "models/input/catalogue.hpp"
#include "models/hardware/hardware.hpp"

using namespace plumb;

using test::fabric;
using test::gpu;
using test::profile_file;

namespace {
bool hopper_name(const std::string& name) { return name.starts_with("h100") || name.starts_with("h800") || name.starts_with("h200"); }
}  // namespace

TEST_CASE("every bundled GPU profile reads, with a source for each figure") {
  auto names = catalogue_names(kGpuProfiles);
  CHECK(names == std::vector<std::string>{"a100-sxm-80gb", "b200", "b200-simumax-node", "h100-sxm", "h100-sxm-96gb-500w", "h200-sxm", "h800-sxm",
                                         "h800-sxm-deepseek-2024", "host-cpu-core"});
  // The host backend's core: every figure sourced (the nine, the GEMM model and the HBM efficiency,
  // both placeholders for plumb calibrate), every dtype computed in fp32 at one rate.
  const GpuSpec core = gpu("host-cpu-core");
  CHECK(core.sources.size() == 12);
  CHECK(core.peak_dense.at(MathDtype::fp8) == core.peak_dense.at(MathDtype::bf16));
  CHECK(core.peak_dense.at(MathDtype::fp32) == core.peak_dense.at(MathDtype::bf16));
  for (const std::string& name : names) {
    if (name == "host-cpu-core") continue;
    GpuSpec g = gpu(name);
    INFO(name);
    // Every figure, the efficiencies included, has its source: nine everywhere, Hopper's fp8 GEMM
    // table, the backward attention efficiency where measured apart (Hopper, B200), the HBM efficiency
    // where one was measured (Hopper, B200), and the GEMM shape model where shape data exists (Hopper, B200); FlashAttention-2's rates where the
    // fastest kernel is another (Hopper), and a sustained-clock scale where one was measured.
    std::size_t optional = !g.gemm_efficiency_fp8.empty() + g.attention_backward_efficiency.has_value() +
                           g.sources.count("hbm_efficiency") + !g.gemm_model.empty();
    // The element rate of PyTorch's unvectorized kernels where measured (H200) or carried over (H100).
    const std::size_t measured_rate = g.sources.count("unvectorized_elementwise_rate");
    CHECK(measured_rate == (name == "h200-sxm" || name.starts_with("h100-sxm") ? 1u : 0u));
    std::size_t kernel_figures = 0;
    for (const auto& [kernel, k] : g.attention_kernels)
      kernel_figures += k.forward.has_value() + k.backward.has_value() + k.half_sequence.has_value() + k.reference_sequence.has_value();
    const std::size_t extra = kernel_figures + (g.sustained_compute_scale < 1.0) + g.sustained_compute_scale_fp8.has_value() +
                              g.sustained_attention_scale.has_value() + g.power_limit.has_value() + g.idle_power.has_value() +
                              g.power_clock_exponent.has_value() + g.default_power_limit.has_value() +
                              g.sources.count("attention_half_sequence") + g.sources.count("attention_reference_sequence") +
                              g.attention_dropout_scale.has_value() + g.attention_dropout_backward_scale.has_value();
    // The chip-to-chip spread: on every GPU (measured on V100 and A100, carried to the others).
    CHECK(g.sources.count("chip_spread") == 1);
    CHECK(g.chip_spread == doctest::Approx(0.0171));
    // The compute capability frameworks choose kernels by: on every NVIDIA profile (NVIDIA's table; the
    // H800 as the H100 it is cut from).
    CHECK(g.sources.count("compute_capability") == 1);
    const bool blackwell = name.starts_with("b200");  // b200-simumax-node: the B200 at its node's measured clock
    CHECK(g.compute_capability == (blackwell ? "10.0" : name == "a100-sxm-80gb" ? "8.0" : "9.0"));
    CHECK(g.sources.size() == 9 + optional + extra + measured_rate + 1 + 1);
    // Hopper: FA2's two rates, the two half-sequences and the reference, the power limit its rates are
    // priced at, its idle draw and the clock's exponent (and the 500 W H100's default limit); B200: three
    // clocks (GEMMs, FP8, attention), the power limit they were measured at, its idle draw and the clock's
    // exponent, its half-sequence and reference, FA2's and cuDNN's rates, half-sequences and references, and
    // what fused attention keeps under dropout (forward, backward).
    CHECK(extra == (hopper_name(name) ? 8u : 0u) + (blackwell ? 18u : name == "h100-sxm-96gb-500w" ? 1u : 0u));
    CHECK(optional == (hopper_name(name) ? 4u : blackwell ? 3u : 1u));
    // fp8 GEMMs with fine-grained scaling reach less of their (doubled) peak than bf16 ones of theirs.
    if (hopper_name(name)) CHECK(g.gemm_efficiency_at(1e12, MathDtype::fp8) < g.gemm_efficiency_at(1e12, MathDtype::bf16));
    // Tensor-core fp8 doubles bf16 wherever fp8 exists (Hopper whitepaper; B200 datasheet), to the
    // 0.1 TFLOP/s the datasheets print (989.4 and 1978.9 are both rounded).
    if (g.peak_dense.count(MathDtype::fp8))
      CHECK(g.peak_dense.at(MathDtype::fp8) == doctest::Approx(2 * g.peak_dense.at(MathDtype::bf16)).epsilon(1e-4));
  }
  CHECK_FALSE(gpu("a100-sxm-80gb").peak_dense.count(MathDtype::fp8));
  CHECK(gpu("a100-sxm-80gb").peak_dense.at(MathDtype::bf16) == doctest::Approx(312e12));  // SC'21: 312 TFLOP/s
  CHECK(gpu("h800-sxm").sms == 132);  // DeepSeek-V3: 20 of the 132 SMs
  // The measured large-GEMM ceiling on the H100 (ml-engineering's MAMF table): 792.1 of 989. The A100's
  // figure is what Megatron-LM's own layer shows (test_published_a100: Korthikanti et al. Table 4), below its
  // MAMF ceiling of 267.9 of 312.
  CHECK(gpu("h100-sxm").gemm_efficiency_at(1e12) == doctest::Approx(792.1 / 989).epsilon(1e-3));
  CHECK(gpu("a100-sxm-80gb").gemm_efficiency_at(1e12) < 267.9 / 312);
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

// A published GEMM measurement: `groups` GEMMs of M × N × K at `tflops`, and the fp8 rate a profile gives it.
struct MeasuredGemm {
  double groups, m, n, k, tflops;
  double fp8_rate(const GpuSpec& g, bool weight_gradient = false) const {
    return g.gemm_efficiency_of(m, n, k, groups, MathDtype::fp8, weight_gradient) * g.peak_dense.at(MathDtype::fp8);
  }
};

TEST_CASE("the Hopper GEMM shape model gives DeepGEMM's measured H800 fp8 rates and the MAMF bf16 ceiling") {
  // deepseek-ai/DeepGEMM README (Feb 2025, H800, NVCC 12.8), the training-shaped rows: (groups, M, N,
  // K, TFLOP/s). The flat table the model replaced missed 4096×32768×512 by +68%.
  const MeasuredGemm rows[] = {{1, 4096, 2112, 7168, 1058}, {1, 4096, 24576, 1536, 990}, {1, 4096, 32768, 512, 590},
                      {1, 4096, 4096, 7168, 1304}, {1, 4096, 7168, 2048, 1025}, {1, 4096, 7168, 16384, 1358},
                      {4, 8192, 4096, 7168, 1297}, {4, 8192, 7168, 2048, 1099}, {8, 4096, 4096, 7168, 1288},
                      {8, 4096, 7168, 2048, 1093}};
  const GpuSpec h800 = gpu("h800-sxm");
  for (const MeasuredGemm& r : rows) {
    INFO(r.groups << "×" << r.m << "×" << r.n << "×" << r.k);
    CHECK(r.fp8_rate(h800) == doctest::Approx(r.tflops * 1e12).epsilon(0.03));
  }
  // bf16: ml-engineering's MAMF, 792.1 of 989 TFLOP/s at its best shape 6144×17920×2816.
  CHECK(gpu("h100-sxm").gemm_efficiency_of(6144, 17920, 2816, 1, MathDtype::bf16) == doctest::Approx(792.1 / 989).epsilon(0.005));
  // No shape data for the A100 (OpenXLA's tables cover sm_90 and sm_100): its GEMMs keep the table by size.
  CHECK(gpu("a100-sxm-80gb").gemm_model.empty());
}

TEST_CASE("fp8 weight gradients run DeepGEMM's weight-gradient kernel: its measured rates, not the forward fit's") {
  // deepseek-ai/DeepGEMM PR #95 (May 2025): (groups, M, N, K = tokens, TFLOP/s) of its dense and
  // K-grouped (MoE) weight-gradient kernels; the grouped rows as issue #107 quotes the PR.
  const MeasuredGemm rows[] = {{1, 7168, 2112, 4096, 920},  {1, 1536, 24576, 4096, 986}, {1, 512, 32768, 4096, 878},
                      {1, 16384, 7168, 4096, 994}, {1, 7168, 4096, 4096, 942},  {1, 2048, 7168, 4096, 920},
                      {1, 7168, 2112, 8192, 1052}, {1, 1536, 24576, 8192, 1092}, {1, 512, 32768, 8192, 1014},
                      {4, 7168, 4096, 4096, 939},  {4, 2048, 7168, 4096, 900},  {4, 7168, 4096, 8192, 1044},
                      {4, 2048, 7168, 8192, 1033}, {8, 7168, 4096, 4096, 942}};
  for (const char* name : {"h800-sxm", "h100-sxm", "h100-sxm-96gb-500w", "h200-sxm"}) {
    const GpuSpec g = gpu(name);
    REQUIRE(g.gemm_model_weight_gradient.count(MathDtype::fp8) == 1);
    CHECK(g.gemm_model_weight_gradient.count(MathDtype::bf16) == 0);  // bf16 uses one kernel (cuBLAS) for every pass
    double worst_forward_fit = 0;
    for (const MeasuredGemm& r : rows) {
      INFO(name << " " << r.groups << "×" << r.m << "×" << r.n << "×" << r.k);
      CHECK(r.fp8_rate(g, true) == doctest::Approx(r.tflops * 1e12).epsilon(0.055));
      worst_forward_fit = std::max(worst_forward_fit, r.fp8_rate(g) / (r.tflops * 1e12));
    }
    CHECK(worst_forward_fit > 1.3);  // what pricing them as forward GEMMs got wrong
  }
  CHECK(gpu("b200").gemm_model_weight_gradient.empty());  // cuBLAS on Blackwell: one kernel, one model
}

TEST_CASE("a weight_gradient model is read strictly too") {
  Json p = profile_file("hw_profiles/gpus", "h800-sxm");
  p["gemm_model"]["fp8"]["weight_gradient"] = {{"ceiling", 0.6}, {"tile", {128, 152}}, {"k_overhaed", 10}};
  Diagnostics d;
  SourceFile src{"x.json", data_dir(), &d, {}};
  CHECK_FALSE(read_gpu(p, "", src));
  std::string all;
  for (const auto& e : d.list()) all += e.pointer + ": " + e.message + "\n";
  CHECK(all.find("/gemm_model/fp8/weight_gradient: missing key \"k_overhead\"") != std::string::npos);
  CHECK(all.find("/gemm_model/fp8/weight_gradient/k_overhaed: unknown key") != std::string::npos);
}

TEST_CASE("the GEMM shape model: partial tiles, a last wave's idle SMs and split-K for small GEMMs") {
  GemmShapeModel m;
  m.ceiling = 0.8;
  m.k_overhead = 100;
  // 132 tiles of 128×128 fill 132 SMs in one wave; one tile more needs a second wave, half idle.
  CHECK(m.efficiency(128 * 132, 128, 900, 1, 132) == doctest::Approx(0.8 * 0.9));
  CHECK(m.efficiency(128 * 133, 128, 900, 1, 132) == doctest::Approx(0.8 * 0.9 * 133.0 / 264));
  // Half a tile's rows still cost the whole tile.
  CHECK(m.efficiency(64, 128 * 132, 900, 1, 132) == doctest::Approx(0.8 * 0.9 * 0.5));
  // 33 tiles on 132 SMs: K splits four ways, each part 900 steps against the same overhead.
  CHECK(m.efficiency(128 * 33, 128, 3600, 1, 132) == doctest::Approx(0.8 * 0.9 * 132.0 / 132));
  // A grouped GEMM tiles each group apart: 4 groups of 100 rows are 4 tiles, not 4·100/128.
  CHECK(m.tiling(100, 128, 900, 4, 132).busy == doctest::Approx(400.0 / 512 * 1.0));
}

TEST_CASE("a GPU profile's gemm_model is read strictly") {
  auto errors_of = [](const Json& model) {
    Json p = profile_file("hw_profiles/gpus", "a100-sxm-80gb");
    p["gemm_model"] = model;
    p["sources"]["gemm_model"] = "test";
    Diagnostics d;
    SourceFile src{"a100.json", data_dir(), &d, {}};
    read_gpu(p, "", src);
    return d.empty() ? std::string() : d.list().front().pointer + ": " + d.list().front().message;
  };
  CHECK(errors_of({{"bf16", {{"ceiling", 0.8}, {"k_overhead", 100}, {"tile", {128, 128}}}}}).empty());
  CHECK(errors_of({{"bf16", {{"ceiling", 0.8}, {"k_overhead", 100}, {"tile", {0, 128}}}}}).find("/gemm_model/bf16/tile") == 0);
  CHECK(errors_of({{"fp8", {{"ceiling", 0.8}, {"k_overhead", 100}, {"tile", {128, 128}}}}}).find("no fp8 peak") != std::string::npos);
  CHECK(errors_of({{"bf16", {{"ceiling", 1.5}, {"k_overhead", 100}, {"tile", {128, 128}}}}}).find("/gemm_model/bf16/ceiling") == 0);
  CHECK(errors_of({{"bf16", {{"ceiling", 0.8}, {"tile", {128, 128}}}}})== "/gemm_model/bf16: missing key \"k_overhead\"");
}

TEST_CASE("a profile derived from another: DeepSeek-V3's 2024 kernels are the H800 with DeepGEMM's speedups undone") {
  const GpuSpec base = gpu("h800-sxm"), old = gpu("h800-sxm-deepseek-2024");
  // Everything it does not name is the base's: the hardware, bf16.
  CHECK(old.sms == base.sms);
  CHECK(old.hbm_bandwidth == base.hbm_bandwidth);
  CHECK(old.peak_dense == base.peak_dense);
  CHECK(old.hbm_efficiency == base.hbm_efficiency);
  CHECK(old.gemm_efficiency_of(4096, 4096, 7168, 1, MathDtype::bf16) == base.gemm_efficiency_of(4096, 4096, 7168, 1, MathDtype::bf16));
  CHECK(old.sources.at("sms") == base.sources.at("sms"));
  CHECK(old.sources.at("gemm_model") != base.sources.at("gemm_model"));
  // fp8: DeepGEMM README's speedups over the kernel it replaced on the ten training-shaped rows (mean
  // 1.12), and PR #95's ~20% for weight gradients; the shape terms (tile, K overhead) stay the base's.
  const double speedups[] = {1.1, 1.0, 1.0, 1.2, 1.1, 1.1, 1.2, 1.2, 1.2, 1.1};
  double mean = 0;
  for (double x : speedups) mean += x / 10;
  CHECK(base.gemm_efficiency_of(4096, 4096, 7168, 8, MathDtype::fp8) / old.gemm_efficiency_of(4096, 4096, 7168, 8, MathDtype::fp8) ==
        doctest::Approx(mean).epsilon(0.002));
  CHECK(base.gemm_efficiency_of(7168, 4096, 8192, 4, MathDtype::fp8, true) /
            old.gemm_efficiency_of(7168, 4096, 8192, 4, MathDtype::fp8, true) == doctest::Approx(1.2).epsilon(0.002));
  // Attention: FlashAttention-2's rates (MLA ran on an improved FA2), FlashAttention-3's (the paper's
  // "up to 75%" forward, the base's 56.7% backward) over the FA3 paper's speedups, midpoints of 1.5-2.0x
  // forward and 1.5-1.75x backward; no fall in shorter sequences (DeepSeek's trace at 4K is faster).
  CHECK(0.75 / *old.attention_efficiency == doctest::Approx(1.75).epsilon(0.002));
  CHECK(old.attention_efficiency_of("flash", false, 4096) == *old.attention_efficiency);
  CHECK(*base.attention_backward_efficiency / *old.attention_backward_efficiency == doctest::Approx(1.625).epsilon(0.002));
}

TEST_CASE("a profile's base is checked: a string that names a profile, and no cycles") {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("plumb-base-{}", getpid());
  std::filesystem::create_directories(dir);
  auto first_error = [&dir](const Json& p, const std::string& file) {
    Diagnostics d;
    SourceFile src{file, dir, &d, {}};
    read_gpu(p, "/cluster/gpu", src);
    return d.empty() ? std::string() : d.list().front().pointer + ": " + d.list().front().message;
  };
  // An inline override of one figure: the rest comes from the base.
  Json ok = {{"base", "h100-sxm"}, {"sms", 114}};
  Diagnostics d;
  SourceFile src{"s.json", data_dir(), &d, {}};
  std::optional<GpuSpec> g = read_gpu(ok, "/cluster/gpu", src);
  REQUIRE(g);
  CHECK(g->sms == 114);
  CHECK(g->hbm_bandwidth == gpu("h100-sxm").hbm_bandwidth);
  CHECK(first_error({{"base", 3}}, "s.json").find("/cluster/gpu/base: \"base\" names the GPU profile") == 0);
  CHECK(first_error({{"base", "h100-sx"}}, "s.json").find("did you mean \"h100-sxm\"") != std::string::npos);
  // null removes a key of the base (RFC 7386): a required one is then missing, named as usual.
  CHECK(first_error({{"base", "h100-sxm"}, {"sms", nullptr}}, "s.json") == "/cluster/gpu: missing key \"sms\"");
  // Two files that name each other.
  std::ofstream(dir / "plumb-cycle-a.json") << R"({"base": "plumb-cycle-b.json"})";
  std::ofstream(dir / "plumb-cycle-b.json") << R"({"base": "plumb-cycle-a.json"})";
  CHECK(first_error(Json("plumb-cycle-a.json"), "s.json").find("more than 8 deep; is there a cycle") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a derived profile file resolves to a profile that stands alone (what plumb calibrate starts from)") {
  Diagnostics d;
  SourceFile src{"h800-sxm-deepseek-2024.json", data_dir(), &d, {}};
  Json doc = load_profile_document(data_dir() / kGpuProfiles / "h800-sxm-deepseek-2024.json", false, src);
  REQUIRE(d.empty());
  CHECK_FALSE(doc.contains("base"));
  CHECK(doc["sms"] == 132);                                                   // from the base
  CHECK(doc["gemm_model"]["fp8"]["k_overhead"] == 727);                       // from the base, inside an override
  CHECK(doc["gemm_model"]["fp8"]["ceiling"].get<double>() == doctest::Approx(0.660));  // its own
  SourceFile inline_src{"x.json", data_dir(), &d, {}};
  CHECK(read_gpu(doc, "", inline_src));  // reads as an inline profile, no base needed
  // A profile without a base comes back as written.
  CHECK(load_profile_document(data_dir() / kGpuProfiles / "h100-sxm.json", false, src) == profile_file("hw_profiles/gpus", "h100-sxm"));
}

TEST_CASE("B200 GEMMs sustained through a step: the clock-throttling scale against measurements it was not set from") {
  // b200.json's sustained_compute_scale is ml-engineering's MSMF (commit 082816f9): a matmul on randn
  // data after the chip settled at its power limit, 1426.4 TFLOP/s at 9472×8192×20480 with all 8 GPUs of
  // the node busy, over the isolated-call shape model there.
  const GpuSpec b200 = gpu("b200");
  auto burst = [&](double m, double n, double k) {
    return b200.gemm_efficiency_of(m, n, k, 1, MathDtype::bf16) * b200.peak_dense.at(MathDtype::bf16) / 1e12;
  };
  CHECK(burst(9472, 8192, 20480) * b200.sustained_compute_scale == doctest::Approx(1426.4).epsilon(0.002));
  // Not used to set it: the same GPU alone (1456.3, its clock ~50 MHz higher), within 2.5%; the MAMF
  // burst (1770.9 at 1536×9472×14336, 1965 MHz) at the shape model within 5%.
  CHECK(burst(9472, 8192, 20480) * b200.sustained_compute_scale == doctest::Approx(1456.3).epsilon(0.025));
  CHECK(burst(1536, 9472, 14336) == doctest::Approx(1770.9).epsilon(0.05));
  // Short loops (pytorch/ao PR #2427 at 4096³, 6144³, 8192³; vLLM PR #19566 at 16384×6144×4096, ~100 ms
  // each) caught the clock on its way down: above the settled price, below the burst.
  struct Row {
    double m, n, k, tflops;
  };
  const Row rows[] = {{4096, 4096, 4096, 1410}, {6144, 6144, 6144, 1450}, {8192, 8192, 8192, 1420}, {16384, 6144, 4096, 1512.8}};
  for (const Row& r : rows) {
    const double sustained = burst(r.m, r.n, r.k) * b200.sustained_compute_scale;
    INFO(r.m << "×" << r.n << "×" << r.k << ": burst " << burst(r.m, r.n, r.k) << ", sustained " << sustained << ", measured " << r.tflops);
    CHECK(sustained < r.tflops);
    CHECK(sustained > r.tflops * 0.8);
    CHECK(burst(r.m, r.n, r.k) > r.tflops);
  }
  // Fused attention keeps flashinfer's FlashAttention-4 figure (its clock settled near 1580 MHz, not 1340);
  // a profile without one prices attention at its tensor cores' scale.
  REQUIRE(b200.sustained_attention_scale.has_value());
  CHECK(*b200.sustained_attention_scale == doctest::Approx(0.853));
  CHECK(b200.attention_sustained_scale() == doctest::Approx(0.853 * b200.slowest_chip_scale));
  CHECK(gpu("a100-sxm-80gb").attention_sustained_scale() == doctest::Approx(gpu("a100-sxm-80gb").sustained_compute_scale));
}

TEST_CASE("a Hopper at a 500 W limit: its GEMMs slow as a GEMM loop measured there, from the same loop settled at 700 W") {
  // The Hopper profiles price a step at their isolated-call rates at 700 W (a step's clock settles above a
  // GEMM loop's: this project's H200, tests/fixtures/gpu/h200-2026-11-27); a lower limit scales them by the
  // power above the idle draw to the exponent measured between two GEMM loops held at their limits.
  const GpuSpec h100 = gpu("h100-sxm");
  auto burst = [&](double m, double n, double k) {
    return h100.gemm_efficiency_of(m, n, k, 1, MathDtype::bf16) * h100.peak_dense.at(MathDtype::bf16) / 1e12;
  };
  CHECK(h100.sustained_compute_scale == 1.0);
  REQUIRE(h100.power_limit.has_value());
  CHECK(*h100.power_limit == 700);
  // The loop settled at 700 W on one GPU: ml-engineering's MSMF on an H200 (708.5 TFLOP/s at 8192×8448×20480)
  // over the shape model there.
  const double settled_700 = 708.5 / burst(8192, 8448, 20480);
  CHECK(settled_700 == doctest::Approx(0.861).epsilon(0.002));
  // The 500 W Grand Teton H100 runs at its profile's default limit: cuBLAS 8192³ on one 96 GB Hopper at
  // 500 W (facebookexperimental/triton PR #854: 557.2 TFLOP/s) against 8192³ settled at 700 W on a GPU alone.
  Cluster c;
  c.gpu = gpu("h100-sxm-96gb-500w");
  c.fabric = fabric("h100-roce-llama3");
  c.nodes = 1;
  set_job_size(c);
  REQUIRE(c.gpu.default_power_limit.has_value());
  CHECK(c.gpu.power_clock_scale == doctest::Approx(std::pow(430.0 / 630.0, 0.53)));
  // The profile read alone is at its default limit too (calibrating a 500 W machine's measurements against it
  // divides them by the same clocks).
  CHECK(gpu("h100-sxm-96gb-500w").power_clock_scale == doctest::Approx(c.gpu.power_clock_scale));
  const double alone = burst(8192, 8192, 8192) * settled_700;
  CHECK(std::abs(alone * c.gpu.power_clock_scale / 557.2 - 1.0) < 0.01);
  CHECK(alone * std::cbrt(430.0 / 630.0) / 557.2 > 1.07);  // the cube root would be 7% or more fast
  // The profile's own figures are checked against one they were not set from: a TF32 ViT's SM clock under a
  // 500 W cap, 0.879 of its clock at 647 W (Ujeniya et al. 2026): within 3%.
  const double idle = *c.gpu.idle_power, exponent = *c.gpu.power_clock_exponent;
  CHECK(std::pow((500 - idle) / (647 - idle), exponent) == doctest::Approx(0.879).epsilon(0.03));
  // cluster.power_limit overrides the profile's default: at 700 W the 500 W profile prices as the base.
  c.power_limit = 700;
  set_job_size(c);
  CHECK(c.gpu.power_clock_scale == doctest::Approx(1.0));
  // Without a cluster limit, a profile without a default runs at its own limit.
  Cluster full;
  full.gpu = h100;
  full.fabric = c.fabric;
  full.nodes = 1;
  set_job_size(full);
  CHECK(full.gpu.power_clock_scale == 1.0);
}

TEST_CASE("a board power limit scales the sustained clocks by the measured power of the power above the idle draw") {
  // b200.json: sustained figures measured at 1000 W, 150 W idle, and the clock following the power above
  // that draw to the 0.80th power, measured (power_clock_exponent). At 750 W (Meta's B200 default) that
  // is (600 / 850)^0.8 = 0.7568 of the profile's clocks: every sustained scale with it.
  Cluster c;
  c.gpu = gpu("b200");
  c.fabric = fabric("dgx-b200-ndr");
  c.nodes = 1;
  set_job_size(c);
  const double gemm = c.gpu.sustained_scale(MathDtype::bf16), fp8 = c.gpu.sustained_scale(MathDtype::fp8);
  const double attention = c.gpu.attention_sustained_scale();
  c.power_limit = 750;
  set_job_size(c);
  CHECK(c.gpu.power_clock_scale == doctest::Approx(std::pow(600.0 / 850.0, 0.8)));
  CHECK(std::abs(c.gpu.power_clock_scale - 0.7568) < 1e-4);
  CHECK(std::abs(c.gpu.sustained_scale(MathDtype::bf16) / gemm - 0.7568) < 1e-4);
  CHECK(std::abs(c.gpu.sustained_scale(MathDtype::fp8) / fp8 - 0.7568) < 1e-4);
  CHECK(std::abs(c.gpu.attention_sustained_scale() / attention - 0.7568) < 1e-4);
  // The exponent's evidence, held: cuBLAS 8192³ on one B200 capped at 750 W (facebookexperimental/triton
  // PR #854: 1087.7 TFLOP/s; PR #814: 1059.0) against the profile's 8192³ settled at 1000 W on a GPU alone
  // (the shape model × ml-engineering's single-GPU MSMF over its 8-GPU one, 1456.3 / 1426.4): within 2%.
  // The cube root (0.890) would put both 16–19% high.
  const double alone = c.gpu.gemm_efficiency_of(8192, 8192, 8192, 1, MathDtype::bf16) * c.gpu.peak_dense.at(MathDtype::bf16) / 1e12 *
                       c.gpu.sustained_compute_scale * 1456.3 / 1426.4;
  CHECK(std::abs(alone * c.gpu.power_clock_scale / 1087.7 - 1.0) < 0.02);
  CHECK(std::abs(alone * c.gpu.power_clock_scale / 1059.0 - 1.0) < 0.02);
  CHECK(alone * std::cbrt(600.0 / 850.0) / 1087.7 > 1.15);
  // At the profile's own limit nothing moves; above it the clock rises, but never past the burst rates.
  c.power_limit = 1000;
  set_job_size(c);
  CHECK(c.gpu.sustained_scale(MathDtype::bf16) == doctest::Approx(gemm));
  c.power_limit = 3000;
  set_job_size(c);
  CHECK(c.gpu.power_clock_scale > 2.5);
  CHECK(c.gpu.sustained_scale(MathDtype::bf16) == doctest::Approx(c.gpu.slowest_chip_scale));
  // A profile without the figures, or a limit at its idle draw, has no clock to give.
  CHECK_FALSE(power_clock_scale_at(gpu("a100-sxm-80gb"), 300).has_value());
  CHECK_FALSE(power_clock_scale_at(c.gpu, 150).has_value());
  GpuSpec no_exponent = c.gpu;
  no_exponent.power_clock_exponent.reset();
  CHECK_FALSE(power_clock_scale_at(no_exponent, 750).has_value());
}

TEST_CASE("B200 FP8 GEMMs sustained through a step: a clock of their own, checked against a run it was not set from") {
  // sustained_compute_scale_fp8 (0.724) is vLLM PR #19566's FP8 GEMM (per-tensor scales, no quantization
  // step) at 16384×6144×4096, 2544.7 TFLOP/s, over the isolated-call model's rate there. TransformerEngine issue #1747's
  // te.Linear at 8192³ (2377.1 TFLOP/s, its casts of input and weight to FP8 included) was not used: the
  // GEMM at the FP8 scale plus the two casts at the HBM rate (3 to 4 bytes moved an element) meet it:
  // 410 us of GEMM and 59-78 us of casts at 89.1% of 7.7 TB/s, 2346-2252 TFLOP/s (-1.3% to -5.3%).
  const GpuSpec b200 = gpu("b200");
  REQUIRE(b200.sustained_compute_scale_fp8.has_value());
  auto rate = [&](double m, double n, double k, MathDtype d) {
    return b200.gemm_efficiency_of(m, n, k, 1, d) * b200.peak_dense.at(d) * b200.sustained_scale(d);
  };
  CHECK(rate(16384, 6144, 4096, MathDtype::fp8) / 1e12 == doctest::Approx(2544.7).epsilon(0.005));
  // ml-engineering's FP8 MSMF, not used: 2795.7 TFLOP/s at 9472×8192×16384 after the chip settled (~990 W,
  // 1331 MHz), within 1%; its clock a little under the BF16 one (1339 MHz), as the scales are.
  CHECK(rate(9472, 8192, 16384, MathDtype::fp8) / 1e12 == doctest::Approx(2795.7).epsilon(0.01));
  CHECK(*b200.sustained_compute_scale_fp8 < b200.sustained_compute_scale);
  const double n = 8192, flops = 2 * n * n * n, elements = 2 * n * n;
  const double gemm = flops / rate(n, n, n, MathDtype::fp8);
  for (double bytes_per_element : {3.0, 4.0}) {
    const double casts = elements * bytes_per_element / (b200.hbm_bandwidth * b200.hbm_efficiency);
    INFO(bytes_per_element << " bytes an element cast");
    CHECK(flops / (gemm + casts) / 1e12 == doctest::Approx(2377.1).epsilon(0.06));
  }
  CHECK(gpu("h100-sxm").sustained_scale(MathDtype::fp8) == 1.0);
}

TEST_CASE("FlashAttention-2 on Hopper: its own rates as a training step sustains them, the fastest kernel's elsewhere") {
  // FA2 (PyTorch's SDPA flash backend) measured in torchtitan's 8B step on the lent H200 at 8,192 keys,
  // causal, head dim 128 (tests/fixtures/gpu/h200-2026-11-27): 3.906 ms forward and 11.094 ms backward a
  // call for 1.0995e12 and 2.5 × that FLOPs, 281.5 and 247.8 TFLOP/s. FA3 from the FlashAttention-3
  // paper's figures (arXiv 2407.08608) at 16k keys: forward (causal) 616, backward 561 TFLOP/s.
  const GpuSpec h100 = gpu("h100-sxm"), h200 = gpu("h200-sxm");
  for (const GpuSpec* g : {&h100, &h200}) {
    CHECK(g->attention_efficiency_of("flash2", false, 8192) * 989.4 == doctest::Approx(281.5).epsilon(0.005));
    CHECK(g->attention_efficiency_of("flash2", true, 8192) * 989.4 == doctest::Approx(247.8).epsilon(0.005));
  }
  // The paper's FA2 benchmark bars (335 forward, 322 backward at 16k) are above what the step sustained:
  // the card at its 700 W limit at 1,395–1,770 MHz.
  CHECK(h100.attention_efficiency_of("flash2", false) * 989.4 < 335 * 0.9);
  CHECK(h100.attention_efficiency_of("flash2", true) * 989.4 < 322 * 0.8);
  CHECK(h100.attention_efficiency_of("flash", false) == doctest::Approx(616 / 989.4).epsilon(0.002));
  CHECK(h100.attention_efficiency_of("flash", true) == doctest::Approx(561 / 989.4).epsilon(0.002));
  // Shorter sequences along each kernel's curve through its 16k figure, e·s/(s + half) normalised there:
  // the FA3 figure's own bars at 1k and 4k within the fit's ±4.1%, and no rise past the longest measured
  // sequence; FA2's curve (half 377 keys, fitted to the paper's FA2 bars) keeps their ratio 1k : 4k.
  CHECK(h100.attention_efficiency_of("flash", false, 1024) * 989.4 == doctest::Approx(423).epsilon(0.042));
  CHECK(h100.attention_efficiency_of("flash", false, 4096) * 989.4 == doctest::Approx(579).epsilon(0.042));
  CHECK(h100.attention_efficiency_of("flash2", false, 1024) / h100.attention_efficiency_of("flash2", false, 4096) ==
        doctest::Approx(260.0 / 319).epsilon(0.05));
  CHECK(h100.attention_efficiency_of("flash", false, 131072) == h100.attention_efficiency_of("flash", false));
  // The 500 W part inherits them (a derived profile; its clock scale applies on top), and the A100's fused
  // attention is FlashAttention-2 already.
  CHECK(gpu("h100-sxm-96gb-500w").attention_efficiency_of("flash2", true) == h100.attention_efficiency_of("flash2", true));
  const GpuSpec a100 = gpu("a100-sxm-80gb");
  CHECK(a100.attention_efficiency_of("flash2", false) == a100.attention_efficiency_of("flash", false));
}

TEST_CASE("a synchronous job runs at its slowest chip's pace: the expected largest of n normal draws") {
  // Closed forms and tabulated values of the expected maximum of n standard normals (Tippett 1925, Harter 1961; n = 2:
  // 1/√π, n = 3: 3/(2√π)).
  CHECK(expected_max_standard_normal(1) == 0.0);
  CHECK(expected_max_standard_normal(2) == doctest::Approx(1 / std::sqrt(M_PI)).epsilon(1e-7));
  CHECK(expected_max_standard_normal(3) == doctest::Approx(3 / (2 * std::sqrt(M_PI))).epsilon(1e-7));
  CHECK(expected_max_standard_normal(10) == doctest::Approx(1.5387527).epsilon(1e-6));
  CHECK(expected_max_standard_normal(100) == doctest::Approx(2.5075937).epsilon(1e-6));
  CHECK(expected_max_standard_normal(1000) == doctest::Approx(3.24144).epsilon(1e-5));
  // One GPU is its own pace; 8 and 2,048 H100s at the chips' 1.71% spread; the scenario's own spread wins.
  Cluster c;
  c.gpu = gpu("h100-sxm");
  c.fabric.gpus_per_node = 1;
  c.nodes = 1;
  set_job_size(c);
  CHECK(c.gpu.slowest_chip_scale == 1.0);
  c.nodes = 8;
  set_job_size(c);
  CHECK(c.gpu.slowest_chip_scale == doctest::Approx(1 - 0.0171 * 1.4236).epsilon(1e-4));
  c.nodes = 2048;
  set_job_size(c);
  const double big = c.gpu.slowest_chip_scale;
  CHECK(big == doctest::Approx(1 - 0.0171 * 3.4418).epsilon(1e-4));
  CHECK(c.gpu.sustained_scale(MathDtype::bf16) == doctest::Approx(big));
  c.chip_spread = 0.0;
  set_job_size(c);
  CHECK(c.gpu.slowest_chip_scale == 1.0);
}
