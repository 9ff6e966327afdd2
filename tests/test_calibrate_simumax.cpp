// Calibrating from measurements taken elsewhere: a SimuMax system config's GEMM tables read as plumb's
// measurements, and rates timed back to back (at a sustained clock) fitted under a profile's
// sustained_compute_scale.
#include <cmath>
#include <doctest/doctest.h>

#include "catalogue_fixtures.hpp"
#include "models/costs/op_cost.hpp"
#include "models/input/statistics.hpp"
#include "validate/calibrate/calibrate.hpp"
#include "validate/calibrate/clock_fit.hpp"
#include "validate/calibrate/simumax_system.hpp"

using namespace plumb;
using test::profile_file;

namespace {

// tests/fixtures/calibration/simumax-b200-excerpt.json: rows of MooreThreads/SimuMax
// configs/system/b200_bf16_ceperm.json (commit 4dcaae5, measured on the B200 node of its real runs).
Json excerpt() { return profile_file("tests/fixtures/calibration", "simumax-b200-excerpt"); }

}  // namespace

TEST_CASE("a SimuMax system config's GEMM tables read as plumb's GEMMs by pass, timed at their efficiency of its tflops") {
  // tests/fixtures/calibration/simumax-b200-excerpt.json: rows of MooreThreads/SimuMax
  // configs/system/b200_bf16_ceperm.json (commit 4dcaae5, measured on the B200 node of its real runs):
  // Transformer Engine general_gemm, TN forward, NN input gradient, NT weight gradient.
  const Json doc = excerpt();
  REQUIRE(is_simumax_system(doc));
  CHECK_FALSE(is_simumax_system(profile_file("tests/fixtures/calibration", "gemm-synthetic")));
  const Measurements m = read_simumax_system(doc, "simumax.json");
  CHECK(m.sustained);  // 75 calls back to back after 25 warm-up
  CHECK(m.gemm.size() == 21);  // 15 dense rows (4 bf16 weight gradients left out) and 6 grouped ones
  auto find = [&](double mm, double n, double k, double groups, bool wgrad) -> const GemmMeasurement* {
    for (const GemmMeasurement& g : m.gemm)
      if (g.m == mm && g.n == n && g.k == k && g.groups == groups && g.weight_gradient == wgrad) return &g;
    return nullptr;
  };
  // "b=1, m=4096, k=8192, n=57344, layout=TN": 4096 tokens through an 8192 → 57344 linear at 0.48669.
  const GemmMeasurement* forward = find(4096, 57344, 8192, 1, false);
  REQUIRE(forward);
  CHECK(forward->seconds == doctest::Approx(2.0 * 4096 * 57344 * 8192 / (0.4866883120666592 * 2250e12)));
  CHECK(find(4096, 8192, 57344, 1, false));  // NN: the input gradient, K the layer's output
  // NT, fp32 out: SimuMax's m is the weight's output side; plumb's weight-gradient GEMM is in × out × tokens.
  const GemmMeasurement* wgrad = find(8192, 57344, 4096, 1, true);
  REQUIRE(wgrad);
  CHECK(wgrad->seconds == doctest::Approx(2.0 * 57344 * 8192 * 4096 / (0.4535840289023081 * 2250e12)));
  // Grouped: 160 experts of 154 tokens, 5120 → 3072; the weight gradient's K is the tokens.
  const GemmMeasurement* expert_wgrad = find(5120, 3072, 154, 160, true);
  REQUIRE(expert_wgrad);
  CHECK(expert_wgrad->seconds == doctest::Approx(2.0 * 160 * 154 * 3072 * 5120 / (0.09365228280672189 * 2250e12)));
  CHECK(find(154, 5120, 3072, 160, false));  // bwd_grad_act: back through the 5120 → 3072 projection
  // What was not read is said, with why.
  std::string left_out;
  for (const std::string& w : m.left_out) left_out += w + "\n";
  CHECK(left_out.find("4 weight-gradient GEMMs") != std::string::npos);
  CHECK(left_out.find("/accelerator/op/sdp_fwd") != std::string::npos);
  CHECK(left_out.find("/accelerator/bandwidth") != std::string::npos);
}

