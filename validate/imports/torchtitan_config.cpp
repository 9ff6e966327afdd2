#include "validate/imports/torchtitan_config.hpp"

#include <fmt/format.h>
#include <map>
#include <set>

#include "models/input/diagnostics.hpp"
#include "validate/imports/toml_subset.hpp"

namespace plumb {

namespace {

// Sections of torchtitan's JobConfig (torchtitan/config/job_config.py, 2025) that do not change what
// plumb models.
const std::set<std::string>& ignored_sections() {
  static const std::set<std::string> names = {"job",        "profiling", "metrics", "optimizer", "lr_scheduler", "checkpoint",
                                              "validation", "comm",      "memory_estimation", "fault_tolerance"};
  return names;
}

}  // namespace

ScenarioImport import_torchtitan(const std::string& text, const std::string& file, const ImportOptions& options) {
  const Json config = parse_toml_subset(text, file);
  ScenarioImport out;
  std::vector<Diagnostic> problems;
  auto problem = [&](const std::string& key, const std::string& message) { problems.push_back({file, key, message}); };
  std::set<std::string> used;  // "section.key" read
  auto get = [&](const std::string& section, const std::string& key) -> const Json* {
    const Json* s = &config;
    std::size_t start = 0;
    while (start <= section.size()) {
      const std::size_t dot = section.find('.', start);
      const std::string name = section.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!s->is_object() || !s->contains(name)) return nullptr;
      s = &(*s)[name];
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    used.insert(section + "." + key);
    return s->is_object() && s->contains(key) ? &(*s)[key] : nullptr;
  };
  auto integer = [&](const std::string& section, const std::string& key, std::int64_t fallback, std::int64_t low) {
    const Json* v = get(section, key);
    if (!v) return fallback;
    if (!v->is_number_integer() || v->get<std::int64_t>() < low) {
      problem(section + "." + key, fmt::format("expected a whole number of at least {}, found {}", low, json_brief(*v)));
      return fallback;
    }
    return v->get<std::int64_t>();
  };
  auto text_of = [&](const std::string& section, const std::string& key, const std::string& fallback) {
    const Json* v = get(section, key);
    if (!v) return fallback;
    if (!v->is_string()) {
      problem(section + "." + key, fmt::format("expected a string, found {}", json_brief(*v)));
      return fallback;
    }
    return v->get<std::string>();
  };
  // The model: torchtitan's llama3 flavours are plumb's presets.
  const std::string name = text_of("model", "name", ""), flavor = text_of("model", "flavor", "");
  static const std::map<std::string, std::string> presets = {{"llama3/8B", "llama3-8b"}, {"llama3/70B", "llama3-70b"}, {"llama3/405B", "llama3-405b"}};
  auto preset = presets.find(name + "/" + flavor);
  if (preset == presets.end()) problem("model.flavor", fmt::format("{} {} is not one plumb has a preset for (llama3 8B, 70B, 405B)", name, flavor));
  else out.set_by.push_back(fmt::format("model.name {}, model.flavor {} → model \"{}\"", name, flavor, preset->second));
  // Which torchtitan: training.batch_size before local_batch_size replaced it (2025); model.hf_assets_path
  // from 2025-08-11 on (torchtitan fd5a87f, PR #1526), after FSDP2's units were split (83e6941, 2025-07-28).
  const bool old_batch = get("training", "batch_size") != nullptr;
  const bool hf_assets = get("model", "hf_assets_path") != nullptr;
  const std::string framework = old_batch ? "torchtitan-2024-12" : hf_assets ? "torchtitan-2025-08" : "torchtitan-2025-06";
  out.assumptions.push_back(old_batch   ? fmt::format("framework {}: the config uses training.batch_size", framework)
                            : hf_assets ? fmt::format("framework {}: the config names model.hf_assets_path (torchtitan from 2025-08-11)", framework)
                                        : fmt::format("framework {}: the config has no training.batch_size", framework));
  const std::int64_t local = old_batch ? integer("training", "batch_size", 8, 1) : integer("training", "local_batch_size", 8, 1);
  const std::int64_t seq = integer("training", "seq_len", 2048, 1);
  // The degrees sit in [parallelism] since 2025; before, data and tensor parallelism in [training] and
  // pipeline and context parallelism in [experimental].
  auto home = [&](const std::string& key, const char* before) { return get("parallelism", key) ? std::string("parallelism") : std::string(before); };
  const std::string tp_at = home("tensor_parallel_degree", "training"), pp_at = home("pipeline_parallel_degree", "experimental"),
                    cp_at = home("context_parallel_degree", "experimental"), dp_at = home("data_parallel_shard_degree", "training");
  const std::int64_t tp = integer(tp_at, "tensor_parallel_degree", 1, 1), pp = integer(pp_at, "pipeline_parallel_degree", 1, 1),
                     cp = integer(cp_at, "context_parallel_degree", 1, 1);
  const std::int64_t replicate = integer(dp_at, "data_parallel_replicate_degree", 1, 1);
  std::int64_t shard = integer(dp_at, "data_parallel_shard_degree", -1, -1);
  if (shard == 0) problem("parallelism.data_parallel_shard_degree", "0 is not a degree: -1 (the rest) or at least 1");
  // The cluster: torchtitan's launcher decides it, so --nodes does.
  const std::int64_t gpus = options.nodes * options.gpus_per_node;
  if (options.nodes < 1) problems.push_back({file, "", "a torchtitan config does not say how many GPUs run it: give plumb import --nodes N"});
  else if (shard == -1) {
    if (gpus % (tp * pp * cp * replicate) != 0)
      problem("parallelism.data_parallel_shard_degree",
              fmt::format("-1 takes the rest, but {} GPUs are not a multiple of tp × pp × cp × replicate = {}", gpus, tp * pp * cp * replicate));
    else shard = gpus / (tp * pp * cp * replicate);
  } else if (tp * pp * cp * replicate * shard != gpus) {
    problem("parallelism.data_parallel_shard_degree",
            fmt::format("tp {} × pp {} × cp {} × replicate {} × shard {} is not the {} GPUs of --nodes {}", tp, pp, cp, replicate, shard, gpus, options.nodes));
  }
  const std::int64_t dp = replicate * std::max<std::int64_t>(shard, 1);
  Json parallel = {{"tp", tp}, {"pp", pp}, {"cp", cp}, {"dp", dp}};
  // HSDP: FSDP within each group of `shard` ranks, replicated over `replicate` groups.
  if (replicate > 1 && shard > 1) parallel["dp_shard"] = shard;
  out.set_by.push_back(fmt::format("parallelism degrees → parallel.tp {}, pp {}, cp {}, dp {} (replicate {} × shard {}){}", tp, pp, cp, dp,
                                   replicate, shard, parallel.contains("dp_shard") ? fmt::format(", dp_shard {}", shard) : ""));
  // Batch: with a pipeline, micro-batches of pipeline_parallel_microbatch_size; without, the local batch at once.
  const std::int64_t micro = pp > 1 ? integer(pp_at, "pipeline_parallel_microbatch_size", 1, 1) : local;
  std::int64_t global = integer("training", "global_batch_size", -1, -1);
  if (global == -1 || global == 0) global = local * dp;
  parallel["micro_batch"] = micro;
  out.set_by.push_back(fmt::format("training batch {} per data-parallel rank → parallel.micro_batch {}, training.global_batch {}", local, micro, global));
  if (pp > 1) {
    static const std::map<std::string, std::string> schedules = {
        {"1F1B", "1f1b"}, {"GPipe", "gpipe"}, {"Interleaved1F1B", "interleaved"}, {"ZBVZeroBubble", "zb-v"}, {"InterleavedZeroBubble", "zb-h1"}};
    const std::string s = text_of(pp_at, "pipeline_parallel_schedule", "1F1B");
    auto found = schedules.find(s);
    if (found == schedules.end()) problem("parallelism.pipeline_parallel_schedule", fmt::format("\"{}\" is not one plumb models", s));
    else {
      parallel["schedule"] = found->second;
      if (found->second == "interleaved") {
        parallel["vp"] = 2;
        out.assumptions.push_back("Interleaved1F1B: 2 stages per rank, torchtitan's default split");
      }
      if (s == "InterleavedZeroBubble") out.assumptions.push_back("InterleavedZeroBubble is priced as ZB-H1, the closest zero-bubble schedule plumb has");
      out.set_by.push_back(fmt::format("parallelism.pipeline_parallel_schedule {} → parallel.schedule \"{}\"", s, found->second));
    }
    parallel["split"] = "balanced";
  }
  const std::string reshard = text_of(dp_at, "fsdp_reshard_after_forward", "default");
  if (reshard == "never" || (reshard == "default" && pp > 1)) parallel["reshard_after_forward"] = false;
  // Float8: a converter on the model (2025) or the float8 section (2024).
  bool float8 = false;
  if (const Json* converters = get("model", "converters"); converters && converters->is_array())
    for (const Json& c : *converters) float8 = float8 || (c.is_string() && c.get<std::string>() == "float8");
  if (get("float8", "enable_float8_linear") && config["float8"]["enable_float8_linear"] == true) float8 = true;
  // Activation checkpointing.
  const std::string mode = text_of("activation_checkpoint", "mode", "selective");
  const std::string option = text_of("activation_checkpoint", "selective_ac_option", "2");
  if (mode == "full") parallel["recompute"] = "full";
  else if (mode == "none") parallel["recompute"] = "none";
  else if (mode == "selective" && option == "op") parallel["recompute"] = Json::array({float8 ? "matmuls" : "alternate_matmuls"});
  else if (mode == "selective") {
    parallel["recompute"] = "full";
    out.assumptions.push_back(fmt::format("activation_checkpoint selective every {} layers: plumb recomputes every layer", option));
  } else problem("activation_checkpoint.mode", fmt::format("\"{}\" is not one plumb models (full, selective, none)", mode));
  out.set_by.push_back(fmt::format("activation_checkpoint {} {} → parallel.recompute {}", mode, mode == "selective" ? option : "",
                                   parallel["recompute"].dump()));
  auto is_true = [&](const std::string& section, const std::string& key) {
    const Json* v = get(section, key);
    return v && *v == true;
  };
  if (is_true("parallelism", "enable_async_tensor_parallel") || is_true("experimental", "enable_async_tensor_parallel"))
    out.assumptions.push_back("async tensor parallelism is not a term plumb prices yet");
  if (is_true("compile", "enable") || is_true("training", "compile")) out.assumptions.push_back("torch.compile is not a term plumb prices yet");
  // Keys known not to change what plumb models, in the sections it reads.
  for (const char* key : {"model.norm_type", "model.tokenizer_path", "model.hf_assets_path", "model.converters", "training.dataset",
                          "training.dataset_path", "training.max_norm", "training.steps", "training.warmup_steps", "training.seed",
                          "training.deterministic", "training.mixed_precision_param", "training.mixed_precision_reduce", "training.gc_freq",
                          "compile.components", "activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns",
                          "experimental.custom_import", "experimental.custom_args_module"})
    if (!used.count(key)) {
      const std::string k(key);
      const std::size_t dot = k.find('.');
      if (get(k.substr(0, dot), k.substr(dot + 1))) out.ignored.push_back(k);
    }
  // What was not read: known sections listed, the rest unknown.
  for (const auto& [section, body] : config.items()) {
    if (ignored_sections().count(section)) {
      out.ignored.push_back(section);
      continue;
    }
    std::vector<std::pair<std::string, const Json*>> keys;
    std::function<void(const std::string&, const Json&)> walk = [&](const std::string& at, const Json& v) {
      if (v.is_object())
        for (const auto& [k, child] : v.items()) walk(at + "." + k, child);
      else if (!used.count(at))
        keys.emplace_back(at, &v);
    };
    walk(section, body);
    for (const auto& [key, value] : keys) (key.find("quantize.") == 0 || key.find("float8.") == 0 ? out.ignored : out.unknown).push_back(key);
  }
  if (!problems.empty()) throw InputError(problems);
  out.scenario = {{"name", fmt::format("imported from {}", file)},
                  {"description", fmt::format("plumb import torchtitan {}: the torchtitan config as a scenario", file)},
                  {"framework", framework},
                  {"model", preset->second},
                  {"cluster", {{"gpu", options.gpu}, {"nodes", options.nodes}, {"fabric", options.fabric}}},
                  {"parallel", parallel},
                  {"training", {{"seq_len", seq}, {"global_batch", global}, {"precision", float8 ? "fp8" : "bf16"}}}};
  if (float8) out.set_by.push_back("float8 → training.precision \"fp8\"");
  return out;
}

}  // namespace plumb
