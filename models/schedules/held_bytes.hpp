#pragma once
// What a pipeline rank holds over a schedule's op order: activation sets from each forward to its
// backward, and — where a family runs a weight gradient (W) apart from its input-gradient backward — what
// that W still reads, from the backward to the W.
#include <cstdint>
#include <memory>
#include <vector>

#include "models/schedules/pipeline.hpp"

namespace plumb {

// Bytes rank r holds at its peak over the op order of `s`: a forward of model stage k adds activation[k]
// until its backward; an input-gradient backward frees all of it but stash[k], which the stage's W frees.
// Both vectors are indexed by model stage.
double peak_held_bytes(const PipelineSchedule& s, std::int64_t r, const std::vector<double>& activation,
                       const std::vector<double>& stash);
// What the stashes add to rank r's peak: the peak above less the peak of the activation sets alone, in one
// walk.
double stash_peak_increase(const PipelineSchedule& s, std::int64_t r, const std::vector<double>& activation,
                           const std::vector<double>& stash);

// The schedule of `kind` at `shape` with equal op times and deferred W's counted at `stash` of an
// activation set (OpTimes::stash; rounded up to 1/32 where it orders the ops, ignored elsewhere), built
// once per shape in a process and shared: the memory model walks it for every layout the planner tries.
// Throws ScheduleError as schedule_for does.
std::shared_ptr<const PipelineSchedule> equal_time_schedule(ScheduleKind kind, const ScheduleShape& shape, double stash);

}  // namespace plumb
