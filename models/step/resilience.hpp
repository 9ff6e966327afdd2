#pragma once
// Time to train with failures: a synchronous job restarts from its last checkpoint whenever any GPU
// fails. Checkpointing every τ costs the write time δ each time; a failure loses on average τ/2 of
// work plus the restart. Young's first-order optimum τ = √(2δM) for a job MTBF of M (Young 1974,
// "A first order approximation to the optimum checkpoint interval"; Daly 2006 refines it), and the
// share of wall time that is useful work ("goodput") is 1 − δ/τ − (τ/2 + R)/M.
#include <cstdint>

#include "models/spec/training.hpp"

namespace plumb {

struct Resilience {
  double checkpoint_bytes = 0;   // weights, master weights and optimizer moments of the whole model
  double checkpoint_seconds = 0; // δ: writing them at the storage bandwidth
  double job_mtbf_seconds = 0;   // M: 1 / (GPUs × failures per GPU-second)
  double interval_seconds = 0;   // τ: Young's optimum
  double restart_seconds = 0;    // R
  double goodput = 1;            // useful share of wall time
};

// For a model of `params` parameters trained on `gpus` GPUs: reads the training's optimizer state bytes,
// failure rate, checkpoint bandwidth and restart time.
Resilience resilience_of(double params, std::int64_t gpus, const TrainingSpec& training);

}  // namespace plumb
