#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>

#include "cli/commands.hpp"
#include "models/input/diagnostics.hpp"
#include "models/plan/plan_space.hpp"
#include "models/scenario/job.hpp"
#include "validate/imports/megatron_args.hpp"
#include "validate/imports/torchtitan_config.hpp"

namespace plumb::cli {
namespace {

int run_import(const Args& args) {
  const std::string& kind = args.positional(0);
  if (kind != "megatron" && kind != "torchtitan")
    throw UsageError(fmt::format("plumb imports megatron launches (a script or an argument list) and torchtitan TOML configs, not \"{}\"", kind));
  if (!args.flag("-o")) throw UsageError("-o FILE is required: where the scenario goes");
  const std::string& file = args.positional(1);
  Diagnostics d;
  SourceFile src{file, {}, &d, {}};
  std::optional<std::string> text = read_input_text(file, src);
  d.throw_if_any();
  ImportOptions options;
  options.gpu = args.value("--gpu", options.gpu);
  options.fabric = args.value("--fabric", options.fabric);
  options.nodes = args.integer("--nodes", 0, 0, 1'000'000);
  options.vocab = args.integer("--vocab", 0, 0, 100'000'000);
  const ScenarioImport imported = kind == "megatron" ? import_megatron(*text, file, options) : import_torchtitan(*text, file, options);
  write_file(args.value("-o"), imported.scenario.dump(2) + "\n");
  // The scenario written is read back as any other: its errors name it, and plumb run will take it.
  const Job job = load_scenario(args.value("-o"));
  std::cout << fmt::format("{} → {}: {}\n", file, args.value("-o"), fmt::format("{} GPUs, {}", job.layout.gpus(), describe_layout(job.layout)));
  for (const std::string& s : imported.set_by) std::cout << "  " << s << "\n";
  for (const std::string& a : imported.assumptions) std::cout << "  assumed: " << a << "\n";
  if (!imported.ignored.empty())
    std::cout << fmt::format("  {} setting(s) that do not change what plumb models: {}\n", imported.ignored.size(), fmt::join(imported.ignored, " "));
  if (!imported.unknown.empty())
    std::cerr << fmt::format("plumb import: {} setting(s) plumb does not know, not imported (check none changes the layout or the model): {}\n",
                             imported.unknown.size(), fmt::join(imported.unknown, ", "));
  return kOk;
}

}  // namespace

const Command& import_command() {
  static const Command command{
      {"import",
       "plumb import megatron|torchtitan CONFIG -o SCENARIO.json [--gpu G] [--fabric F] [--nodes N] [--vocab V]",
       "Writes a scenario from a Megatron-LM launch: a script or an argument list (torchrun's --nnodes and\n"
       "--nproc-per-node included). Parallel sizes, virtual stages, sequence parallelism, the distributed\n"
       "optimizer, recomputation, micro- and global batch, sequence length, precision and overlap flags, and\n"
       "the model's shape (layers, hidden, FFN, heads, query groups, vocabulary, SwiGLU, norm, RoPE, tied\n"
       "embeddings, bias, dropout, experts) become scenario fields under the framework profile\n"
       "megatron-core-2026-01; data-parallel size is the launch's GPUs over tp × pp × cp. Every flag that set a\n"
       "field is printed with it; flags known not to change the model are listed; unknown flags are listed on\n"
       "stderr, never dropped silently; a bad value or two flags that contradict each other is an error naming\n"
       "the flag. A torchtitan TOML config (its train_configs, 2024-2025) imports the same way: the llama3\n"
       "flavour as a preset, the batch, the parallel degrees (FSDP as ZeRO-3; --nodes gives the GPUs, which the\n"
       "config does not), the pipeline schedule, activation checkpointing and float8, under a torchtitan\n"
       "framework profile. The scenario is read back as plumb run reads it.",
       {"megatron|torchtitan", "CONFIG"},
       {{"-o", "FILE", "where the scenario is written"},
        {"--gpu", "G", "the GPU profile of the cluster (h100-sxm)"},
        {"--fabric", "F", "the fabric profile of the cluster (dgx-h100-ndr)"},
        {"--nodes", "N", "nodes, where the launch has no --nnodes (a torchtitan config never has)"},
        {"--vocab", "V", "the vocabulary, where the launch has no --vocab-size (Megatron-LM takes it from the tokenizer)"}}},
      run_import};
  return command;
}

}  // namespace plumb::cli