TEST_CASE("a SimuMax row that is not a shape and an efficiency is refused with its JSON path") {
  Json doc = excerpt();
  Json& table = doc["accelerator"]["op"]["matmul"]["accurate_efficient_factor"];
  table["b=1, m=4096x, k=8192, n=2560, layout=TN, accumulate=False, out_dtype=bf16"] = 0.5;
  CHECK_THROWS_WITH_AS(read_simumax_system(doc, "simumax.json"),
                       doctest::Contains("/accelerator/op/matmul/accurate_efficient_factor/b=1, m=4096x"), InputError);
  table.erase("b=1, m=4096x, k=8192, n=2560, layout=TN, accumulate=False, out_dtype=bf16");
  table["b=1, m=4096, k=8192, n=2560, layout=TT, accumulate=False, out_dtype=bf16"] = 0.5;
  CHECK_THROWS_WITH_AS(read_simumax_system(doc, "simumax.json"), doctest::Contains("\"layout\" must be TN"), InputError);
  table.erase("b=1, m=4096, k=8192, n=2560, layout=TT, accumulate=False, out_dtype=bf16");
  table["b=1, m=4096, k=8192, n=2560, layout=TN, accumulate=False, out_dtype=bf16"] = -1;
  CHECK_THROWS_WITH_AS(read_simumax_system(doc, "simumax.json"), doctest::Contains("expected an efficiency above 0"), InputError);
  doc["accelerator"]["op"]["matmul"]["tflops"] = "fast";
  CHECK_THROWS_WITH_AS(read_simumax_system(doc, "simumax.json"), doctest::Contains("/accelerator/op/matmul/tflops"), InputError);
}

TEST_CASE("rates measured back to back calibrate a GPU with a sustained clock to predict exactly those rates") {
  // b200.json holds isolated-call (burst) figures and sustained_compute_scale (0.762) on top. Rates
  // timed back to back are sustained already: calibrate divides them by the scale, so the calibrated
  // profile (which keeps the scale) prices each GEMM at its measured rate instead of 0.762 × it.
  Diagnostics d;
  SourceFile src{"test", data_dir(), &d, {}};
  const GpuSpec b200 = *read_gpu(Json("b200"), "", src);
  REQUIRE(b200.sustained_compute_scale == doctest::Approx(0.762));
  GemmShapeModel truth;  // the sustained rates measured
  truth.ceiling = 0.5;
  truth.k_overhead = 200;
  truth.tile_m = 256;
  truth.tile_n = 128;
  const double shapes[][3] = {{4096, 4096, 512}, {4096, 4096, 2048}, {8192, 7168, 7168}, {4096, 57344, 8192}, {16384, 16384, 1024}};
  Json doc = {{"plumb_measurements", 1}, {"device", "SYNTHETIC B200"}, {"date", "2026-11-26"}, {"sustained", true}, {"gemm", Json::array()}};
  for (const auto& s : shapes)
    doc["gemm"].push_back({{"m", s[0]}, {"n", s[1]}, {"k", s[2]}, {"dtype", "bf16"},
                           {"seconds", 2 * s[0] * s[1] * s[2] / (truth.efficiency(s[0], s[1], s[2], 1, 148) * 2250e12)}});
  auto calibrated_with = [&](const Json& measurements) {
    Calibration c = calibrate_gpu(profile_file("hw_profiles/gpus", "b200"), b200, {read_measurements(measurements, "b2b.json")});
    GpuSpec g = *read_gpu(c.profile, "", src);
    REQUIRE(d.empty());
    return g;
  };
  const GpuSpec sustained = calibrated_with(doc);
  CHECK(sustained.sustained_compute_scale == doctest::Approx(0.762));
  for (const auto& s : shapes)
    CHECK(sustained.gemm_efficiency_of(s[0], s[1], s[2], 1, MathDtype::bf16) * sustained.sustained_scale(MathDtype::bf16) ==
          doctest::Approx(truth.efficiency(s[0], s[1], s[2], 1, 148)).epsilon(1e-3));  // the ceiling written to 3 places
  CHECK(sustained.sources.at("gemm_model").find("divided by the profile's sustained scale 0.762") != std::string::npos);
  // The same times not marked sustained are taken as burst rates, as before.
  doc.erase("sustained");
  const GpuSpec burst = calibrated_with(doc);
  CHECK(burst.gemm_efficiency_of(4096, 57344, 8192, 1, MathDtype::bf16) == doctest::Approx(truth.efficiency(4096, 57344, 8192, 1, 148)));
}

