#include "models/parallel/stage_plan.hpp"

namespace plumb {

std::vector<StagePlan> stage_plans(const ParallelLayout& layout, std::int64_t mtp_depth) {
  std::vector<StagePlan> plans;
  std::int64_t first = 0;
  const auto& split = layout.stage_layers;
  for (std::size_t i = 0; i < split.size(); ++i) {
    StagePlan s;
    s.index = static_cast<std::int64_t>(i);
    s.first_layer = first;
    s.layers = split[i];
    s.embedding = i == 0;
    s.head = i + 1 == split.size();
    s.mtp_modules = s.head ? mtp_depth : 0;  // the MTP modules follow the last layer (DeepSeek-V3 §2.2)
    first += split[i];
    plans.push_back(s);
  }
  return plans;
}

}  // namespace plumb
