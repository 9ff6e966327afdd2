#include "models/schedules/schedule_shape.hpp"

namespace plumb {

std::int64_t stage_count(StageLayout layout, std::int64_t pp, std::int64_t vp) {
  switch (layout) {
    case StageLayout::round_robin: return pp * vp;
    case StageLayout::v_shape: return 2 * pp;
    case StageLayout::straight:
    case StageLayout::mirrored: return pp;
  }
  return pp;
}

std::vector<std::int64_t> stages_of_rank(StageLayout layout, std::int64_t r, std::int64_t pp, std::int64_t vp) {
  switch (layout) {
    case StageLayout::round_robin: {
      std::vector<std::int64_t> stages;
      for (std::int64_t k = 0; k < vp; ++k) stages.push_back(r + k * pp);
      return stages;
    }
    case StageLayout::v_shape: return {r, 2 * pp - 1 - r};
    case StageLayout::mirrored: return {r, pp - 1 - r};
    case StageLayout::straight: return {r};
  }
  return {r};
}

int stage_direction(StageLayout layout, std::int64_t stage, std::int64_t mb, std::int64_t ranks, std::int64_t microbatches) {
  switch (layout) {
    case StageLayout::mirrored: return mb < microbatches / 2 ? 0 : 1;
    case StageLayout::v_shape: return stage < ranks ? 0 : 1;
    case StageLayout::straight:
    case StageLayout::round_robin: return 0;
  }
  return 0;
}

std::int64_t rank_of_stage(StageLayout layout, std::int64_t stage, std::int64_t mb, std::int64_t ranks,
                           std::int64_t microbatches) {
  switch (layout) {
    case StageLayout::round_robin: return stage % ranks;
    case StageLayout::v_shape: return stage < ranks ? stage : 2 * ranks - 1 - stage;
    case StageLayout::mirrored:
      return stage_direction(layout, stage, mb, ranks, microbatches) == 0 ? stage : ranks - 1 - stage;
    case StageLayout::straight: return stage;
  }
  return stage;
}

}  // namespace plumb
