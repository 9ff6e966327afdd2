#include "validate/imports/megatron_args.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "models/input/diagnostics.hpp"

namespace plumb {

namespace {

// Megatron-LM's switches (store_true arguments) that plumb reads or knows: they never take a value.
const std::set<std::string>& switches() {
  static const std::set<std::string> names = {
      "--sequence-parallel", "--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-p2p-communication", "--overlap-param-gather",
      "--bf16", "--fp16", "--swiglu", "--untie-embeddings-and-output-weights", "--disable-bias-linear", "--no-gradient-accumulation-fusion",
      "--use-mcore-models", "--group-query-attention", "--use-flash-attn", "--log-throughput", "--tp-comm-overlap", "--mock-data",
      "--cross-entropy-loss-fusion", "--moe-grouped-gemm", "--use-rotary-position-embeddings", "--manual-gc", "--no-masked-softmax-fusion",
      "--log-timers-to-tensorboard", "--log-memory-to-tensorboard", "--no-load-optim", "--no-load-rng", "--attention-softmax-in-fp32",
      "--accumulate-allreduce-grads-in-fp32", "--bias-swiglu-fusion", "--no-bias-swiglu-fusion", "--use-torch-fsdp2"};
  return names;
}

struct Flag {
  std::string name, value;  // value empty for a switch
  std::size_t position = 0; // 1-based among the arguments
};

// The script's words: backslash-newlines joined, comments dropped, quotes honoured; "--a=b" split.
std::vector<Flag> flags_of(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false, comment = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (comment) {
      if (c == '\n') comment = false;
      continue;
    }
    if (quote) {
      if (c == quote) quote = 0;
      else word += c;
      continue;
    }
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c, in_word = true;
      continue;
    }
    if (c == '#' && !in_word) {
      comment = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c)) || ((c == '(' || c == ')') && !in_word)) {
      if (in_word) words.push_back(word), word.clear(), in_word = false;
      continue;
    }
    word += c, in_word = true;
  }
  if (in_word) words.push_back(word);
  for (std::string& w : words)
    if (w.size() > 1 && w.back() == ')' && w.find('(') == std::string::npos) w.pop_back();
  std::erase_if(words, [](const std::string& w) { return w == ")" || w == "("; });
  // Shell variables set in the script (NAME=value) are put in where later words use them ($NAME, ${NAME}).
  static const std::regex assignment("^([A-Za-z_][A-Za-z0-9_]*)=([^(].*)$"), use("\\$\\{?([A-Za-z_][A-Za-z0-9_]*)\\}?");
  std::map<std::string, std::string> variables;
  for (std::string& w : words) {
    std::string expanded;
    auto last = w.cbegin();
    for (std::sregex_iterator it(w.begin(), w.end(), use), end; it != end; ++it) {
      auto v = variables.find((*it)[1].str());
      expanded.append(last, (*it)[0].first);
      expanded += v != variables.end() ? v->second : (*it)[0].str();
      last = (*it)[0].second;
    }
    expanded.append(last, w.cend());
    w = expanded;
    std::smatch m;
    if (std::regex_match(w, m, assignment)) variables[m[1].str()] = m[2].str();
  }
  std::vector<Flag> flags;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i].rfind("--", 0) != 0) continue;
    Flag f{words[i], "", i + 1};
    if (const std::size_t eq = f.name.find('='); eq != std::string::npos) {
      f.value = f.name.substr(eq + 1);
      f.name = f.name.substr(0, eq);
    } else {
      // torchrun spells them with underscores as well.
      for (char& c : f.name)
        if (c == '_') c = '-';
      // A switch takes no value; nor is a shell assignment or a script one.
      static const std::regex not_a_value("^([A-Za-z_][A-Za-z0-9_]*=.*|.*\\.(py|sh))$");
      if (!switches().count(f.name) && i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0 && !std::regex_match(words[i + 1], not_a_value))
        f.value = words[++i];
    }
    for (char& c : f.name)
      if (c == '_') c = '-';
    flags.push_back(f);
  }
  return flags;
}

