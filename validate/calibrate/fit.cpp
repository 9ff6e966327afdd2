#include "validate/calibrate/fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace plumb {
namespace {

// Weighted linear least squares y ≈ a + b·x with weights w (QR, so ill-conditioned sizes stay stable).
Eigen::Vector2d solve(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& w) {
  const auto n = static_cast<Eigen::Index>(x.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    a(i, 0) = w[k];
    a(i, 1) = w[k] * x[k];
    b(i) = w[k] * y[k];
  }
  return a.colPivHouseholderQr().solve(b);
}

double rms(const std::vector<double>& e) {
  double s = 0;
  for (double v : e) s += v * v;
  return e.empty() ? 0.0 : std::sqrt(s / static_cast<double>(e.size()));
}

}  // namespace

AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t) {
  if (x.size() != t.size() || x.size() < 2) throw std::invalid_argument("an α-β fit needs at least two points");
  std::vector<double> w;
  for (double v : t) w.push_back(1.0 / v);
  Eigen::Vector2d p = solve(x, t, w);
  AlphaBeta f;
  f.alpha = p(0);
  f.beta = p(1);
  for (std::size_t i = 0; i < x.size(); ++i) f.relative_errors.push_back((f.alpha + x[i] * f.beta - t[i]) / t[i]);
  f.rms_relative_error = rms(f.relative_errors);
  return f;
}

namespace {

// y = a + b/x fitted as a line in 1/x, weighted for the relative error of y.
Eigen::Vector2d solve_reciprocal(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> inv_x, w;
  for (std::size_t i = 0; i < x.size(); ++i) {
    inv_x.push_back(1.0 / x[i]);
    w.push_back(1.0 / y[i]);
  }
  return solve(inv_x, y, w);
}

}  // namespace

EfficiencyCurve fit_efficiency(const std::vector<double>& flops, const std::vector<double>& efficiency) {
  if (flops.size() != efficiency.size() || flops.size() < 2) throw std::invalid_argument("an efficiency fit needs at least two points");
  std::vector<double> inv_e;
  for (double e : efficiency) inv_e.push_back(1.0 / e);
  Eigen::Vector2d p = solve_reciprocal(flops, inv_e);
  EfficiencyCurve c;
  c.e_max = 1.0 / p(0);
  c.f_half = p(1) * c.e_max;
  for (std::size_t i = 0; i < flops.size(); ++i) c.relative_errors.push_back((c.at(flops[i]) - efficiency[i]) / efficiency[i]);
  c.rms_relative_error = rms(c.relative_errors);
  return c;
}

GemmShapeFit fit_gemm_shape(const std::vector<GemmShapePoint>& points, std::int64_t tile_m, std::int64_t tile_n, std::int64_t sms) {
  if (points.size() < 2) throw std::invalid_argument("a GEMM shape fit needs at least two points");
  GemmShapeFit f;
  f.model.tile_m = tile_m;
  f.model.tile_n = tile_n;
  std::vector<double> k_steps, y;
  for (const GemmShapePoint& g : points) {
    GemmShapeModel::Tiling t = f.model.tiling(g.m, g.n, g.k, g.groups, sms);
    k_steps.push_back(t.k_steps);
    y.push_back(t.busy / g.efficiency);
  }
  Eigen::Vector2d p = solve_reciprocal(k_steps, y);
  f.model.ceiling = std::min(1.0, 1.0 / p(0));
  f.model.k_overhead = std::max(0.0, p(1) / p(0));
  for (const GemmShapePoint& g : points) {
    double e = f.model.efficiency(g.m, g.n, g.k, g.groups, sms);
    f.relative_errors.push_back((e - g.efficiency) / g.efficiency);
  }
  f.rms_relative_error = rms(f.relative_errors);
  return f;
}

std::optional<GemmShapeFit> fit_shape_on_profile_tile(const std::vector<GemmShapePoint>& points, const GpuSpec& gpu, MathDtype dtype) {
  GemmShapeModel tile;
  if (auto it = gpu.gemm_model.find(dtype); it != gpu.gemm_model.end()) tile = it->second;
  std::set<double> ks;
  for (const GemmShapePoint& p : points) ks.insert(tile.tiling(p.m, p.n, p.k, p.groups, gpu.sms).k_steps);
  if (ks.size() < 2) return std::nullopt;
  return fit_gemm_shape(points, tile.tile_m, tile.tile_n, gpu.sms);
}

void write_shape_model(Json& node, const GemmShapeModel& s) {
  node["ceiling"] = std::round(s.ceiling * 1000) / 1000;
  node["k_overhead"] = std::round(s.k_overhead);
  node["tile"] = {s.tile_m, s.tile_n};
}

}  // namespace plumb
