#pragma once
// The one place each pipeline schedule family is described: its name, how it places stages on ranks,
// its generator, its peak activations and constraints, its closed-form bubble, and what it needs of the
// ops (virtual stages, a split backward, overlapped pairs, op times). Every caller — the simulated step,
// the analytic memory, `plumb schedule`, the reports and the validation run — gets a schedule from
// schedule_for, so a measured and a predicted run of one job execute the same op order.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/schedules/pipeline.hpp"

namespace plumb {

// How a closed-form bubble is counted: idle time over the whole makespan on the worst rank (the
// DualPipe table's), or over each stage's own span on the longest stage (Qi et al. §5.3).
enum class BubbleConvention { makespan, span };

struct ScheduleFamily {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  std::string_view name;     // as scenario files and --schedule write it
  StageLayout layout = StageLayout::straight;
  std::string_view source;   // where the schedule is published
  bool interleaves = false;          // runs vp ≥ 2 virtual stages per rank (others need vp 1)
  bool splits_backward = false;      // runs some weight gradients (W) apart from their backward
  bool overlaps_pairs = false;       // runs overlapped forward-and-backward pairs (F&B)
  bool orders_by_op_times = false;   // its op order depends on the op times (the zero-bubble heuristic)
  void (*generate)(PipelineSchedule& s, const OpTimes& times) = nullptr;
  // Peak (micro-batch, stage) activation sets alive on rank r, before the m × stages-held cap.
  std::int64_t (*peak_inflight)(std::int64_t r, const ScheduleShape& shape) = nullptr;
  // The memory limit a zero-bubble placement works under on rank r, in activation sets, where it is not
  // the peak above (ZB-1p and ZB-2p: p and 2p on every rank, which not every rank reaches); null: the peak.
  std::int64_t (*heuristic_limit)(std::int64_t r, const ScheduleShape& shape) = nullptr;
  // How that peak splits over the stages the rank holds (in stages_of_rank's order), capped at m each;
  // null for one stage per rank.
  std::vector<double> (*inflight_split)(std::int64_t r, const ScheduleShape& shape) = nullptr;
  // The family's own constraints on (pp, vp, m), beyond every schedule's vp rule.
  void (*constraints)(const ScheduleShape& shape, std::vector<ScheduleViolation>& out) = nullptr;
  // The published bubble in op-time units (each op one stage's work), nullopt where none is published
  // for these times; counted as `convention` says.
  std::optional<double> (*bubble)(const ScheduleShape& shape, const OpTimes& times) = nullptr;
  BubbleConvention convention = BubbleConvention::makespan;
};

// Every family, in the order plumb lists them.
const std::vector<ScheduleFamily>& schedule_families();
const ScheduleFamily& schedule_family(ScheduleKind kind);

std::string_view schedule_name(ScheduleKind s);
const std::vector<std::pair<std::string, ScheduleKind>>& schedule_names();

// The stage geometry of a family (its StageLayout's).
std::int64_t stage_count(ScheduleKind s, std::int64_t pp, std::int64_t vp);
std::vector<std::int64_t> stages_of_rank(ScheduleKind s, std::int64_t r, std::int64_t pp, std::int64_t vp);

// Peak number of (micro-batch, stage) activation sets alive on rank r, for m micro-batches.
//   GPipe m; 1F1B and ZB-H1 p−r (Narayanan et al. SC'21; Qi et al. Table);
//   interleaved 2(p−r−1) + (v−1)p + 1 (Megatron's warm-up plus the first steady forward; for r = 0
//   this is p·v·(1 + (p−1)/(pv)), Korthikanti et al. §4.2.3);
//   ZB-H2 2(p−r)−1 (Qi et al.: (2p−1)·M_B on the first worker);
//   ZB-V 2p chunks = p·M_B (Qi et al.); DualPipe PP+1 and DualPipeV PP+1 with PP = 2·pp stages
//   (DualPipe README table); ZB-1p p and ZB-2p 2p on every rank (their memory limits, Qi et al. §5.1).
//   Never more than m times the stages the rank holds.
double peak_inflight_stage_microbatches(ScheduleKind s, std::int64_t r, const ScheduleShape& shape);

// Peak in-flight micro-batches per stage held by rank r, aligned with stages_of_rank.
std::vector<double> inflight_per_stage(ScheduleKind s, std::int64_t r, const ScheduleShape& shape);

// Its family's constraints, and the size limit below (reported against "micro_batch").
std::vector<ScheduleViolation> schedule_constraint_violations(ScheduleKind s, const ScheduleShape& shape);

// Pipeline ops a schedule of `kind` holds at `shape` (F and B per micro-batch and stage, W where the
// family splits it off), counted without building it; and the most plumb builds for one step.
double schedule_op_estimate(ScheduleKind kind, const ScheduleShape& shape);
inline constexpr double kMaxScheduleOps = 4e6;

// The schedule of `kind` at `shape`, its ops ordered for `op_times` where the family's order depends on
// them (equal times by default). Throws ScheduleError naming the first violated constraint.
PipelineSchedule schedule_for(ScheduleKind kind, const ScheduleShape& shape, const OpTimes& op_times = {});

}  // namespace plumb
