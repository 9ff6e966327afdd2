#pragma once
// `plumb schedule` output: the schedule as a rank × time grid like the papers' figures, a colour SVG,
// JSON, and a side-by-side comparison of all schedules.
#include <string>
#include <string_view>

#include "models/json_reader.hpp"
#include "models/pipeline_run.hpp"

namespace plumb {

std::string schedule_grid(const PipelineSchedule& s, const ScheduleRun& run, int max_width = 120);
std::string schedule_svg(const PipelineSchedule& s, const ScheduleRun& run);
// Text made safe inside SVG (XML) elements and attributes.
std::string xml_escape(std::string_view text);
// The same picture from any timing of the schedule's ops: per rank, each op with its start and end.
struct PlacedOp {
  const PipeOp* op;
  double start, end;
};
std::string schedule_svg(const PipelineSchedule& s, const std::vector<std::vector<PlacedOp>>& rows, double makespan,
                         const std::string& title);
Json schedule_json(const PipelineSchedule& s, const ScheduleRun& run);

// Every schedule on the same devices and model: per-op costs are for one rank's share of the model
// (1/pp of it); a schedule that cuts the model finer pays proportionally less per op.
struct ScheduleComparison {
  std::string name;
  std::string unavailable;  // why it cannot run with these numbers, else empty
  double makespan = 0, bubble = 0, bubble_fraction = 0, span_bubble = 0;
  double peak_activations = 0;  // in 1F1B-stage micro-batch units (one rank's share of the layers)
  double params = 0;            // per device, relative to 1F1B
};
std::vector<ScheduleComparison> compare_schedules(std::int64_t pp, std::int64_t microbatches, std::int64_t vp,
                                                  const OpCosts& costs);
std::string comparison_table(const std::vector<ScheduleComparison>& rows, std::int64_t pp, std::int64_t microbatches);

}  // namespace plumb
