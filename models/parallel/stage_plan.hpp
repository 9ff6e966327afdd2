#pragma once
// The model stages a pipeline split makes: which transformer layers each holds, and whether it carries
// the embedding, the head or the multi-token-prediction modules.
#include <cstdint>
#include <vector>

#include "models/parallel/layout.hpp"

namespace plumb {

struct StagePlan {
  std::int64_t index = 0;
  std::int64_t first_layer = 0;
  std::int64_t layers = 0;
  bool embedding = false;
  bool head = false;
  std::int64_t mtp_modules = 0;
};
std::vector<StagePlan> stage_plans(const ParallelLayout& layout, std::int64_t mtp_depth);

}  // namespace plumb
