// plumb import megatron (issue 25): a Megatron-LM launch script as a scenario.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/input/catalogue.hpp"
#include "models/input/diagnostics.hpp"
#include "models/scenario/job.hpp"
#include "models/spec/param_count.hpp"
#include "validate/imports/megatron_args.hpp"

using namespace plumb;
namespace fs = std::filesystem;

namespace {
std::string text_of(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST_CASE("a Megatron-LM launch of Llama 3 70B imports as its layout and the Llama 3 70B of plumb's preset") {
  const fs::path launch = data_dir() / "tests/fixtures/launch/megatron-llama3-70b.sh";
  const MegatronImport imported = import_megatron(text_of(launch), "launch.sh", {});
  const Json& p = imported.scenario["parallel"];
  CHECK(p["tp"] == 8);
  CHECK(p["pp"] == 4);
  CHECK(p["vp"] == 4);  // 80 layers / (pp 4 × 5 layers per virtual stage)
  CHECK(p["schedule"] == "interleaved");
  CHECK(p["dp"] == 2);  // 8 nodes × 8 GPUs (torchrun) / (tp 8 × pp 4)
  CHECK(p["zero"] == 1);
  CHECK(p["sequence_parallel"] == true);
  CHECK(p["overlap_grad_reduce"] == true);
  CHECK(p["recompute"] == "full");
  CHECK(imported.scenario["training"]["precision"] == "fp8");
  CHECK(imported.scenario["training"]["global_batch"] == 512);
  CHECK(imported.scenario["cluster"]["nodes"] == 8);
  CHECK(imported.scenario["framework"] == "megatron-core-2026-01");
  REQUIRE(imported.unknown.size() == 1);
  CHECK(imported.unknown[0] == "--some-new-flag 3");
  // The model it describes is Llama 3 70B: the same parameters as plumb's preset, counted independently.
  const fs::path written = fs::temp_directory_path() / "plumb-import-test.json";
  std::ofstream(written) << imported.scenario.dump(1);
  const Job job = load_scenario(written);
  const Job preset = load_scenario(data_dir() / "scenarios/llama3-405b-16k-h100.json", {"model=\"llama3-70b\""});
  CHECK(count_params(job.model).total == doctest::Approx(count_params(preset.model).total));
  CHECK(job.layout.gpus() == 64);
  fs::remove(written);
}

TEST_CASE("a Megatron-LM launch: contradictions, bad values and missing sizes are errors naming the flag") {
  ImportOptions o;
  CHECK_THROWS_WITH_AS(import_megatron("--bf16 --fp16 --num-layers 4 --hidden-size 64 --num-attention-heads 4 --vocab-size 100 --nnodes 1", "a", o),
                       doctest::Contains("--fp16 (argument 2): --bf16 and --fp16 both given"), InputError);
  CHECK_THROWS_WITH_AS(import_megatron("--tensor-model-parallel-size eight --nnodes 1 --vocab-size 100", "a", o),
                       doctest::Contains("--tensor-model-parallel-size (argument 1): expected a whole number of at least 1, found \"eight\""), InputError);
  CHECK_THROWS_WITH_AS(import_megatron("--num-layers 4 --hidden-size 64 --nnodes 1", "a", o), doctest::Contains("no --vocab-size"), InputError);
  CHECK_THROWS_WITH_AS(import_megatron("--num-layers 4 --vocab-size 100", "a", o), doctest::Contains("no --nnodes"), InputError);
  CHECK_THROWS_WITH_AS(import_megatron("--pipeline-model-parallel-size 2 --num-layers 10 --num-layers-per-virtual-pipeline-stage 3 --vocab-size 100 --nnodes 1",
                                       "a", o),
                       doctest::Contains("10 layers are not a multiple of pp 2 × 3"), InputError);
  CHECK_THROWS_WITH_AS(import_megatron("--micro-batch-size 1 --micro-batch-size 2 --vocab-size 100 --nnodes 1", "a", o),
                       doctest::Contains("given twice, 1 and 2"), InputError);
}
