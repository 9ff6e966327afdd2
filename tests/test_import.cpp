// plumb import megatron (issue 25): a Megatron-LM launch script as a scenario.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_files.hpp"
#include "cli/report/plan_report.hpp"
#include "models/input/catalogue.hpp"
#include "models/input/diagnostics.hpp"
#include "models/scenario/job.hpp"
#include "models/spec/param_count.hpp"
#include "validate/imports/megatron_args.hpp"
#include "validate/imports/torchtitan_config.hpp"

using namespace plumb;
namespace fs = std::filesystem;

using test::file_bytes;

TEST_CASE("a Megatron-LM launch of Llama 3 70B imports as its layout and the Llama 3 70B of plumb's preset") {
  const fs::path launch = data_dir() / "tests/fixtures/launch/megatron-llama3-70b.sh";
  const ScenarioImport imported = import_megatron(file_bytes(launch), "launch.sh", {});
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
  // Copies of the distributed optimizer are HSDP's replicas: 16 data-parallel ranks in 4 copies shard over 4.
  const std::string hsdp = "--use-distributed-optimizer --num-layers 4 --hidden-size 64 --num-attention-heads 4 --vocab-size 100 --nnodes 2";
  CHECK(import_megatron(hsdp + " --num-distributed-optimizer-instances 4", "a", o).scenario["parallel"]["dp_shard"] == 4);
  CHECK_THROWS_WITH_AS(import_megatron(hsdp + " --num-distributed-optimizer-instances 3", "a", o),
                       doctest::Contains("--num-distributed-optimizer-instances 3 does not divide the 16 data-parallel ranks"), InputError);
}

TEST_CASE("a torchtitan config of December 2024 imports as the published case of the same run") {
  // ground-truth.md §A's first row: Llama 3.1 8B, FSDP on 8 H100, per-op SAC, batch 2 × 8K per GPU.
  ImportOptions o;
  o.nodes = 1;
  const ScenarioImport imported = import_torchtitan(file_bytes(data_dir() / "tests/fixtures/launch/torchtitan-llama3-8b.toml"), "tt.toml", o);
  const Json published = Json::parse(file_bytes(data_dir() / "scenarios/published/torchtitan-h100-8b-fsdp8-sac.json"));
  CHECK(imported.scenario["framework"] == published["framework"]);
  CHECK(imported.scenario["model"] == published["model"]);
  for (const char* key : {"tp", "pp", "dp", "micro_batch", "recompute"}) {
    INFO(key);
    CHECK(imported.scenario["parallel"][key] == published["parallel"][key]);
  }
  for (const char* key : {"seq_len", "global_batch", "precision"}) {
    INFO(key);
    CHECK(imported.scenario["training"][key] == published["training"][key]);
  }
  CHECK(imported.unknown.empty());
}

TEST_CASE("a torchtitan config of August 2025 (model.hf_assets_path) imports with the profile of that torchtitan") {
  // torchao's B200 table ran torchtitan 6fc499f, whose llama3_8b.toml names hf_assets_path (from 2025-08-11,
  // after FSDP2's units were split on 2025-07-28): the published case's framework. Without the key, and with
  // local_batch_size, the config could be June's or July's: June's profile.
  ImportOptions o;
  o.nodes = 1;
  const std::string base = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n";
  const std::string rest = "[training]\nlocal_batch_size = 1\nseq_len = 8192\n[parallelism]\ndata_parallel_shard_degree = -1\n";
  const ScenarioImport august = import_torchtitan(base + "hf_assets_path = \"./assets/hf/Llama-3.1-8B\"\n" + rest, "tt.toml", o);
  const Json published = Json::parse(file_bytes(data_dir() / "scenarios/published/torchao-b200-750w-8b-fsdp8-bf16.json"));
  CHECK(august.scenario["framework"] == published["framework"]);
  CHECK(august.scenario["framework"] == "torchtitan-2025-08");
  CHECK(import_torchtitan(base + rest, "tt.toml", o).scenario["framework"] == "torchtitan-2025-06");
}

TEST_CASE("torchtitan configs: TOML outside the subset and contradictory degrees are errors naming the line or the key") {
  ImportOptions o;
  o.nodes = 1;
  CHECK_THROWS_WITH_AS(import_torchtitan("[model]\nname = \"llama3\"\nflavor = 8B\n", "t.toml", o), doctest::Contains("line 3: flavor: \"8B\" is not a string"), InputError);
  CHECK_THROWS_WITH_AS(import_torchtitan("[model\n", "t.toml", o), doctest::Contains("line 1: a section header"), InputError);
  CHECK_THROWS_WITH_AS(import_torchtitan("[model]\nname = \"llama3\"\nname = \"x\"\n", "t.toml", o), doctest::Contains("line 3: name is given twice"), InputError);
  CHECK_THROWS_WITH_AS(
      import_torchtitan("[model]\nname = \"llama3\"\nflavor = \"8B\"\n[parallelism]\ntensor_parallel_degree = 4\ndata_parallel_shard_degree = 4\n", "t.toml", o),
      doctest::Contains("parallelism.data_parallel_shard_degree: tp 4 × pp 1 × cp 1 × replicate 1 × shard 4 is not the 8 GPUs"), InputError);
  CHECK_THROWS_WITH_AS(import_torchtitan("[model]\nname = \"llama3\"\nflavor = \"7B\"\n", "t.toml", o), doctest::Contains("model.flavor: llama3 7B is not one"),
                       InputError);
  o.nodes = 0;
  CHECK_THROWS_WITH_AS(import_torchtitan("[model]\nname = \"llama3\"\nflavor = \"8B\"\n", "t.toml", o), doctest::Contains("give plumb import --nodes N"), InputError);
}

