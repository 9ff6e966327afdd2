#include "validate/calibrate/clock_fit.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "models/input/diagnostics.hpp"
#include "models/input/statistics.hpp"

namespace plumb {
namespace {

// The value a fraction `p` of the way through sorted `v` (nearest rank).
double quantile(const std::vector<double>& sorted, double p) {
  return sorted[static_cast<std::size_t>(std::lround(p * static_cast<double>(sorted.size() - 1)))];
}

double rounded(double x) { return std::round(x * 1000) / 1000; }

}  // namespace

ClockFit calibrate_clock(const Json& profile_json, const GpuSpec& gpu, const std::vector<Measurements>& measured) {
  std::string files;
  for (const Measurements& m : measured) {
    if (!m.sustained)
      throw InputError({{m.file, "",
                         "its GEMMs were not timed back to back at a settled clock: plumb calibrate --clock needs sustained rates "
                         "(a SimuMax system config, or plumb's measurement file with \"sustained\": true)"}});
    files += (files.empty() ? "" : ", ") + fmt::format("{} ({}, {})", m.file, m.device, m.date);
  }
  // The profile's time for a GEMM at its settled clock (a weight gradient at the profile's weight-gradient
  // kernel where it has one), over the measured time: the measured clock's share.
  auto ratio = [&gpu](const GemmMeasurement& g) {
    const double rate = gpu.peak_dense.at(MathDtype::bf16) * gpu.gemm_efficiency_of(g.m, g.n, g.k, 1, MathDtype::bf16, g.weight_gradient) *
                        gpu.sustained_scale(MathDtype::bf16);
    return g.flops() / rate / g.seconds;
  };
  std::vector<double> dense, weight_gradient;
  std::vector<ClockBand> bands{{kClockFitMinFlops, 4 * kClockFitMinFlops}, {4 * kClockFitMinFlops, 16 * kClockFitMinFlops},
                               {16 * kClockFitMinFlops, 0}};
  std::vector<ClockBand> short_bands{{kClockShortMinFlops, 2e11}, {2e11, kClockFitMinFlops}};
  std::vector<std::vector<double>> by_band(bands.size()), by_short_band(short_bands.size());
  auto file_in = [](const std::vector<ClockBand>& in, std::vector<std::vector<double>>& by, double flops, double r) {
    for (std::size_t b = 0; b < in.size(); ++b)
      if (flops >= in[b].min_flops && (in[b].max_flops == 0 || flops < in[b].max_flops)) by[b].push_back(r);
  };
  for (const Measurements& m : measured)
    for (const GemmMeasurement& g : m.gemm) {
      if (g.dtype != MathDtype::bf16 || g.groups != 1 || !(g.seconds > 0) || g.flops() < kClockShortMinFlops) continue;
      const double r = ratio(g);
      if (g.flops() < kClockFitMinFlops) {
        if (!g.weight_gradient) file_in(short_bands, by_short_band, g.flops(), r);
        continue;
      }
      (g.weight_gradient ? weight_gradient : dense).push_back(r);
      if (!g.weight_gradient) file_in(bands, by_band, g.flops(), r);
    }
  if (dense.size() < kClockFitFewestGemms)
    throw InputError({{files, "",
                       fmt::format("{} dense bf16 forward or input-gradient GEMMs of {:g} FLOPs or more: the clock needs {} or more",
                                   dense.size(), kClockFitMinFlops, kClockFitFewestGemms)}});
  std::sort(dense.begin(), dense.end());
  ClockFit f;
  f.ratio = median(dense);
  f.lower_quartile = quantile(dense, 0.25);
  f.upper_quartile = quantile(dense, 0.75);
  f.points = dense.size();
  auto kept = [](std::vector<ClockBand> in, const std::vector<std::vector<double>>& by, double scale) {
    std::vector<ClockBand> out;
    for (std::size_t b = 0; b < in.size(); ++b)
      if (!by[b].empty()) {
        in[b].points = by[b].size();
        in[b].ratio = median(by[b]) * scale;
        out.push_back(in[b]);
      }
    return out;
  };
  f.bands = kept(bands, by_band, 1.0);
  // At the fitted clock: the profile's time for them after the fit, over the measured time.
  f.short_bands = kept(short_bands, by_short_band, 1.0 / f.ratio);
  f.weight_gradient_points = weight_gradient.size();
  f.weight_gradient_ratio = median(weight_gradient);
  f.compute_before = gpu.sustained_compute_scale;
  f.fp8_before = gpu.sustained_compute_scale_fp8.value_or(gpu.sustained_compute_scale);
  f.attention_before = gpu.sustained_attention_scale.value_or(gpu.sustained_compute_scale);
  f.compute_after = rounded(f.compute_before * f.ratio);
  f.fp8_after = rounded(f.fp8_before * f.ratio);
  f.attention_after = rounded(f.attention_before * f.ratio);
  f.profile = profile_json;
  const std::string fit = fmt::format(
      "the clock measured by plumb calibrate --clock from {}: its {} dense bf16 forward and input-gradient GEMMs of {:g} FLOPs or more, "
      "timed back to back, ran at a median {:.3f} (quartiles {:.3f}-{:.3f}) of the rate the profile gives them at its own settled "
      "clock and shape model",
      files, f.points, kClockFitMinFlops, f.ratio, f.lower_quartile, f.upper_quartile);
  for (auto [field, before, after] : {std::tuple{"sustained_compute_scale", f.compute_before, f.compute_after},
                                      std::tuple{"sustained_compute_scale_fp8", f.fp8_before, f.fp8_after},
                                      std::tuple{"sustained_attention_scale", f.attention_before, f.attention_after}}) {
    f.profile[field] = after;
    Json& source = f.profile["sources"][field];
    const std::string earlier = source.is_string() ? source.get<std::string>() : std::string();
    source = fmt::format("{:.3f} × {:.3f}: {}{}", before, f.ratio, fit, earlier.empty() ? "" : ". The profile's own " + std::string(field) + ": " + earlier);
  }
  return f;
}

}  // namespace plumb
