#pragma once
// Checking a pipeline schedule and executing it on the discrete-event engine with per-op costs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/schedules/pipeline.hpp"
#include "sim/engine.hpp"

namespace plumb {

// Costs are in any unit; the engine runs one unit as a microsecond, so six decimals stay exact in
// its integer picoseconds.
inline constexpr double kPicosPerCostUnit = 1e6;

// Costs of one stage's ops in any time unit (the results come back in the same unit). B is the full
// backward; the zero-bubble split runs B − W for the input gradient and W for the weights. F&B is one
// overlapped forward-and-backward pair (DualPipe).
struct StageCosts {
  double f = 1, b = 2, w = 0, fb = 3;
};

// Uniform costs, or per stage and op kind when `per_stage` is given (one row per stage). `p2p` is
// the time from the end of one stage's op to the start of the next stage's on another rank;
// `grad_sync` is DualPipe's reduction of a stage's gradients between its two mirror ranks.
struct OpCosts : StageCosts {
  double p2p = 0;
  double grad_sync = 0;
  std::vector<StageCosts> per_stage;

  // The uniform costs as the schedule families read op times (B split into its input and weight halves).
  OpTimes times() const { return {f, b - w, w, p2p, fb}; }

  double of(OpKind kind, std::int32_t stage) const;
};

// Problems with a schedule, each a sentence naming the op: counts, F before B before W, ranks, and
// whether every dependency can be met (no deadlock).
std::vector<std::string> check_schedule(const PipelineSchedule& s);

// Peak number of micro-batch activation sets alive on each rank: +1 at a forward, −1 when its
// input gradient is done (B, or the input half of a split B).
std::vector<std::int64_t> peak_activations(const PipelineSchedule& s);

// Two bubble conventions, because the papers use both: the DualPipe table counts idle time over the
// whole makespan (`bubble`); Qi et al. count it over each stage's own span, from its first op to its
// last, and quote the longest stage (`span_bubble`). They agree for GPipe, 1F1B and ZB-H1.
struct RankTiming {
  double busy = 0;         // time running ops
  double bubble = 0;       // makespan − busy
  double bubble_fraction = 0;
  double span = 0;         // last op's end − first op's start
  double span_bubble = 0;  // span − busy
  std::int64_t peak_activations = 0;
};

struct ScheduleRun {
  double makespan = 0;
  std::vector<RankTiming> ranks;
  double max_bubble() const;            // the worst rank, DualPipe's convention
  double longest_span_bubble() const;   // the longest stage's span − its busy time, Qi et al.'s convention
  sim::TaskGraph graph;
  sim::Machine machine;
  sim::SimResult result;
  std::vector<std::pair<std::int64_t, std::size_t>> task_op;  // task → (rank, op index); kNone for p2p/sync
};

// One op as it ran: its start and end, in the unit its costs were given in.
struct PlacedOp {
  const PipeOp* op;
  double start, end;
};

// Throws ScheduleError when the schedule cannot run (the deadlock names the ops).
ScheduleRun run_schedule(const PipelineSchedule& s, const OpCosts& costs);

// Each rank's ops with their simulated start and end, in cost units.
std::vector<std::vector<PlacedOp>> placed_ops(const PipelineSchedule& s, const ScheduleRun& run);

// Building a schedule's task graph with any expansion of its ops: the shared part of run_schedule
// and the training step. An op becomes one or more tasks; `OpTasks` says where its forward and
// backward parts take their inputs and deliver their results (the same tasks for a single op).
struct OpTasks {
  sim::TaskId forward_in = sim::kNoTask, forward_out = sim::kNoTask;
  sim::TaskId backward_in = sim::kNoTask, backward_out = sim::kNoTask;
};
struct PipelineHooks {
  virtual ~PipelineHooks() = default;
  // Appends the tasks of `op`, the rank's next op; ops arrive rank by rank in execution order.
  virtual OpTasks add_op(std::int64_t rank, const PipeOp& op) = 0;
  // Tasks carrying one micro-batch's activations (forward) or their gradient from `from_rank` to
  // `to_rank`, as (first, last); nullopt makes it a plain dependency. Called per rank in op order.
  virtual std::optional<std::pair<sim::TaskId, sim::TaskId>> add_send(std::int64_t from_rank, std::int64_t to_rank,
                                                                      StageWork w, bool forward) = 0;
};
// Where each (micro-batch, stage)'s weight gradient finished: the task, per micro-batch × stages + stage.
struct PipelineTasks {
  std::int64_t stages = 0;
  std::vector<sim::TaskId> weight_grad_out;
  sim::TaskId weight_grad(StageWork w) const {
    return weight_grad_out[static_cast<std::size_t>(w.mb) * static_cast<std::size_t>(stages) + static_cast<std::size_t>(w.stage)];
  }
};
PipelineTasks build_pipeline_graph(const PipelineSchedule& s, sim::TaskGraph& g, PipelineHooks& hooks);

}  // namespace plumb
