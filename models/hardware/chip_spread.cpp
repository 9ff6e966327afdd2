// The pace of a synchronous job over chips that are not alike (the expected slowest of n) and at its
// board power limit.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "models/hardware/hardware.hpp"

namespace plumb {

double expected_max_standard_normal(std::int64_t n) {
  if (n <= 1) return 0.0;
  thread_local std::unordered_map<std::int64_t, double> cache;
  if (auto it = cache.find(n); it != cache.end()) return it->second;
  // E[max] = ∫₀^∞ (1 − Φ(x)ⁿ) dx − ∫_{−∞}^0 Φ(x)ⁿ dx, each by Simpson's rule over 10 standard
  // deviations, where both integrands have vanished for any n a cluster holds.
  const auto cdf_pow = [n](double x) { return std::pow(0.5 * std::erfc(-x / std::sqrt(2.0)), static_cast<double>(n)); };
  const auto simpson = [](auto&& f, double low, double high) {
    constexpr int kSteps = 2000;  // even
    const double h = (high - low) / kSteps;
    double sum = f(low) + f(high);
    for (int i = 1; i < kSteps; ++i) sum += (i % 2 ? 4.0 : 2.0) * f(low + i * h);
    return sum * h / 3.0;
  };
  const double e = simpson([&](double x) { return 1.0 - cdf_pow(x); }, 0.0, 10.0) - simpson(cdf_pow, -10.0, 0.0);
  cache.emplace(n, e);
  return e;
}

std::optional<double> power_clock_scale_at(const GpuSpec& gpu, double watts) {
  if (!gpu.power_limit || !gpu.idle_power || !gpu.power_clock_exponent || watts <= *gpu.idle_power || *gpu.power_limit <= *gpu.idle_power)
    return std::nullopt;
  return std::pow((watts - *gpu.idle_power) / (*gpu.power_limit - *gpu.idle_power), *gpu.power_clock_exponent);
}

void set_job_size(Cluster& c) {
  const double spread = c.chip_spread.value_or(c.gpu.chip_spread);
  c.gpu.slowest_chip_scale = std::max(0.5, 1.0 - spread * expected_max_standard_normal(c.gpus()));
  c.gpu.set_job_power_limit(c.power_limit);
}

void GpuSpec::set_job_power_limit(std::optional<double> cluster_limit) {
  const std::optional<double> limit = job_power_limit(cluster_limit);
  power_clock_scale = limit ? power_clock_scale_at(*this, *limit).value_or(1.0) : 1.0;
}

}  // namespace plumb
