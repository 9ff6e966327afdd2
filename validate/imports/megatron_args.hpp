#pragma once
// A Megatron-LM launch (a script or an argument list) as a plumb scenario: the parallel layout, the
// model's shape, the batch, precision, recomputation and overlap flags become scenario fields under
// the Megatron framework profile; the launcher's --nnodes / --nproc-per-node (torchrun) give the
// cluster size. Every flag is accounted for: those that set a field, those known not to change what
// plumb models (data paths, logging, learning rate…), and unknown ones, which are listed, never
// silently dropped. Contradictory flags are errors naming the flag.
#include <string>
#include <vector>

#include "models/input/json_reader.hpp"

namespace plumb {

struct MegatronImport {
  Json scenario;
  std::vector<std::string> set_by;        // "--tensor-model-parallel-size 8 → parallel.tp", in order
  std::vector<std::string> ignored;       // known flags that do not change the model
  std::vector<std::string> unknown;       // flags plumb does not know
  std::vector<std::string> assumptions;   // what it had to choose (cluster, vocabulary…)
};

struct ImportOptions {
  std::string gpu = "h100-sxm", fabric = "dgx-h100-ndr";
  std::int64_t gpus_per_node = 8;
  std::int64_t nodes = 0;  // 0: from the launcher's --nnodes
  std::int64_t vocab = 0;  // the tokenizer's size where the arguments do not give --vocab-size
};

// Throws InputError naming the file and the flag (with its position) for a bad value or a contradiction.
MegatronImport import_megatron(const std::string& text, const std::string& file, const ImportOptions& options);

}  // namespace plumb
