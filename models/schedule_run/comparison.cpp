#include "models/schedule_run/comparison.hpp"

#include <algorithm>

#include "models/schedules/registry.hpp"

namespace plumb {

std::vector<ScheduleComparison> compare_schedules(std::int64_t pp, std::int64_t microbatches, std::int64_t vp,
                                                  const OpCosts& costs) {
  std::vector<ScheduleComparison> rows;
  for (const auto& [name, kind] : schedule_names()) {
    ScheduleComparison c;
    c.name = name;
    std::int64_t v = schedule_family(kind).interleaves ? vp : 1;
    try {
      PipelineSchedule s = schedule_for(kind, {.ranks = pp, .microbatches = microbatches, .vp = v});
      // A stage holds pp/stages of one rank's share of the model, so its ops cost that much.
      double share = static_cast<double>(pp) / static_cast<double>(s.stages);
      OpCosts scaled = costs;
      scaled.per_stage.assign(static_cast<std::size_t>(s.stages),
                              StageCosts{costs.f * share, costs.b * share, costs.w * share, costs.fb * share});
      ScheduleRun run = run_schedule(s, scaled);
      c.makespan = run.makespan;
      c.bubble = run.max_bubble();
      c.bubble_fraction = run.makespan > 0 ? c.bubble / run.makespan : 0;
      c.span_bubble = run.longest_span_bubble();
      std::int64_t peak = 0;
      for (const RankTiming& t : run.ranks) peak = std::max(peak, t.peak_activations);
      c.peak_activations = static_cast<double>(peak) * share;
      c.params = static_cast<double>(stages_of_rank(kind, 0, pp, v).size()) * share;
    } catch (const ScheduleError& e) {
      c.unavailable = e.what();
    }
    rows.push_back(c);
  }
  return rows;
}

}  // namespace plumb
