#pragma once
// `plumb compare`: plumb's prediction of the same shrunk single-GPU run that `plumb-validate run`
// measured — step time, each rank's busy time and bubble, each op's time per pass — beside the
// measurement, with the error.
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/hardware.hpp"
#include "models/input/json_reader.hpp"
#include "validate/run/measured_run.hpp"

namespace plumb {

struct RankComparison {
  double measured_busy = 0, predicted_busy = 0;      // seconds of the step the rank ran ops
  double measured_bubble = 0, predicted_bubble = 0;  // idle share of the step
  // The rank's ops as measured over the same ops as predicted (each op's median × its runs a step):
  // how far its kernels ran from the profile's prices, whatever the schedule did.
  double op_time_ratio = 1;
};

struct OpComparison {
  std::string op;
  int pass = 0;
  double measured = 0, predicted = 0;  // seconds per run
  double runs_per_step = 0;
  std::string kind;  // "GEMM", "attention" or "memory-bound": the cost term that prices it
};

// Per kind of op, the seconds per step the ops of that kind took, summed over all ranks: which of
// the profile's terms (GEMM efficiency, attention efficiency, HBM efficiency) is off, and by how much.
struct KindComparison {
  std::string kind;
  double measured = 0, predicted = 0;
};

struct Comparison {
  std::string title;  // what ran where
  std::string profile;  // the GPU profile predicted with
  double measured_step = 0, predicted_step = 0;
  // The miss split in two: the ops' own times (all ranks' measured op time over predicted), and the
  // step plumb predicts when each rank's compute is scaled by its own ratio — what the schedule,
  // dependencies and communication model make of the run's own op times. A bench and a run minutes
  // apart on a machine whose speed drifts (a shared VM, a GPU's clock) miss by the first; a wrong
  // schedule model misses by the second.
  double op_time_ratio = 1;
  double predicted_step_at_measured_ops = 0;
  std::vector<RankComparison> ranks;
  std::vector<OpComparison> ops;
  std::vector<KindComparison> kinds;
  // The executed order of every rank's ops against the simulated one (both from the same schedule):
  // "" when they agree op for op, else where they first part.
  std::int64_t ops_executed = 0;
  std::string order_difference;
  double error() const { return predicted_step / measured_step - 1; }
  double error_at_measured_ops() const { return predicted_step_at_measured_ops / measured_step - 1; }
};

// Predicts with `gpu` when given (a calibrated profile), else with the bundled profile of the device
// the run was measured on; from `scenario` when given, else the scenario the file names (a relative
// path found from the current folder or under plumb's data folder). Throws InputError when there is
// no profile, the scenario cannot shrink, or the run was not measured from it.
Comparison compare_measured_run(const MeasuredFile& measured, const std::optional<GpuSpec>& gpu = std::nullopt,
                                const std::string& scenario = "");

}  // namespace plumb
