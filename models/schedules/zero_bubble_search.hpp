#pragma once
// The Zero Bubble paper's own placement of F, B and W (Qi et al., ICLR 2024, §3.2) as its authors' runtime
// runs it for ZB-1p and ZB-2p: a stage-by-stage, micro-batch-by-micro-batch placement at the profiled op
// times under a memory limit, tried in eight variants, the shortest longest-stage span kept. (The runtime
// has an ILP refinement too, switched off: sail-sg/zero-bubble-pipeline-parallelism f68d3879,
// auto_schedule.py, auto_schedule().)
#include <cstdint>
#include <optional>
#include <vector>

#include "models/schedules/pipeline.hpp"

namespace plumb {

// Each stage's ops in order (stage r on rank r), for `stages` stages and `microbatches` micro-batches at
// `times` (OpTimes::stash: what a deferred W keeps, of an activation set), with at most `limit`
// activation sets' worth held on any stage; nullopt when no variant fits the limit.
std::optional<std::vector<std::vector<PipeOp>>> zero_bubble_search(std::int64_t stages, std::int64_t microbatches,
                                                                     const OpTimes& times, double limit);

}  // namespace plumb
