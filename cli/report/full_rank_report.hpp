#pragma once
// `plumb run --full` output beyond the symmetric step's: the GPUs simulated, the perturbations and what
// they cost, the GPUs that differ most, each EP rank's load and where a failure stalls the step.
#include <string>

#include "models/input/json_reader.hpp"
#include "models/step/full_rank_summary.hpp"

namespace plumb {

Json full_rank_json(const FullRankSummary& f);
std::string full_rank_table(const FullRankSummary& f);

}  // namespace plumb
