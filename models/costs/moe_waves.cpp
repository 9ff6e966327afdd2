#include "models/costs/moe_waves.hpp"

#include <algorithm>
#include <cmath>

namespace plumb {

WavePlan wave_plan(double pairs_per_rank, std::int64_t experts_per_rank, std::int64_t expert_ffn, std::int64_t sms) {
  WavePlan w;
  const std::int64_t experts = std::max<std::int64_t>(1, experts_per_rank);
  w.tokens_per_expert = pairs_per_rank / static_cast<double>(experts);
  const double e = w.tokens_per_expert;
  w.block_m = e <= 8.5 ? 16 : e <= 16.5 ? 32 : e <= 32.5 ? 64 : e <= 64.5 ? 96 : e <= 96.5 ? 128 : 192;
  if (e < 1.0) {
    w.experts_per_wave = experts;
  } else {
    const double tiles = std::ceil(std::ceil(e) / static_cast<double>(w.block_m)) * (2.0 * static_cast<double>(expert_ffn) / 128.0);
    std::int64_t per_wave = static_cast<std::int64_t>(std::ceil(2.0 * static_cast<double>(sms) / tiles));
    per_wave = std::clamp<std::int64_t>(per_wave, 1, experts);
    while (experts % per_wave != 0) ++per_wave;
    w.experts_per_wave = per_wave;
  }
  w.waves = experts / w.experts_per_wave;
  return w;
}

double WavePipeline::total() const {
  const double n = static_cast<double>(std::max<std::int64_t>(1, waves));
  const double d = dispatch / n, g = compute / n, c = combine / n;
  return d + g + c + (n - 1.0) * std::max({d, g, c}) + fixed + std::max(reduction, end_barrier);
}

double reduction_floor(double top_k) {
  return kMegaMoeFirstCopySeconds + std::max(0.0, top_k - 1.0) * kSm100TmaLoadLatencySeconds;
}

std::array<double, 3> separate_path_memory_bytes(double tokens, double top_k, double ranks_reached, double hidden,
                                                 double expert_ffn, bool fp8) {
  const double low = fp8 ? 1.0 + 1.0 / 32.0 : 2.0;  // bytes an element of the GEMMs' inputs, scales included
  const double copies = tokens * top_k;             // expert slots a rank fills (balanced routing)
  return {(tokens * ranks_reached + copies) * hidden * low, copies * expert_ffn * (2.0 * 2.0 + low),
          (copies + tokens) * hidden * 2.0};
}

}  // namespace plumb
