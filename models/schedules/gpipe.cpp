// GPipe (Huang et al. 2019): every micro-batch's forward, then every backward.
#include "models/schedules/generators.hpp"

namespace plumb {

PipeOp stage_op(OpKind kind, std::int64_t mb, std::int64_t stage) {
  return PipeOp{kind, stage_work(mb, stage), {}, 0};
}

void generate_gpipe(PipelineSchedule& s, const OpTimes&) {
  for (std::int64_t r = 0; r < s.ranks; ++r) {
    auto& ops = s.ops[static_cast<std::size_t>(r)];
    for (std::int64_t mb = 0; mb < s.microbatches; ++mb) ops.push_back(stage_op(OpKind::forward, mb, r));
    for (std::int64_t mb = 0; mb < s.microbatches; ++mb) ops.push_back(stage_op(OpKind::backward, mb, r));
  }
}

}  // namespace plumb
