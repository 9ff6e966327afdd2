#pragma once
// The software stack that ran a job, as an input: a framework profile (frameworks/, e.g.
// "megatron-lm-2021", "torchtitan-2024-12") holds that framework's defaults at that version — the
// scenario keys it decides (pipeline-send and gradient-reduce overlap, sequence parallelism, attention
// kernel, gradient accumulation, ...), each with its source in the framework's code or docs. A scenario
// that names a framework takes every such key it does not set itself from the profile. Some training
// defaults depend on the GPU (torchtitan puts cuDNN's attention first from compute capability 10.0 on):
// the profile's "from_compute_capability" holds them, each entry from its capability up to the next
// entry's, over its general ones.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/input/json_reader.hpp"

namespace plumb {

struct Framework {
  std::string id;    // as the scenario named it; empty when the scenario names none
  std::string name;  // display name
  std::vector<std::string> applied;  // "parallel.overlap_p2p=false": the defaults the scenario took
  std::map<std::string, std::string> sources;  // "parallel.overlap_p2p" → where that default is read from
  // For re-deriving the training section on another GPU (the planner): the training defaults by
  // compute capability ("10.0" and up → {"attention_kernel": "cudnn"}), the general defaults, the training
  // keys the scenario set itself, and the training section as read (defaults included).
  Json training_by_capability = Json::object();
  Json training_defaults = Json::object();
  std::set<std::string> own_training_keys;
  Json training = Json::object();
  bool depends_on_gpu() const { return !training_by_capability.empty(); }
};

// Reads the scenario's "framework" (a catalogue name, a path or an inline object, which may start from
// another with "base") and writes its defaults into `doc` where the scenario is silent. Errors in a
// value the framework supplied name the framework. `compute_capability` ("9.0"; empty when the GPU
// profile gives none) picks the profile's defaults for that GPU where it has them. Returns an empty
// Framework when the scenario names none.
Framework apply_framework(Json& doc, SourceFile& src, const std::string& compute_capability = "");

// The training section `fw`'s scenario would have had on a GPU of `compute_capability`: every key the
// profile sets per capability, and the scenario did not set itself, takes the value of the entry that
// holds on that GPU (the highest capability at or below it), or the general default where none does.
Json training_on_capability(const Framework& fw, const std::string& compute_capability);

}  // namespace plumb
