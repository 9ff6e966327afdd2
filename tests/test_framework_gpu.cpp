// Framework defaults that depend on the GPU: torchtitan puts cuDNN's attention first from compute
// capability 10.0 on (B200), FlashAttention-2 below; the scenario's own choice wins, and the planner
// re-derives the defaults for each GPU it tries.
#include <doctest/doctest.h>

#include "models/input/catalogue.hpp"
#include "models/plan/plan_space.hpp"

using namespace plumb;

namespace {

const std::filesystem::path kTorchao = data_dir() / "scenarios/published/torchao-b200-750w-8b-fsdp8-bf16.json";

// An inline framework from torchtitan-2025-06 with one more entry, and an inline GPU of another capability.
const std::string kTwoEntries =
    R"(framework={"base": "torchtitan-2025-06", "name": "two entries", "from_compute_capability": {"9.0": {"training": {"attention_kernel": "flash"}, "sources": {"training.attention_kernel": "a test"}}}})";
std::string gpu_of_capability(const std::string& cc) {
  return R"(cluster.gpu={"base": "b200", "name": "B200 as another capability", "compute_capability": ")" + cc +
         R"(", "sources": {"compute_capability": "a test"}})";
}

bool took(const Job& job, const std::string& prefix) {
  for (const std::string& a : job.framework.applied)
    if (a.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("a framework's training defaults can depend on the GPU's compute capability") {
  // torchtitan-2025-06 on the B200 (10.0): cuDNN's attention, and plumb run says where it came from.
  Job b200 = load_scenario(kTorchao);
  CHECK(b200.cluster.gpu.compute_capability == "10.0");
  CHECK(b200.training.attention_kernel == AttentionKernel::cudnn);
  CHECK(took(b200, "training.attention_kernel=\"cudnn\" (compute capability 10.0 and up)"));
  CHECK(b200.framework.sources.count("training.attention_kernel (compute capability 10.0 and up)") == 1);
  // The same job on an H100 (9.0): the general default, FlashAttention-2 (inherited from torchtitan-2024-12).
  Job h100 = load_scenario(kTorchao, {"cluster.gpu=h100-sxm", "cluster.power_limit=null"});
  CHECK(h100.cluster.gpu.compute_capability == "9.0");
  CHECK(h100.training.attention_kernel == AttentionKernel::flash2);
  CHECK(took(h100, "training.attention_kernel=\"flash2\""));
  // The scenario's own choice wins on any GPU, and is not listed as taken.
  Job own = load_scenario(kTorchao, {"training.attention_kernel=flash"});
  CHECK(own.training.attention_kernel == AttentionKernel::flash);
  CHECK_FALSE(took(own, "training.attention_kernel"));
  // An entry holds from its capability up to the next entry's: 10.3 takes 10.0's, 9.0 its own, 8.0
  // (below every entry) the general default; a GPU with no capability the general default too.
  CHECK(load_scenario(kTorchao, {kTwoEntries, gpu_of_capability("10.3")}).training.attention_kernel == AttentionKernel::cudnn);
  CHECK(load_scenario(kTorchao, {kTwoEntries, gpu_of_capability("9.0")}).training.attention_kernel == AttentionKernel::flash);
  CHECK(load_scenario(kTorchao, {kTwoEntries, gpu_of_capability("8.0")}).training.attention_kernel == AttentionKernel::flash2);
  CHECK(load_scenario(kTorchao, {kTwoEntries, gpu_of_capability("12.0")}).training.attention_kernel == AttentionKernel::cudnn);
}

TEST_CASE("on another GPU the job takes the framework's defaults for that GPU, unless it set them itself") {
  const Job b200 = load_scenario(kTorchao);
  const Job h100 = load_scenario(kTorchao, {"cluster.gpu=h100-sxm", "cluster.power_limit=null"});
  std::string why;
  CHECK(training_on_gpu(b200, h100.cluster.gpu, &why)->attention_kernel == AttentionKernel::flash2);
  CHECK(training_on_gpu(h100, b200.cluster.gpu, &why)->attention_kernel == AttentionKernel::cudnn);
  // Everything else the scenario and the framework set stays as it was.
  const TrainingSpec moved = *training_on_gpu(b200, h100.cluster.gpu, &why);
  CHECK(moved.seq_len == b200.training.seq_len);
  CHECK(moved.compiled == b200.training.compiled);
  CHECK(moved.fused_cross_entropy == b200.training.fused_cross_entropy);
  const Job own = load_scenario(kTorchao, {"training.attention_kernel=flash"});
  CHECK(training_on_gpu(own, h100.cluster.gpu, &why)->attention_kernel == AttentionKernel::flash);
  // A framework without such defaults leaves the training as it is.
  const Job megatron = load_scenario(data_dir() / "scenarios/published/megatron-b200-mghpcc-gpt6.9b-8gpu.json");
  CHECK_FALSE(megatron.framework.depends_on_gpu());
  CHECK(training_on_gpu(megatron, h100.cluster.gpu, &why)->attention_kernel == AttentionKernel::cudnn);
}

TEST_CASE("the planner prices each GPU with the framework's kernels for it") {
  const Job base = load_scenario(kTorchao, {"cluster.power_limit=null", R"(plan={"gpu": ["h100-sxm", "b200"], "tp": [1], "pp": [1],
      "cp": [1], "micro_batch": [1], "zero": [3], "recompute": ["selective"], "precision": ["bf16"], "fabric": ["dgx-h100-ndr"]})"});
  const PlanSpace space = read_plan_space(base);
  REQUIRE(space.gpu.size() == 2);
  int seen = 0;
  for (std::uint64_t i = 0; i < space.size(); ++i) {
    std::string why;
    const PlanPoint p = point_at(space, i);
    const std::optional<Job> job = job_at(base, space, p, &why);
    if (!job) continue;
    ++seen;
    INFO(job->cluster.gpu.name);
    CHECK(job->training.attention_kernel == (job->cluster.gpu.compute_capability == "10.0" ? AttentionKernel::cudnn : AttentionKernel::flash2));
  }
  CHECK(seen >= 2);
}
