#include "models/schedules/pipeline.hpp"

namespace plumb {

std::string_view op_kind_symbol(OpKind k) {
  switch (k) {
    case OpKind::forward: return "F";
    case OpKind::backward: return "B";
    case OpKind::backward_input: return "b";
    case OpKind::weight: return "W";
    case OpKind::forward_backward: return "FB";
  }
  return "?";
}

std::int64_t PipelineSchedule::rank_of(StageWork w) const {
  return rank_of_stage(layout, w.stage, w.mb, ranks, microbatches);
}

int PipelineSchedule::direction(StageWork w) const { return stage_direction(layout, w.stage, w.mb, ranks, microbatches); }

}  // namespace plumb
