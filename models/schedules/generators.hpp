#pragma once
// The generators of the schedule families, one file each, called only through the registry
// (schedule_for), which has already sized `s` (kind, layout, ranks, stages, micro-batches, vp) and
// checked the family's constraints. Each appends every rank's ops in execution order.
#include "models/schedules/pipeline.hpp"

namespace plumb {

// One forward or backward op of micro-batch `mb` on model stage `stage`.
PipeOp stage_op(OpKind kind, std::int64_t mb, std::int64_t stage);

void generate_gpipe(PipelineSchedule& s, const OpTimes& times);
void generate_one_f_one_b(PipelineSchedule& s, const OpTimes& times);
void generate_interleaved(PipelineSchedule& s, const OpTimes& times);
void generate_zero_bubble(PipelineSchedule& s, const OpTimes& times);  // the greedy heuristic: ZB-H1/H2/V's fallback
void generate_zero_bubble_hand(PipelineSchedule& s, const OpTimes& times);  // ZB-H1, ZB-H2
void generate_zero_bubble_search(PipelineSchedule& s, const OpTimes& times);  // ZB-1p, ZB-2p
void generate_zero_bubble_v(PipelineSchedule& s, const OpTimes& times);       // ZB-V
// The most activation sets rank r holds over the zero-bubble heuristic's schedule at equal times (no
// stash counted): the peak of the families whose limit it need not reach on every rank (ZB-1p, ZB-2p).
std::int64_t equal_time_peak_inflight(ScheduleKind kind, std::int64_t r, const ScheduleShape& shape);
void generate_dualpipe(PipelineSchedule& s, const OpTimes& times);     // DualPipe, DualPipeV

}  // namespace plumb
