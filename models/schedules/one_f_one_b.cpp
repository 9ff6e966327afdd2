// 1F1B (PipeDream-flush; Narayanan et al. 2021): p−r−1 warm-up forwards, then one forward and one
// backward in turn, then the remaining backwards.
#include <algorithm>

#include "models/schedules/generators.hpp"

namespace plumb {

void generate_one_f_one_b(PipelineSchedule& s, const OpTimes&) {
  for (std::int64_t r = 0; r < s.ranks; ++r) {
    auto& ops = s.ops[static_cast<std::size_t>(r)];
    std::int64_t warm = std::min(s.ranks - r - 1, s.microbatches);
    for (std::int64_t mb = 0; mb < warm; ++mb) ops.push_back(stage_op(OpKind::forward, mb, r));
    for (std::int64_t i = 0; i < s.microbatches - warm; ++i) {
      ops.push_back(stage_op(OpKind::forward, warm + i, r));
      ops.push_back(stage_op(OpKind::backward, i, r));
    }
    for (std::int64_t mb = s.microbatches - warm; mb < s.microbatches; ++mb) ops.push_back(stage_op(OpKind::backward, mb, r));
  }
}

}  // namespace plumb