// Flags known not to change what plumb models: data, logging, checkpoints, the learning-rate schedule,
// initialisation, kernels plumb prices by its profiles.
const std::set<std::string>& ignored_flags() {
  static const std::set<std::string> names = {
      "--data-path", "--split", "--lr", "--min-lr", "--lr-decay-style", "--lr-warmup-iters", "--lr-warmup-fraction",
      "--lr-decay-iters", "--lr-warmup-samples", "--lr-decay-samples", "--weight-decay", "--clip-grad", "--adam-beta1", "--adam-beta2",
      "--adam-eps", "--init-method-std", "--log-interval", "--save", "--load", "--save-interval", "--eval-interval", "--eval-iters",
      "--tensorboard-dir", "--train-iters", "--train-samples", "--seed", "--tokenizer-type", "--tokenizer-model", "--vocab-file",
      "--merge-file", "--distributed-backend", "--log-throughput", "--timing-log-level", "--no-masked-softmax-fusion", "--use-flash-attn",
      "--attention-backend", "--transformer-impl", "--use-mcore-models", "--exit-duration-in-mins", "--wandb-project", "--wandb-exp-name",
      "--dataloader-type", "--num-workers", "--rotary-base", "--rotary-percent", "--norm-epsilon", "--make-vocab-size-divisible-by",
      "--manual-gc", "--use-rotary-position-embeddings", "--no-load-optim", "--no-load-rng", "--log-timers-to-tensorboard",
      "--log-memory-to-tensorboard", "--log-validation-ppl-to-tensorboard", "--mock-data", "--no-create-attention-mask-in-dataloader",
      "--cross-entropy-loss-fusion", "--bias-swiglu-fusion", "--no-bias-swiglu-fusion", "--moe-token-dispatcher-type",
      "--moe-router-load-balancing-type", "--moe-aux-loss-coeff", "--moe-router-dtype", "--ckpt-format",
      "--master-addr", "--master-port", "--node-rank", "--rdzv-backend", "--rdzv-endpoint", "--rdzv-id", "--overlap-param-gather",
      "--tp-comm-overlap", "--use-torch-fsdp2", "--recompute-method", "--group-query-attention", "--use-distributed-optimizer-overlap",
      "--attention-softmax-in-fp32", "--accumulate-allreduce-grads-in-fp32", "--fp8-amax-history-len", "--fp8-amax-compute-algo",
      "--fp8-recipe", "--first-last-layers-bf16", "--no-gradient-accumulation-fusion-warning"};
  return names;
}

}  // namespace