TEST_CASE("plumb calibrate --clock: the SimuMax node's settled clock, one factor on b200's sustained scales, the shapes kept") {
  // The whole of MooreThreads/SimuMax 4dcaae5 configs/system/b200_bf16_ceperm.json. Its GEMMs of a TFLOP or
  // more (1-67 ms, the clock settled) ran at 0.80 of b200.json's settled rates at every size: a clock, not
  // a shape. The catalogue's b200-simumax-node.json holds what the fit writes.
  Diagnostics d;
  SourceFile src{"test", data_dir(), &d, {}};
  const GpuSpec b200 = *read_gpu(Json("b200"), "", src);
  const Measurements node = read_simumax_system(profile_file("tests/fixtures/calibration", "simumax-b200-bf16-ceperm"), "node.json");
  const Json base = profile_file("hw_profiles/gpus", "b200");
  const ClockFit f = calibrate_clock(base, b200, {node});
  CHECK(f.points == 146);  // dense bf16-out GEMMs (TN forward, NN input gradient) of 1e12 FLOPs or more
  CHECK(f.ratio == doctest::Approx(0.803).epsilon(0.002));
  CHECK(f.lower_quartile < f.ratio);
  CHECK(f.upper_quartile > f.ratio);
  CHECK(f.upper_quartile - f.lower_quartile < 0.06);  // one clock: a narrow spread over 1-67 ms GEMMs
  // ... and little drift with size: 0.813 at 1-4 TFLOP, 0.798 at 4-16, 0.764 from 16 (the longest, 15-67 ms).
  REQUIRE(f.bands.size() == 3);
  std::size_t banded = 0;
  for (const ClockBand& b : f.bands) {
    INFO(b.min_flops);
    CHECK(b.ratio == doctest::Approx(f.ratio).epsilon(0.06));
    banded += b.points;
  }
  CHECK(banded == f.points);
  CHECK(f.bands.front().ratio > f.bands.back().ratio);
  // Not fitted: the shorter GEMMs, at the fitted clock. Those of 0.05-0.2 TFLOP (40-150 us) ran a third
  // faster than the calibrated profile prices them, those of 0.2-1 TFLOP 8% faster: below a millisecond
  // the node's GEMMs outran both its long loop's clock and b200's shape model (docs/fidelity.md).
  REQUIRE(f.short_bands.size() == 2);
  CHECK(f.short_bands[0].points == 44);
  CHECK(f.short_bands[0].ratio == doctest::Approx(1.31).epsilon(0.01));
  CHECK(f.short_bands[1].points == 82);
  CHECK(f.short_bands[1].ratio == doctest::Approx(1.08).epsilon(0.01));
  CHECK(f.weight_gradient_points == 73);
  CHECK(f.weight_gradient_ratio < f.ratio);  // reported, not fitted
  CHECK(f.compute_after == doctest::Approx(0.762 * f.ratio).epsilon(0.002));
  CHECK(f.fp8_after == doctest::Approx(0.724 * f.ratio).epsilon(0.002));
  CHECK(f.attention_after == doctest::Approx(0.853 * f.ratio).epsilon(0.002));
  CHECK(f.profile["gemm_model"] == base["gemm_model"]);  // the shape model untouched
  const GpuSpec fitted = *read_gpu(f.profile, "", src);
  REQUIRE(d.empty());
  // The catalogue's node profile is this fit.
  const GpuSpec catalogue = *read_gpu(Json("b200-simumax-node"), "", src);
  REQUIRE(d.empty());
  CHECK(catalogue.sustained_compute_scale == doctest::Approx(fitted.sustained_compute_scale));
  CHECK(*catalogue.sustained_compute_scale_fp8 == doctest::Approx(*fitted.sustained_compute_scale_fp8));
  CHECK(*catalogue.sustained_attention_scale == doctest::Approx(*fitted.sustained_attention_scale));
  CHECK(catalogue.gemm_efficiency_of(4096, 57344, 8192, 1, MathDtype::bf16) ==
        doctest::Approx(b200.gemm_efficiency_of(4096, 57344, 8192, 1, MathDtype::bf16)));
}

