#pragma once
// A torchtitan training config (the TOML of its train_configs, before its 2026 move to Python
// configs) as a plumb scenario under a torchtitan framework profile: the model flavour, the batch,
// the parallel degrees (FSDP as ZeRO-3), the pipeline schedule, activation checkpointing and float8.
// torchtitan's config does not say how many GPUs run it (its launcher does): --nodes gives them.
#include <string>

#include "validate/imports/scenario_import.hpp"

namespace plumb {

// Throws InputError naming the file and the TOML key for a bad or contradictory value.
ScenarioImport import_torchtitan(const std::string& text, const std::string& file, const ImportOptions& options);

}  // namespace plumb
