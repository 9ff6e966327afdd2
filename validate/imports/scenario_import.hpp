#pragma once
// What an importer makes of a framework's launch configuration: the scenario, how each field was set,
// and every setting it did not import (known not to change the model, or unknown), never dropped
// silently.
#include <cstdint>
#include <string>
#include <vector>

#include "models/input/json_reader.hpp"

namespace plumb {

struct ScenarioImport {
  Json scenario;
  std::vector<std::string> set_by;       // "--tensor-model-parallel-size 8 → parallel.tp", in order
  std::vector<std::string> ignored;      // known settings that do not change what plumb models
  std::vector<std::string> unknown;      // settings plumb does not know
  std::vector<std::string> assumptions;  // what it had to choose
};

struct ImportOptions {
  std::string gpu = "h100-sxm", fabric = "dgx-h100-ndr";
  std::int64_t gpus_per_node = 8;
  std::int64_t nodes = 0;  // 0: from the launch where it says
  std::int64_t vocab = 0;  // the tokenizer's size where the configuration does not give one
};

}  // namespace plumb
