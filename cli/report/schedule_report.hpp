#pragma once
// `plumb schedule` output: the schedule as a rank × time grid like the papers' figures, a colour SVG,
// JSON, and a side-by-side comparison of all schedules.
#include <string>
#include <string_view>

#include "models/input/json_reader.hpp"
#include "models/schedule_run/comparison.hpp"
#include "models/schedules/registry.hpp"
#include "models/schedule_run/pipeline_run.hpp"

namespace plumb {

std::string schedule_grid(const PipelineSchedule& s, const ScheduleRun& run, int max_width = 120);
std::string schedule_svg(const PipelineSchedule& s, const ScheduleRun& run);
// Text made safe inside SVG (XML) elements and attributes.
std::string xml_escape(std::string_view text);
// The same picture from any timing of the schedule's ops: per rank, each op with its start and end.
std::string schedule_svg(const PipelineSchedule& s, const std::vector<std::vector<PlacedOp>>& rows, double makespan,
                         const std::string& title);
Json schedule_json(const PipelineSchedule& s, const ScheduleRun& run);

std::string comparison_table(const std::vector<ScheduleComparison>& rows, std::int64_t pp, std::int64_t microbatches);

}  // namespace plumb
