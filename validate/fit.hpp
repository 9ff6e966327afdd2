#pragma once
// Least-squares fits (Eigen) of plumb's cost terms to measurements.
#include <vector>

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

}  // namespace plumb
