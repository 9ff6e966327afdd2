// Megatron-LM's interleaved 1F1B: micro-batches go through the rank's v chunks in groups of p;
// warm-up is 2(p−r−1) + (v−1)p forwards (Narayanan et al. 2021 §2.2; Megatron schedules.py).
#include <algorithm>

#include "models/schedules/generators.hpp"

namespace plumb {

void generate_interleaved(PipelineSchedule& s, const OpTimes&) {
  const std::int64_t p = s.ranks, v = s.vp, total = s.microbatches * v;
  auto mb_of = [&](std::int64_t k) { return (k / (p * v)) * p + k % p; };
  for (std::int64_t r = 0; r < p; ++r) {
    auto& ops = s.ops[static_cast<std::size_t>(r)];
    auto forward = [&](std::int64_t k) { ops.push_back(stage_op(OpKind::forward, mb_of(k), ((k / p) % v) * p + r)); };
    auto backward = [&](std::int64_t k) { ops.push_back(stage_op(OpKind::backward, mb_of(k), (v - 1 - (k / p) % v) * p + r)); };
    std::int64_t warm = std::min(2 * (p - r - 1) + (v - 1) * p, total);
    for (std::int64_t k = 0; k < warm; ++k) forward(k);
    for (std::int64_t i = 0; i < total - warm; ++i) {
      forward(warm + i);
      backward(i);
    }
    for (std::int64_t k = total - warm; k < total; ++k) backward(k);
  }
}

}  // namespace plumb
