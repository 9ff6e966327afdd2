#pragma once
// One optimizer step as a task graph on the discrete-event engine: the job's pipeline schedule with
// every op expanded into its compute and communication segments (step_costs), pipeline sends, the
// gradient reduction of each stage once its last weight gradient is done, the optimizer, and ZeRO's
// parameter gathers. Symmetric mode: one GPU per pipeline rank stands for all its TP/DP/EP peers,
// whose collectives are already costed with every peer's traffic. Full mode: every GPU of the job,
// each collective a barrier over its group's members (so a straggler holds the others back), and
// with sampled routing each EP rank's experts at its own load.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "models/scenario/job.hpp"
#include "models/schedule_run/pipeline_run.hpp"
#include "models/costs/step_costs.hpp"
#include "models/step/fabric_congestion.hpp"
#include "sim/engine.hpp"
#include "sim/failure.hpp"

namespace plumb {

// Where one pipeline rank's time went: computing, waiting on communication of each kind with nothing
// to compute (exposed), and idle with neither (the pipeline bubble).
struct RankStep {
  double compute = 0;
  std::array<double, kCommKinds> exposed{};
  double idle = 0;
  double bubble_fraction = 0;  // idle / step time
  double peak_bytes = 0;       // model states and overheads + the timeline's peak activations
  std::int64_t peak_inflight = 0;
};

struct StepSimulation {
  double step_time = 0;
  bool full = false;
  std::int64_t job_gpus = 0;   // the GPUs the step stands for
  int class_rounds = 0;        // full mode: colour-refinement rounds until the classes of alike GPUs settled
  std::vector<RankStep> ranks;  // per pipeline rank (full mode: the mean over its GPUs; memory the most)
  PipelineSchedule schedule;
  sim::TaskGraph graph;
  sim::Machine machine;
  sim::SimResult result;
  std::vector<std::int8_t> task_comm;    // per task: the CommKind, or −1 for compute and markers
  std::vector<std::int32_t> task_gpu;    // per task: the machine GPU it runs on
  std::vector<std::int32_t> gpu_pp;      // per machine GPU: its pipeline rank
  std::vector<std::int32_t> gpu_rank;    // per machine GPU: the global rank it simulates (symmetric: its pipeline rank)
  std::vector<std::int64_t> gpu_count;   // per machine GPU: how many of the job's GPUs run alike with it
  std::vector<std::int32_t> gpu_ep;      // full mode, per machine GPU: its expert-parallel rank
  std::vector<GpuCondition> gpu_condition;  // per machine GPU: its speed, links and failure (perturbations)
  std::vector<double> ep_load;           // full mode with sampled routing: per EP rank, its busiest expert's load / mean
  std::vector<RankStep> gpu_steps;       // per machine GPU: where its time went (memory: its own peak activations)
  // Full mode with a GPU that fails during the step: per machine GPU, where it stops (sim/failure); the
  // step itself is the one simulated as if nothing failed. Empty when nothing fails.
  std::vector<sim::Stall> stalls;
  FabricShares fabric;  // full mode: what the fabric's switches left each kind of collective (no per-rank shares)
  // Per pipeline rank (of the first replica in full mode), per schedule op: its tasks, [first, last).
  std::vector<std::vector<std::pair<sim::TaskId, sim::TaskId>>> op_tasks;
};

// symmetric: one GPU per pipeline rank. full: every GPU of the job, each collective a barrier, the
// scenario's perturbations applied; GPUs that run alike (an equitable partition, models/step/full_rank)
// simulated once. every_gpu: full, with every GPU simulated (to check the classes).
enum class StepMode { symmetric, full, every_gpu };

// Throws ScheduleError when the job's schedule cannot be built for its pipeline.
StepSimulation simulate_step(const Job& job, const StepCosts& costs, StepMode mode = StepMode::symmetric);

// Fills `ranks` from the timeline: per GPU its compute, exposed communication and idle time, averaged
// per pipeline rank; the timeline's peak activation bytes per pipeline rank (the most over its GPUs).
void account_step(StepSimulation& s);

// The chain of work that set the step time, in a few lines: runs of tasks on one rank, with their
// time by kind.
std::vector<std::string> critical_path_summary(const StepSimulation& s);

// Each rank's schedule ops with when they ran (seconds): first task start to last task end.
std::vector<std::vector<PlacedOp>> placed_step_ops(const StepSimulation& s);

// One rank's step split by what its schedule was running, as DeepSeek report DualPipe's step
// ("Insights into DeepSeek-V3", ISCA 2025, arXiv 2505.09343, Table 4: forward, input backward, weight
// backward, overlapped 1F1B, bubble, optimizer). An op counts from its first task's start to its last
// task's end, its communication included, less any stretch inside that span where the GPU ran nothing
// (waiting for a neighbour's activations or gradients: bubble); where an op's tail runs under the next
// op it counts once.
struct RankPhases {
  static constexpr std::size_t kKinds = kOpKinds;
  std::array<double, kKinds> seconds{};
  std::array<std::int64_t, kKinds> count{};
  double before = 0;   // from the step's start to the first op: ZeRO's parameter gathers
  double waiting = 0;  // between ops, or inside one with the GPU idle: the pipeline bubble
  double after = 0;    // from the last op's end to the step's end: gradient reduction and the optimizer
  double total() const;
};
std::vector<RankPhases> rank_phases(const StepSimulation& s);

}  // namespace plumb
