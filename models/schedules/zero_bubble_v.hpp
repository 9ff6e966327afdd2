#pragma once
// ZB-V as the Zero Bubble authors' runtime places it (Qi et al., ICLR 2024, §6): each rank holds two
// chunks, the model's stage r going down the ranks and stage 2p−1−r coming back; a warm-up of forwards
// shaped like a V, then per round every rank's next backward and forward at the profiled op times, the
// deferred weight gradients (W) put where memory forces them, where they fill a gap, or where the gap
// would make this rank's bubble the largest; four variants, each retried against its own bubbles, the
// smallest largest-rank bubble kept. Plumb's own code for the placement of
// sail-sg/zero-bubble-pipeline-parallelism f68d3879, megatron/core/pipeline_parallel/v_schedule.py
// (PipelineGraph.try_v_schedule, get_v_schedule).
#include <cstdint>
#include <optional>
#include <vector>

#include "models/schedules/pipeline.hpp"

namespace plumb {

// Each rank's ops in order for `ranks` ranks (2·ranks model stages in a V) and `microbatches` micro-batches
// at the per-chunk `times` (OpTimes::stash: what a deferred W keeps, of a chunk's activation set), holding
// at most `limit` chunk activation sets on any rank; nullopt when no variant fits the limit.
std::optional<std::vector<std::vector<PipeOp>>> zero_bubble_v_placement(std::int64_t ranks, std::int64_t microbatches,
                                                                          const OpTimes& times, double limit);

}  // namespace plumb
