#pragma once
// Least-squares fits (Eigen) of plumb's cost terms to measurements.
#include <cstdint>
#include <optional>
#include <vector>

#include "models/hardware/hardware.hpp"

namespace plumb {

// t = α + x·β over points (x, t), minimising the squared relative error Σ((α + xβ − t)/t)², so small
// messages (latency) and large ones (bandwidth) weigh alike.
struct AlphaBeta {
  double alpha = 0;  // seconds
  double beta = 0;   // seconds per unit of x
  double rms_relative_error = 0;
  std::vector<double> relative_errors;  // per point, (fit − measured) / measured
};
AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t);

// GEMM efficiency by size: e(F) = e_max · F / (F + F_half), fitted as 1/e = 1/e_max + (F_half/e_max)/F,
// linear in 1/F, with relative weights.
struct EfficiencyCurve {
  double e_max = 1;
  double f_half = 0;  // FLOPs at which half of e_max is reached
  double rms_relative_error = 0;
  std::vector<double> relative_errors;
  double at(double flops) const { return e_max * flops / (flops + f_half); }
};
EfficiencyCurve fit_efficiency(const std::vector<double>& flops, const std::vector<double>& efficiency);

// GEMM efficiency by shape (GemmShapeModel with the given tile): busy/e = 1/ceiling +
// (k_overhead/ceiling)/K steps, linear in 1/K once the tile's K steps and busy share of each GEMM are
// known, with relative weights.
struct GemmShapePoint {
  double m = 0, n = 0, k = 0, groups = 1, efficiency = 0;
};
struct GemmShapeFit {
  GemmShapeModel model;
  double rms_relative_error = 0;
  std::vector<double> relative_errors;
};
GemmShapeFit fit_gemm_shape(const std::vector<GemmShapePoint>& points, std::int64_t tile_m, std::int64_t tile_n, std::int64_t sms);

// The shape model for one dtype's GEMMs on the profile's tile (128×128 where it has none); none when
// the GEMMs do not span two K values, which the fit needs to tell the K overhead from the ceiling.
std::optional<GemmShapeFit> fit_shape_on_profile_tile(const std::vector<GemmShapePoint>& points, const GpuSpec& gpu, MathDtype dtype);

// The fitted model's figures as a GPU profile holds them (gemm_model.<dtype>, or one of its kernels).
void write_shape_model(Json& node, const GemmShapeModel& s);

}  // namespace plumb
