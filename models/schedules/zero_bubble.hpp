#pragma once
// Zero-bubble schedules (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): the backward is
// split into its input-gradient half (on the critical path) and its weight-gradient half W, which is
// deferred to fill what would otherwise be idle time.
#include <cstdint>
#include <vector>

#include "models/schedules/pipeline.hpp"

namespace plumb {

struct ZeroBubbleSettings {
  // Qi et al.'s T_F, T_B (input gradient only), T_W and T_comm between neighbouring stages on different ranks.
  OpTimes times;
  // Most activation sets (micro-batch × stage) a rank may hold; empty means unlimited.
  std::vector<std::int64_t> memory_limit;
};

// The automatic heuristic (Qi et al. §3.2): each rank, whenever it is free, runs the input-gradient
// backward that is ready (the latest stage first); otherwise a ready forward if its memory limit
// allows (the latest stage first); otherwise the oldest deferred W; otherwise it waits. The result
// is the order the ranks ran their ops in, as a schedule of `kind` (zb-h1/zb-h2/zb-1p/zb-2p shapes: one
// stage per rank; zb-v: a V of 2·ranks stages).
PipelineSchedule automatic_zero_bubble(ScheduleKind kind, std::int64_t ranks, std::int64_t microbatches,
                                       const ZeroBubbleSettings& settings);

// ZB-H1, ZB-H2 and ZB-V themselves come from schedule_for (models/schedules/registry.hpp): this heuristic
// under each schedule's memory limit (1F1B's p − r for ZB-H1, 2(p − r) − 1 for ZB-H2, 2p half-size chunks
// = p·M_B for ZB-V), at the op times given (what Qi et al. do with profiled times), T_F = T_B = T_W by
// default; deferred W's count against the limit at OpTimes::stash of a set, as the paper's runtime counts
// them (so that, as Qi et al. Table 2 gives, ZB-H1 holds no more than 1F1B). ZB-1p and ZB-2p are placed
// as the runtime places them (zero_bubble_search.hpp), this heuristic only where no placement fits.

}  // namespace plumb
