#pragma once
// A Megatron-LM launch (a script or an argument list) as a plumb scenario: the parallel layout, the
// model's shape, the batch, precision, recomputation and overlap flags become scenario fields under
// the Megatron framework profile; the launcher's --nnodes / --nproc-per-node (torchrun) give the
// cluster size. Every flag is accounted for: those that set a field, those known not to change what
// plumb models (data paths, logging, learning rate…), and unknown ones, which are listed, never
// silently dropped. Contradictory flags are errors naming the flag.
#include <string>
#include <vector>

#include "validate/imports/scenario_import.hpp"

namespace plumb {

// Throws InputError naming the file and the flag (with its position) for a bad value or a contradiction.
ScenarioImport import_megatron(const std::string& text, const std::string& file, const ImportOptions& options);

}  // namespace plumb