TEST_CASE("plumb calibrate --clock refuses burst rates and too few long GEMMs, naming the file") {
  Diagnostics d;
  SourceFile src{"test", data_dir(), &d, {}};
  const GpuSpec b200 = *read_gpu(Json("b200"), "", src);
  const Json base = profile_file("hw_profiles/gpus", "b200");
  Json doc = {{"plumb_measurements", 1}, {"device", "B200"}, {"date", "2026-11-28"}, {"gemm", Json::array()}};
  for (double k : {8192.0, 16384.0, 32768.0, 65536.0, 131072.0})  // 1.1 to 17.6 TFLOP
    doc["gemm"].push_back({{"m", 8192}, {"n", 8192}, {"k", k}, {"dtype", "bf16"}, {"seconds", 2 * 8192.0 * 8192 * k / 1.2e15}});
  CHECK_THROWS_WITH_AS(calibrate_clock(base, b200, {read_measurements(doc, "burst.json")}),
                       doctest::Contains("burst.json: its GEMMs were not timed back to back"), InputError);
  doc["sustained"] = true;
  const ClockFit f = calibrate_clock(base, b200, {read_measurements(doc, "b2b.json")});
  CHECK(f.points == 5);
  // 1.2 PFLOP/s against b200's settled rate for these shapes: the clock's share is that rate's.
  CHECK(f.ratio == doctest::Approx(1.2e15 / (2250e12 * b200.gemm_efficiency_of(8192, 8192, 32768, 1, MathDtype::bf16) * 0.762)).epsilon(0.01));
  doc["gemm"][0]["k"] = 4096;  // 0.55 TFLOP: too short to count
  doc["gemm"].erase(1);
  CHECK_THROWS_WITH_AS(calibrate_clock(base, b200, {read_measurements(doc, "b2b.json")}),
                       doctest::Contains("3 dense bf16 forward or input-gradient GEMMs of 1e+12 FLOPs or more: the clock needs 5"), InputError);
}

TEST_CASE("Transformer Engine's grouped GEMMs on four streams agree with the SimuMax node's grouped table, which one grouped kernel does not") {
  // The node's group_matmul rows (TE 2.11 GroupedLinear, 20-256 experts of 128-9832 tokens, forward and input
  // gradient): a check the four-stream model (training.grouped_gemm_streams, from TE's source) was not set from.
  Diagnostics d;
  SourceFile src{"test", data_dir(), &d, {}};
  const GpuSpec node = *read_gpu(Json("b200-simumax-node"), "", src);
  REQUIRE(d.empty());
  const Measurements m = read_simumax_system(profile_file("tests/fixtures/calibration", "simumax-b200-bf16-ceperm"), "node.json");
  TrainingSpec streams, one_kernel;
  streams.grouped_gemm_streams = 4;
  const double pace = node.peak_dense.at(MathDtype::bf16) * node.sustained_scale(MathDtype::bf16);
  std::vector<double> four, one;
  for (const GemmMeasurement& g : m.gemm) {
    if (g.groups <= 1 || g.weight_gradient) continue;
    const GemmShape shape{g.m, g.n, g.k, g.groups};
    four.push_back(g.flops() / (pace * gemm_efficiency(node, shape, MathDtype::bf16, 0, streams)) / g.seconds);
    one.push_back(g.flops() / (pace * gemm_efficiency(node, shape, MathDtype::bf16, 0, one_kernel)) / g.seconds);
  }
  REQUIRE(four.size() == 72);
  auto rms_log = [](const std::vector<double>& r) {
    double s = 0;
    for (double x : r) s += std::log(x) * std::log(x);
    return std::sqrt(s / static_cast<double>(r.size()));
  };
  // Predicted over measured time: 1.03 at the median on four streams, 0.87 as one kernel (too fast).
  CHECK(median(four) == doctest::Approx(1.03).epsilon(0.03));
  CHECK(median(one) < 0.9);
  CHECK(rms_log(four) < rms_log(one));
}