TEST_CASE("plan --emit torchtitan writes settings that plumb import torchtitan reads back as the same layout") {
  for (const char* name : {"torchtitan-h100-70b-fsdp32-tp8", "torchtitan-h100-405b-fsdp8-tp8-pp8-interleaved", "torchtitan-h100-8b-fsdp8-sac"}) {
    INFO(name);
    const Job job = load_scenario(data_dir() / "scenarios/published" / (std::string(name) + ".json"));
    const std::string flavor = job.model.name == "llama3-8b" ? "8B" : job.model.name == "llama3-70b" ? "70B" : "405B";
    const std::string toml = "[model]\nname = \"llama3\"\nflavor = \"" + flavor + "\"\n" + torchtitan_toml(job);
    ImportOptions o;
    o.nodes = job.cluster.nodes;
    const ScenarioImport back = import_torchtitan(toml, "emitted.toml", o);
    const Json& p = back.scenario["parallel"];
    CHECK(p["tp"] == job.layout.tp);
    CHECK(p["pp"] == job.layout.pp);
    CHECK(p["dp"] == job.layout.dp);
    CHECK(p["micro_batch"] == job.layout.micro_batch);
    CHECK(back.scenario["training"]["global_batch"] == job.training.global_batch);
    CHECK(back.scenario["training"]["seq_len"] == job.training.seq_len);
    CHECK((back.scenario["training"]["precision"] == "fp8") == (job.training.precision == Precision::fp8));
    CHECK((p["recompute"] == "full") == job.layout.recompute.full);
    if (job.layout.pp > 1) CHECK(p["schedule"] == std::string(schedule_name(job.layout.schedule)));
    CHECK(back.unknown.empty());
  }
  // HSDP: shard groups of 8 replicated 16 times come back as dp 128 with dp_shard 8.
  Job hsdp = load_scenario(data_dir() / "scenarios/published/torchtitan-h100-8b-fsdp128-sac.json", {"parallel.dp_shard=8"});
  ImportOptions o;
  o.nodes = hsdp.cluster.nodes;
  const ScenarioImport back = import_torchtitan("[model]\nname = \"llama3\"\nflavor = \"8B\"\n" + torchtitan_toml(hsdp), "emitted.toml", o);
  CHECK(back.scenario["parallel"]["dp"] == 128);
  CHECK(back.scenario["parallel"]["dp_shard"] == 8);
}

TEST_CASE("a Megatron-LM MoE launch without --moe-grouped-gemm runs its experts one after another (SequentialMLP)") {
  const std::string launch =
      "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 --num-attention-heads 16 "
      "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 8 --vocab-size 32000 --bf16 "
      "--swiglu --ffn-hidden-size 2816 --num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 8";
  auto streams_of = [](const ScenarioImport& imported) {
    const fs::path written = fs::temp_directory_path() / "plumb-import-moe-test.json";
    std::ofstream(written) << imported.scenario.dump(1);
    const Job job = load_scenario(written);
    fs::remove(written);
    return job.training.grouped_gemm_streams;
  };
  const ScenarioImport sequential = import_megatron(launch, "launch.sh", {});
  CHECK(sequential.unknown.empty());
  CHECK(sequential.scenario["training"]["grouped_gemm_streams"] == 1);
  CHECK(streams_of(sequential) == 1);
  // With it, TEGroupedMLP: the megatron-core-2026-01 profile's four streams (Transformer Engine 2.11).
  const ScenarioImport grouped = import_megatron(launch + " --moe-grouped-gemm", "launch.sh", {});
  CHECK(grouped.unknown.empty());
  CHECK_FALSE(grouped.scenario["training"].contains("grouped_gemm_streams"));
  CHECK(streams_of(grouped) == 4);
  // A dense launch says nothing of it.
  const ScenarioImport dense = import_megatron(
      "torchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py --num-layers 4 --hidden-size 1024 --num-attention-heads 16 "
      "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 8 --vocab-size 32000 --bf16",
      "launch.sh", {});
  CHECK_FALSE(dense.scenario["training"].contains("grouped_gemm_streams"));
}
