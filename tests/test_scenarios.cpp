// Every bundled scenario runs; every bad input gives exactly its expected message.
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/input/catalogue.hpp"
#include "models/memory/memory.hpp"
#include "cli/report/memory_report.hpp"
#include "models/spec/param_count.hpp"

using namespace plumb;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::vector<fs::path> json_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_CASE("every bundled scenario loads, plans its memory and reports the required fields") {
  auto files = json_files(data_dir() / "scenarios");
  REQUIRE(files.size() >= 4);
  for (const fs::path& f : files) {
    INFO(f.string());
    Job job = load_scenario(f);
    MemoryPlan plan = plan_memory(job);
    Json report = memory_report_json(job, plan);
    CHECK(report.contains("capacity_bytes"));
    CHECK(report.contains("fits"));
    REQUIRE(report["stages"].size() == static_cast<std::size_t>(job.layout.pp));
    for (const char* key : {"params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes", "other_bytes",
                            "total_bytes"})
      CHECK(report["stages"][0][key].get<double>() >= 0.0);
    CHECK_FALSE(memory_report_table(job, plan).empty());
  }
}

TEST_CASE("bad inputs: each kind of mistake gives its exact message and never crashes") {
  fs::path dir = data_dir() / "tests/bad_inputs";
  auto files = json_files(dir);
  REQUIRE(files.size() >= 10);
  fs::path cwd = fs::current_path();
  fs::current_path(data_dir());  // messages name files relative to the repository root
  for (const fs::path& f : files) {
    fs::path relative = fs::relative(f, data_dir());
    fs::path expected_file = f;
    expected_file.replace_extension(".expected");
    INFO(relative.string());
    REQUIRE_MESSAGE(fs::exists(expected_file), "missing " << expected_file.filename().string());
    std::string got = "no error";
    try {
      load_scenario(relative);
    } catch (const InputError& e) {
      got = e.what();
    }
    CHECK(got == read_text(expected_file));
  }
  fs::current_path(cwd);
}

TEST_CASE("--set overrides any field, and a mistyped one is named with its flag") {
  Job job = load_scenario(data_dir() / "scenarios/deepseek-v3-2048xh800.json", {"parallel.pp=8", "parallel.dp=256"});
  CHECK(job.layout.pp == 8);
  try {
    load_scenario(data_dir() / "scenarios/deepseek-v3-2048xh800.json", {"parallel.zeros=1"});
    FAIL("expected an error");
  } catch (const InputError& e) {
    REQUIRE(e.diagnostics().size() == 1);
    CHECK(e.diagnostics()[0].message == "unknown key \"zeros\"; did you mean \"zero\"? (from --set parallel.zeros=1)");
  }
  try {
    load_scenario(data_dir() / "scenarios/deepseek-v3-2048xh800.json", {"model.hidden=1024", "nonsense"});
    FAIL("expected an error");
  } catch (const InputError& e) {
    REQUIRE(e.diagnostics().size() == 2);
    CHECK(e.diagnostics()[0].message ==
          "cannot set \"model.hidden\": /model is \"deepseek-v3\", not an object (--set model.hidden=1024)");
    CHECK(e.diagnostics()[1].to_string() == "--set: \"nonsense\" is not key=value (e.g. --set parallel.pp=8)");
  }
}

TEST_CASE("models and clusters may be given by path or inline") {
  Job by_path = load_scenario(data_dir() / "tests/fixtures/scenarios/references.json");
  CHECK(by_path.model.name == "llama3-8b");
  CHECK(by_path.cluster.gpus() == 32);
  Job inline_model = load_scenario(data_dir() / "tests/fixtures/scenarios/inline_model.json");
  CHECK(inline_model.model.attention.head_dim == 64);  // hidden / heads when not given
  // Embedding + 4 × (q 1024² + k, v 1024×256 + o 1024² + SwiGLU 3·1024·4096 + 2 norms) + final norm + head.
  double layer = 1024.0 * 1024 * 2 + 2 * 1024.0 * 256 + 3 * 1024.0 * 4096 + 2 * 1024;
  CHECK(count_params(inline_model.model).total == 2 * 32000.0 * 1024 + 4 * layer + 1024);
}

TEST_CASE("a framework profile supplies defaults; the scenario and --set win over it") {
  const fs::path sc21 = data_dir() / "scenarios/published/sc21-table1-1.7b.json";
  Job job = load_scenario(sc21);
  CHECK(job.framework.id == "megatron-lm-2021");
  // megatron-lm-2021: unfused attention, separate accumulation, blocking sends, no overlap, ZeRO 0.
  CHECK(job.training.attention_kernel == AttentionKernel::unfused);
  CHECK_FALSE(job.training.fused_grad_accumulation);
  CHECK_FALSE(job.layout.overlap_p2p);
  CHECK_FALSE(job.layout.overlap_grad_reduce);
  CHECK(job.framework.applied.size() == 5);
  // --set wins and the default is no longer listed as taken.
  Job changed = load_scenario(sc21, {"training.attention_kernel=flash", "framework=megatron-lm-2022"});
  CHECK(changed.training.attention_kernel == AttentionKernel::flash);
  CHECK(changed.training.fused_grad_accumulation);  // megatron-lm-2022 derives from 2021 with fused accumulation
  for (const std::string& a : changed.framework.applied) CHECK(a.rfind("training.attention_kernel", 0) != 0);
  // torchtitan of 2024-12 runs SDPA's FlashAttention-2 and FSDP2 (ZeRO-3) by default.
  Job titan = load_scenario(data_dir() / "scenarios/published/torchtitan-h100-8b-fsdp8-sac.json");
  CHECK(titan.training.attention_kernel == AttentionKernel::flash2);
  CHECK(titan.layout.zero == 3);
  CHECK(titan.training.optimizer.grads == 4.0);
}
