#pragma once
// What makes some GPUs of a job differ from the others, for the full-rank step (`plumb run --full`):
// a slow GPU (thermal throttling, a bad HBM stack, a noisy neighbour), a degraded network link (a NIC
// that trained down, a flapping port) and a node that fails during the step. The scenario's
// "perturbations" list; the symmetric step ignores them (it has one GPU per pipeline rank).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/input/json_reader.hpp"

namespace plumb {

struct Perturbation {
  std::string what;                 // "gpu 17", "node 3": as written, for the report
  std::vector<std::int64_t> gpus;   // global ranks it touches
  double compute = 1.0;             // compute speed relative to the profile's (0.8: 20% slower)
  double network = 1.0;             // network bandwidth of its GPUs' links relative to the fabric's
  std::optional<double> fails_at;   // seconds into the step at which its GPUs stop for good
};

// The per-GPU result of every perturbation: factors multiply where several touch one GPU; a GPU fails
// at the earliest time any names.
struct GpuCondition {
  double compute = 1.0, network = 1.0;
  std::optional<double> fails_at;
  bool operator==(const GpuCondition&) const = default;
};

// Reads the "perturbations" array at `pointer`; errors (a rank past the job's GPUs, a factor out of
// range, an entry with no effect) go to `src`.
std::vector<Perturbation> read_perturbations(const Json& list, const std::string& pointer, const SourceFile& src,
                                             std::int64_t gpus, std::int64_t gpus_per_node);

// A perturbation from the command line (`plumb run --full`): kind "slow-gpu" with "R=F" (GPU R at F of
// its profile's speed), "slow-link" with "N=F" (node N's links at F of the fabric's bandwidth) or
// "fail-node" with "N@T" (node N stops T into the step, "2s"). Throws std::invalid_argument saying
// what is wrong and what is expected.
Perturbation perturbation_from_flag(std::string_view kind, std::string_view value, std::int64_t gpus, std::int64_t gpus_per_node);

// One condition per global rank (all 1.0 when nothing touches it).
std::vector<GpuCondition> gpu_conditions(const std::vector<Perturbation>& perturbations, std::int64_t gpus);

}  // namespace plumb