ScenarioImport import_megatron(const std::string& text, const std::string& file, const ImportOptions& options) {
  ScenarioImport out;
  std::vector<Diagnostic> problems;
  if (std::size_t at = 0; !valid_utf8(text, &at)) {  // its values become JSON strings
    const auto line = static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n')) + 1;
    throw InputError({{file, fmt::format("line {}", line), fmt::format("byte {} is not valid UTF-8; launch scripts are read as UTF-8 text", at + 1)}});
  }
  auto problem = [&](const Flag& f, const std::string& message) {
    problems.push_back({file, fmt::format("{} (argument {})", f.name, f.position), message});
  };
  Json model = {{"name", "imported"}, {"position_embedding", "learned"}, {"norm", "layernorm"}, {"bias", true}, {"dropout", true},
                {"tied_embeddings", true}, {"attention", {{"kind", "mha"}}}, {"mlp", {{"kind", "gelu"}}}};
  Json parallel = Json::object(), training = {{"precision", "fp32"}};
  std::optional<std::int64_t> nodes, per_node, layers_per_virtual, virtual_stages, recompute_layers, query_groups, optimizer_instances;
  std::string recompute = "none";
  bool bf16 = false, fp16 = false;
  std::map<std::string, Flag> seen;
  for (const Flag& f : flags_of(text)) {
    if (auto earlier = seen.find(f.name); earlier != seen.end() && earlier->second.value != f.value)
      problem(f, fmt::format("given twice, {} and {}: keep one", earlier->second.value.empty() ? "as a switch" : earlier->second.value,
                             f.value.empty() ? "as a switch" : f.value));
    seen[f.name] = f;
    auto integer = [&](std::int64_t low) -> std::optional<std::int64_t> {
      try {
        std::size_t used = 0;
        const long long v = std::stoll(f.value, &used);
        if (used == f.value.size() && v >= low && v <= 1'000'000'000) return v;
      } catch (const std::exception&) {
      }
      problem(f, fmt::format("expected a whole number of at least {}, found \"{}\"", low, f.value));
      return std::nullopt;
    };
    auto set = [&](Json& section, const std::string& key, const Json& value, const std::string& field) {
      section[key] = value;
      out.set_by.push_back(fmt::format("{}{} → {}", f.name, f.value.empty() ? "" : " " + f.value, field));
    };
    auto count = [&](Json& section, const std::string& key, const std::string& field, std::int64_t low = 1) {
      if (auto v = integer(low)) set(section, key, *v, field);
    };
    const std::string& n = f.name;
    if (n == "--tensor-model-parallel-size") count(parallel, "tp", "parallel.tp");
    else if (n == "--pipeline-model-parallel-size") count(parallel, "pp", "parallel.pp");
    else if (n == "--context-parallel-size") count(parallel, "cp", "parallel.cp");
    else if (n == "--expert-model-parallel-size") count(parallel, "ep", "parallel.ep");
    else if (n == "--expert-tensor-parallel-size") count(parallel, "etp", "parallel.etp");
    else if (n == "--num-layers-per-virtual-pipeline-stage") layers_per_virtual = integer(1);
    else if (n == "--virtual-pipeline-model-parallel-size") virtual_stages = integer(1);
    else if (n == "--sequence-parallel") set(parallel, "sequence_parallel", true, "parallel.sequence_parallel");
    else if (n == "--use-distributed-optimizer") set(parallel, "zero", 1, "parallel.zero");
    else if (n == "--num-distributed-optimizer-instances") optimizer_instances = integer(1);
    else if (n == "--overlap-grad-reduce") set(parallel, "overlap_grad_reduce", true, "parallel.overlap_grad_reduce");
    else if (n == "--overlap-p2p-communication") set(parallel, "overlap_p2p", true, "parallel.overlap_p2p");
    else if (n == "--micro-batch-size") count(parallel, "micro_batch", "parallel.micro_batch");
    else if (n == "--global-batch-size") count(training, "global_batch", "training.global_batch");
    else if (n == "--seq-length") count(training, "seq_len", "training.seq_len");
    else if (n == "--recompute-granularity") {
      if (f.value != "full" && f.value != "selective") problem(f, fmt::format("\"{}\" is not full or selective", f.value));
      else recompute = f.value;
    } else if (n == "--recompute-num-layers") recompute_layers = integer(0);
    else if (n == "--bf16") bf16 = true;
    else if (n == "--fp16") fp16 = true;
    else if (n == "--fp8-format") set(training, "precision", "fp8", "training.precision");
    else if (n == "--no-gradient-accumulation-fusion") set(training, "grad_accumulation", "separate", "training.grad_accumulation");
    else if (n == "--num-layers") count(model, "layers", "model.layers");
    else if (n == "--hidden-size") count(model, "hidden", "model.hidden");
    else if (n == "--ffn-hidden-size") { if (auto v = integer(1)) set(model["mlp"], "ffn_hidden", *v, "model.mlp.ffn_hidden"); }
    else if (n == "--num-attention-heads") { if (auto v = integer(1)) set(model["attention"], "heads", *v, "model.attention.heads"); }
    else if (n == "--num-query-groups") query_groups = integer(1);
    else if (n == "--kv-channels") { if (auto v = integer(1)) set(model["attention"], "head_dim", *v, "model.attention.head_dim"); }
    else if (n == "--max-position-embeddings") count(model, "max_seq", "model.max_seq");
    else if (n == "--vocab-size" || n == "--padded-vocab-size") count(model, "vocab", "model.vocab");
    else if (n == "--swiglu") set(model["mlp"], "kind", "swiglu", "model.mlp.kind");
    else if (n == "--normalization") {
      if (f.value == "RMSNorm") set(model, "norm", "rmsnorm", "model.norm");
      else if (f.value == "LayerNorm") set(model, "norm", "layernorm", "model.norm");
      else problem(f, fmt::format("\"{}\" is not RMSNorm or LayerNorm", f.value));
    } else if (n == "--position-embedding-type") {
      if (f.value == "rope") set(model, "position_embedding", "rope", "model.position_embedding");
      else if (f.value == "learned_absolute") set(model, "position_embedding", "learned", "model.position_embedding");
      else problem(f, fmt::format("\"{}\" is not rope or learned_absolute", f.value));
    } else if (n == "--untie-embeddings-and-output-weights") set(model, "tied_embeddings", false, "model.tied_embeddings");
    else if (n == "--disable-bias-linear") set(model, "bias", false, "model.bias");
    else if (n == "--attention-dropout" || n == "--hidden-dropout") {
      if (f.value == "0" || f.value == "0.0") set(model, "dropout", false, "model.dropout");
    } else if (n == "--num-experts") { if (auto v = integer(1)) set(model["moe"], "experts", *v, "model.moe.experts"); }
    else if (n == "--moe-router-topk") { if (auto v = integer(1)) set(model["moe"], "top_k", *v, "model.moe.top_k"); }
    else if (n == "--moe-ffn-hidden-size") { if (auto v = integer(1)) set(model["moe"], "expert_ffn_hidden", *v, "model.moe.expert_ffn_hidden"); }
    else if (n == "--moe-grouped-gemm") out.set_by.push_back("--moe-grouped-gemm: the framework's grouped GEMM (training.grouped_gemm_streams)");
    else if (n == "--nnodes") nodes = integer(1);
    else if (n == "--nproc-per-node") per_node = integer(1);
    else if (ignored_flags().count(n)) out.ignored.push_back(n);
    else out.unknown.push_back(f.value.empty() ? n : n + " " + f.value);
  }
  if (bf16 && fp16) problem(seen.at("--fp16"), "--bf16 and --fp16 both given: Megatron-LM trains in one of them");
  if (training["precision"] != "fp8") training["precision"] = bf16 ? "bf16" : fp16 ? "fp16" : "fp32";
  if (training["precision"] == "fp32") out.assumptions.push_back("neither --bf16 nor --fp16: fp32 training, as Megatron-LM does without them");
  // Attention: Megatron's query groups are GQA's key-value heads.
  if (query_groups) {
    model["attention"]["kind"] = "gqa";
    model["attention"]["kv_heads"] = *query_groups;
    out.set_by.push_back(fmt::format("--num-query-groups {} → model.attention.kv_heads", *query_groups));
  }
  if (!model["mlp"].contains("ffn_hidden") && model.contains("hidden")) {
    model["mlp"]["ffn_hidden"] = 4 * model["hidden"].get<std::int64_t>();
    out.assumptions.push_back("no --ffn-hidden-size: 4 × hidden, Megatron-LM's default");
  }
  if (model.contains("moe") && !model["moe"].contains("expert_ffn_hidden") && model["mlp"].contains("ffn_hidden"))
    model["moe"]["expert_ffn_hidden"] = model["mlp"]["ffn_hidden"];
  // Without --moe-grouped-gemm Megatron-Core builds SequentialMLP, which runs the local experts one after
  // another (core_r0.14.0 megatron/core/transformer/moe/experts.py): one GEMM an expert on one stream. With
  // it, the framework profile's grouped GEMM (Transformer Engine's four streams) stands.
  if (model.contains("moe") && !seen.count("--moe-grouped-gemm")) {
    training["grouped_gemm_streams"] = 1;
    out.set_by.push_back("no --moe-grouped-gemm: Megatron-Core's SequentialMLP, the experts one after another → training.grouped_gemm_streams 1");
  }
  if (model["position_embedding"] == "learned" && !model.contains("max_seq") && training.contains("seq_len"))
    model["max_seq"] = training["seq_len"];
  if (!model.contains("vocab") && options.vocab > 0) {
    model["vocab"] = options.vocab;
    out.set_by.push_back(fmt::format("--vocab {} (plumb import) → model.vocab", options.vocab));
  }
  if (!model.contains("vocab"))
    problems.push_back({file, "", "no --vocab-size: Megatron-LM takes the vocabulary from the tokenizer, which plumb cannot read; give "
                                  "plumb import --vocab N (the tokenizer's size, padded as Megatron pads it)"});
  // Recomputation: none unless a granularity is given, and none with --recompute-num-layers 0.
  if (recompute_layers && *recompute_layers == 0) recompute = "none";
  parallel["recompute"] = recompute;
  if (seen.count("--recompute-granularity"))
    out.set_by.push_back(fmt::format("--recompute-granularity {} → parallel.recompute \"{}\"", seen.at("--recompute-granularity").value, recompute));
  if (bf16 || fp16) out.set_by.push_back(fmt::format("--{} → training.precision \"{}\"", bf16 ? "bf16" : "fp16", training["precision"].get<std::string>()));
  if (nodes) out.set_by.push_back(fmt::format("--nnodes {} → cluster.nodes", *nodes));
  if (per_node) out.set_by.push_back(fmt::format("--nproc-per-node {}: GPUs per node", *per_node));
  if (recompute == "full" && recompute_layers && model.contains("layers") && *recompute_layers < model["layers"].get<std::int64_t>())
    out.assumptions.push_back(fmt::format("--recompute-num-layers {}: plumb recomputes every layer under full recomputation", *recompute_layers));
  // Virtual stages: the interleaved schedule.
  const std::int64_t pp = parallel.value("pp", std::int64_t{1});
  if (layers_per_virtual && model.contains("layers")) {
    const std::int64_t layers = model["layers"].get<std::int64_t>();
    if (layers % (pp * *layers_per_virtual) != 0)
      problem(seen.at("--num-layers-per-virtual-pipeline-stage"),
              fmt::format("{} layers are not a multiple of pp {} × {}", layers, pp, *layers_per_virtual));
    else {
      const std::int64_t vp = layers / (pp * *layers_per_virtual);
      if (virtual_stages && *virtual_stages != vp)
        problem(seen.at("--virtual-pipeline-model-parallel-size"),
                fmt::format("says {} virtual stages, --num-layers-per-virtual-pipeline-stage {} makes {}", *virtual_stages, *layers_per_virtual, vp));
      virtual_stages = vp;
    }
  }
  parallel["schedule"] = virtual_stages && *virtual_stages > 1 ? "interleaved" : "1f1b";
  if (virtual_stages && *virtual_stages > 1) {
    parallel["vp"] = *virtual_stages;
    out.set_by.push_back(fmt::format("virtual stages → parallel.vp {}, parallel.schedule \"interleaved\"", *virtual_stages));
  }
  // The cluster: the launcher's nodes and GPUs per node, or the options'.
  const std::int64_t gpus_per_node = per_node.value_or(options.gpus_per_node);
  const std::int64_t node_count = options.nodes > 0 ? options.nodes : nodes.value_or(0);
  const std::int64_t model_parallel = parallel.value("tp", std::int64_t{1}) * pp * parallel.value("cp", std::int64_t{1});
  if (node_count == 0) {
    problems.push_back({file, "", "no --nnodes (torchrun) in the launch: give plumb import --nodes N"});
  } else if ((node_count * gpus_per_node) % model_parallel != 0) {
    problems.push_back({file, "", fmt::format("{} nodes × {} GPUs are not a multiple of tp × pp × cp = {}", node_count, gpus_per_node, model_parallel)});
  } else {
    const std::int64_t dp = node_count * gpus_per_node / model_parallel;
    parallel["dp"] = dp;
    // Copies of the distributed optimizer over the data-parallel ranks: HSDP shard groups of dp / copies.
    if (optimizer_instances && *optimizer_instances > 1) {
      if (dp % *optimizer_instances != 0)
        problems.push_back({file, "", fmt::format("--num-distributed-optimizer-instances {} does not divide the {} data-parallel ranks",
                                                  *optimizer_instances, dp)});
      else {
        parallel["dp_shard"] = dp / *optimizer_instances;
        out.set_by.push_back(fmt::format("--num-distributed-optimizer-instances {} → parallel.dp_shard {}", *optimizer_instances,
                                         dp / *optimizer_instances));
      }
    }
  }
  if (gpus_per_node != options.gpus_per_node)
    out.assumptions.push_back(fmt::format("{} GPUs per node (--nproc-per-node) with the fabric {}: check that it has as many", gpus_per_node,
                                          options.fabric));
  if (!problems.empty()) throw InputError(problems);
  out.scenario = {{"name", fmt::format("imported from {}", file)},
                  {"description", fmt::format("plumb import megatron {}: the Megatron-LM launch as a scenario", file)},
                  {"framework", "megatron-core-2026-01"},
                  {"model", model},
                  {"cluster", {{"gpu", options.gpu}, {"nodes", node_count}, {"fabric", options.fabric}}},
                  {"parallel", parallel},
                  {"training", training}};
  return out;
}

}  // namespace plumb
