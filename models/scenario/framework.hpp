#pragma once
// The software stack that ran a job, as an input: a framework profile (frameworks/, e.g.
// "megatron-lm-2021", "torchtitan-2024-12") holds that framework's defaults at that version — the
// scenario keys it decides (pipeline-send and gradient-reduce overlap, sequence parallelism, attention
// kernel, gradient accumulation, ...), each with its source in the framework's code or docs. A scenario
// that names a framework takes every such key it does not set itself from the profile.
#include <map>
#include <string>
#include <vector>

#include "models/input/json_reader.hpp"

namespace plumb {

struct Framework {
  std::string id;    // as the scenario named it; empty when the scenario names none
  std::string name;  // display name
  std::vector<std::string> applied;  // "parallel.overlap_p2p=false": the defaults the scenario took
  std::map<std::string, std::string> sources;  // "parallel.overlap_p2p" → where that default is read from
};

// Reads the scenario's "framework" (a catalogue name, a path or an inline object, which may start from
// another with "base") and writes its defaults into `doc` where the scenario is silent. Errors in a
// value the framework supplied name the framework. Returns an empty Framework when the scenario names none.
Framework apply_framework(Json& doc, SourceFile& src);

}  // namespace plumb
