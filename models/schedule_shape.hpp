#pragma once
// What the memory model and layout checks need to know about a pipeline schedule: how the model is
// cut into stages, which stages a rank holds, how many micro-batches' activations it keeps alive at
// its peak, and the schedule's constraints. The op-by-op generators live with the schedules.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace plumb {

enum class ScheduleKind { gpipe, one_f_one_b, interleaved, zb_h1, zb_h2, zb_v, dualpipe, dualpipe_v };

std::string_view schedule_name(ScheduleKind s);
const std::vector<std::pair<std::string, ScheduleKind>>& schedule_names();

// Model stages: pp for GPipe/1F1B/ZB-H1/ZB-H2 and DualPipe (each DualPipe rank holds two of them),
// pp·vp for interleaved, 2·pp for the V-shaped ZB-V and DualPipeV.
std::int64_t stage_count(ScheduleKind s, std::int64_t pp, std::int64_t vp);

// Stages held by pipeline rank r, in the order the rank runs them first.
std::vector<std::int64_t> stages_of_rank(ScheduleKind s, std::int64_t r, std::int64_t pp, std::int64_t vp);

// Peak number of (micro-batch, stage) activation sets alive on rank r, for m micro-batches.
//   GPipe m; 1F1B and ZB-H1 p−r (Narayanan et al. SC'21; Qi et al. Table);
//   interleaved 2(p−r−1) + (v−1)p + 1 (Megatron's warm-up plus the first steady forward; for r = 0
//   this is p·v·(1 + (p−1)/(pv)), Korthikanti et al. §4.2.3);
//   ZB-H2 2(p−r)−1 (Qi et al.: (2p−1)·M_B on the first worker);
//   ZB-V 2p chunks = p·M_B (Qi et al.); DualPipe PP+1 and DualPipeV PP+1 with PP = 2·pp stages
//   (DualPipe README table). Never more than m times the stages the rank holds.
double peak_inflight_stage_microbatches(ScheduleKind s, std::int64_t r, std::int64_t pp, std::int64_t vp,
                                        std::int64_t m);

// A violated constraint of a schedule: the sentence (with the numbers) and the /parallel field it
// concerns ("pp", "vp", or "micro_batch" when the micro-batch count m is at fault).
struct ScheduleViolation {
  std::string field;
  std::string message;
};
std::vector<ScheduleViolation> schedule_constraint_violations(ScheduleKind s, std::int64_t pp, std::int64_t vp,
                                                              std::int64_t m);

}  // namespace plumb
