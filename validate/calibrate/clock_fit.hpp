#pragma once
// plumb calibrate --clock: the clock a machine's tensor cores settle to, as one figure over a profile's
// own settled clock, from long GEMMs timed back to back on that machine. The profile's shape model
// (how efficiency falls with tiles, waves and K) is kept; only its sustained scales move, all by the
// same factor, since a lower clock slows every tensor-core kernel alike (the profile's power model
// scales them together too). For a machine that runs the catalogue's kernels slower than the
// catalogue's boards do (a lower power limit, a hotter room), without fitting its shapes.
#include <cstddef>
#include <string>
#include <vector>

#include "validate/calibrate/calibrate.hpp"

namespace plumb {

// GEMMs of at least this many FLOPs take a millisecond or more on the catalogue's GPUs: long enough,
// timed back to back, for the clock to have settled where a training step holds it (flashinfer PR
// #2899 saw a B200's clock settle after some 5 ms of continuous tensor-core work).
inline constexpr double kClockFitMinFlops = 1e12;
// Shorter GEMMs, from this many FLOPs up to kClockFitMinFlops (tens of microseconds to a millisecond),
// are reported by size beside the fit and not part of it: below a millisecond a kernel's clock and its
// launch gaps differ from a long loop's, and the shape model's tiles and waves matter most.
inline constexpr double kClockShortMinFlops = 5e10;
// Fewer GEMMs than this that long give no median worth a profile.
inline constexpr std::size_t kClockFitFewestGemms = 5;

// The fit's GEMMs of one band of sizes and their median: a clock moves every band alike, a shape the
// model misses moves some more than others.
struct ClockBand {
  double min_flops = 0, max_flops = 0;  // [min, max); max 0: no upper bound
  std::size_t points = 0;
  double ratio = 0;
};

struct ClockFit {
  // The median over the long dense forward and input-gradient bf16 GEMMs of the profile's predicted time
  // over the measured one: the machine's settled clock over the profile's. With its quartiles.
  double ratio = 1, lower_quartile = 1, upper_quartile = 1;
  std::size_t points = 0;
  // The same median by size: 1-4 TFLOP, 4-16, 16 and more (bands with no GEMM left out).
  std::vector<ClockBand> bands;
  // Not fitted: the dense GEMMs below kClockFitMinFlops, by size (0.05-0.2 TFLOP, 0.2-1), at the fitted
  // clock: how much faster or slower than the calibrated profile prices them the machine ran them.
  std::vector<ClockBand> short_bands;
  // The weight-gradient GEMMs of the same length (fp32-accumulating kernels in some frameworks): their
  // median, reported beside the fit and not part of it (a kernel difference, not the clock). 0 if none.
  double weight_gradient_ratio = 0;
  std::size_t weight_gradient_points = 0;
  // The scales before and after: sustained_compute_scale, its fp8 and attention variants.
  double compute_before = 1, fp8_before = 1, attention_before = 1;
  double compute_after = 1, fp8_after = 1, attention_after = 1;
  Json profile;  // `profile_json` with the three scales multiplied by `ratio`, each with its source
};

// Throws InputError when a file's GEMMs were not timed back to back (Measurements::sustained), and
// UsageError when fewer than kClockFitFewestGemms long bf16 GEMMs were measured.
ClockFit calibrate_clock(const Json& profile_json, const GpuSpec& gpu, const std::vector<Measurements>& measured);

}  // namespace plumb
