#include "models/spec/training.hpp"

#include <fmt/format.h>

namespace plumb {
namespace {

double dtype_bytes(ObjectReader& r, std::string_view key, double fallback, bool allow_none) {
  std::vector<std::pair<std::string, double>> options{{"fp32", 4.0}, {"bf16", 2.0}, {"fp16", 2.0}};
  if (allow_none) options.emplace_back("none", 0.0);
  return r.choice<double>(key, Need::optional, options).value_or(fallback);
}

// The bytes per element of each unvectorized kernel of one pass, e.g. [6, 8, 4]; they are part of
// the pass's `total` bytes, so they may not add up to more.
std::vector<double> read_unvectorized(ObjectReader& u, std::string_view pass, double total) {
  std::vector<double> out;
  const Json* v = u.child(pass, Need::optional);
  if (!v) return out;
  const std::string pointer = u.pointer(pass);
  if (!v->is_array()) {
    u.error(pass, fmt::format("expected a list of bytes per element, one per kernel (e.g. [6, 8, 4]), found {}", json_brief(*v)));
    return out;
  }
  double sum = 0;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const Json& b = (*v)[i];
    if (!b.is_number() || b.get<double>() <= 0 || b.get<double>() > 1000) {
      u.source().error(json_pointer_append(pointer, std::to_string(i)),
                       fmt::format("expected a kernel's bytes per element, a number in (0, 1000], found {}", json_brief(b)));
      continue;
    }
    out.push_back(b.get<double>());
    sum += out.back();
  }
  if (sum > total + 1e-9)
    u.error(pass, fmt::format("the unvectorized kernels move {} bytes per element, more than the op's {} in this pass; "
                              "they are part of it", sum, total));
  return out;
}

// Bytes per output element of one eager elementwise op: {"forward": B, "backward": B, "unvectorized":
// {"forward": [...], "backward": [...]}}.
std::optional<ElementwiseTraffic> read_traffic(ObjectReader& r, std::string_view key) {
  const Json* v = r.child(key, Need::optional);
  if (!v) return std::nullopt;
  ObjectReader o(*v, r.pointer(key), r.source());
  if (!o.is_object()) return std::nullopt;
  ElementwiseTraffic t;
  t.forward = o.number("forward", Need::required, 0.0, 1000.0).value_or(0);
  t.backward = o.number("backward", Need::required, 0.0, 1000.0).value_or(0);
  if (const Json* u = o.child("unvectorized", Need::optional)) {
    ObjectReader ur(*u, o.pointer("unvectorized"), o.source());
    if (ur.is_object()) {
      t.unvectorized_forward = read_unvectorized(ur, "forward", t.forward);
      t.unvectorized_backward = read_unvectorized(ur, "backward", t.backward);
    }
  }
  return t;
}

std::optional<EagerElementwise> read_eager_elementwise(ObjectReader& r, std::string_view key) {
  const Json* v = r.child(key, Need::optional);
  if (!v) return std::nullopt;
  ObjectReader o(*v, r.pointer(key), r.source());
  if (!o.is_object()) return std::nullopt;
  EagerElementwise e;
  e.attention_norm = read_traffic(o, "attention_norm");
  e.mlp_norm = read_traffic(o, "mlp_norm");
  e.final_norm = read_traffic(o, "final_norm");
  e.rope = read_traffic(o, "rope");
  e.swiglu = read_traffic(o, "swiglu");
  e.residual = read_traffic(o, "residual");
  e.cross_entropy = read_traffic(o, "cross_entropy");
  e.kv_repeat_copy = o.boolean("kv_repeat_copy", Need::optional).value_or(false);
  return e;
}

}  // namespace

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    case Precision::fp8: return "fp8";
  }
  return "?";
}

std::string_view fp8_recipe_name(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::blockwise: return "blockwise";
    case Fp8Recipe::tensorwise: return "tensorwise";
    case Fp8Recipe::rowwise: return "rowwise";
  }
  return "?";
}

std::string_view optimizer_name(OptimizerKind k) { return k == OptimizerKind::muon ? "muon" : "adamw"; }

double weight_bytes(const TrainingSpec& t) { return t.precision == Precision::fp8 && t.fp8_recipe == Fp8Recipe::blockwise ? 3.0 : 2.0; }

const std::vector<std::pair<std::string, AttentionKernel>>& attention_kernel_words() {
  static const std::vector<std::pair<std::string, AttentionKernel>> words{
      {"flash", AttentionKernel::flash}, {"flash2", AttentionKernel::flash2}, {"cudnn", AttentionKernel::cudnn},
      {"unfused", AttentionKernel::unfused}};
  return words;
}

std::string_view attention_kernel_name(AttentionKernel k) {
  for (const auto& [word, kernel] : attention_kernel_words())
    if (kernel == k) return word;
  return "?";
}

TrainingSpec read_training(ObjectReader& r) {
  TrainingSpec t;
  t.seq_len = r.integer("seq_len", Need::required, 1, 100'000'000).value_or(1);
  t.global_batch = r.integer("global_batch", Need::required, 1, 1'000'000'000).value_or(1);
  t.precision = r.choice<Precision>("precision", Need::optional,
                                    {{"bf16", Precision::bf16}, {"fp16", Precision::fp16}, {"fp8", Precision::fp8}})
                    .value_or(Precision::bf16);
  t.attention_kernel = r.choice<AttentionKernel>("attention_kernel", Need::optional, attention_kernel_words()).value_or(AttentionKernel::flash);
  const auto accumulation = r.choice<int>("grad_accumulation", Need::optional, {{"fused", 0}, {"separate", 1}, {"autograd", 2}}).value_or(0);
  t.fused_grad_accumulation = accumulation == 0;
  t.grad_accumulation_skips_first = accumulation == 2;
  t.fused_cross_entropy = r.choice<bool>("cross_entropy", Need::optional, {{"fused", true}, {"fp32_upcast", false}}).value_or(true);
  t.separate_projections = r.choice<bool>("projections", Need::optional, {{"fused", false}, {"separate", true}}).value_or(false);
  t.eager_elementwise = read_eager_elementwise(r, "eager_elementwise");
  t.compiled_elementwise = read_eager_elementwise(r, "compiled_elementwise");
  t.compiled = r.boolean("compile", Need::optional).value_or(false);
  t.host_overhead = r.quantity("host_overhead", Dimension::time, Need::optional).value_or(0.0);
  if (t.host_overhead > 0.1)
    r.error("host_overhead", fmt::format("the host's time a kernel must be at most 100 ms (e.g. \"20us\"), not {} s", t.host_overhead));
  t.grouped_gemm_streams = r.integer("grouped_gemm_streams", Need::optional, 0, 128).value_or(0);
  t.expert_weight_bytes = r.choice<double>("expert_weights", Need::optional, {{"as_inputs", 0.0}, {"fp4", 0.5 + 1.0 / 32.0}}).value_or(0.0);
  t.fp8_gemm_inputs = t.precision == Precision::fp8;
  if (r.child("fp8_recipe", Need::optional)) {
    t.fp8_recipe = r.choice<Fp8Recipe>("fp8_recipe", Need::optional,
                                       {{"blockwise", Fp8Recipe::blockwise}, {"tensorwise", Fp8Recipe::tensorwise}, {"rowwise", Fp8Recipe::rowwise}})
                       .value_or(Fp8Recipe::blockwise);
    if (t.precision != Precision::fp8)
      r.error("fp8_recipe", fmt::format("an fp8 recipe needs \"precision\": \"fp8\", not \"{}\"", precision_name(t.precision)));
  }
  if (const Json* cache = r.child("fp8_cache", Need::optional)) {
    std::string pointer = r.pointer("fp8_cache");
    t.fp8_gemm_inputs = false;
    if (t.precision != Precision::fp8)
      r.error("fp8_cache", fmt::format("caching activations in fp8 needs \"precision\": \"fp8\", not \"{}\"",
                                       precision_name(t.precision)));
    if (!cache->is_array()) r.error("fp8_cache", "expected a list such as [\"gemm_inputs\", \"swiglu_inputs\"] (or [])");
    else
      for (std::size_t i = 0; i < cache->size(); ++i) {
        const Json& item = (*cache)[i];
        if (item == "gemm_inputs") t.fp8_gemm_inputs = true;
        else if (item == "swiglu_inputs") t.fp8_swiglu_inputs = true;
        else
          r.source().error(json_pointer_append(pointer, std::to_string(i)),
                           fmt::format("{} is not \"gemm_inputs\" or \"swiglu_inputs\"", json_brief(item)));
      }
  }
  t.tokens = r.quantity("tokens", Dimension::count, Need::optional).value_or(0);
  t.price_per_gpu_hour = r.number("price_per_gpu_hour", Need::optional, 0.0, 1e6).value_or(0);
  t.reserved_memory = r.quantity("reserved_memory", Dimension::bytes, Need::optional).value_or(0);
  if (const Json* imbalance = r.child("moe_imbalance", Need::optional)) {
    if (*imbalance == "balanced") t.moe_imbalance = 1.0;
    else if (*imbalance == "sampled") t.sampled_routing = true;
    else if (imbalance->is_string())
      r.error("moe_imbalance", fmt::format("expected \"balanced\", \"sampled\" or a max/mean load ≥ 1, found {}", json_brief(*imbalance)));
    else t.moe_imbalance = r.number("moe_imbalance", Need::optional, 1.0, 1e3).value_or(1.0);
  }
  t.failures_per_gpu_hour = r.number("failures_per_gpu_hour", Need::optional, 0.0, 1.0).value_or(t.failures_per_gpu_hour);
  t.checkpoint_bandwidth = r.quantity("checkpoint_bandwidth", Dimension::bandwidth, Need::optional).value_or(t.checkpoint_bandwidth);
  t.restart_time = r.quantity("restart_time", Dimension::time, Need::optional).value_or(t.restart_time);
  t.routing_seed = static_cast<std::uint64_t>(r.integer("routing_seed", Need::optional, 0, 1'000'000'000).value_or(0));
  if (const Json* opt = r.child("optimizer", Need::optional)) {
    const std::vector<std::pair<std::string, OptimizerKind>> kinds{{"adamw", OptimizerKind::adamw}, {"muon", OptimizerKind::muon}};
    if (opt->is_string()) {  // the short form: "optimizer": "muon"
      t.optimizer_kind = r.choice<OptimizerKind>("optimizer", Need::optional, kinds).value_or(OptimizerKind::adamw);
    } else {
      ObjectReader o(*opt, r.pointer("optimizer"), r.source());
      t.optimizer_kind = o.choice<OptimizerKind>("kind", Need::optional, kinds).value_or(OptimizerKind::adamw);
      t.optimizer.grads = dtype_bytes(o, "grads", 2.0, false);
      t.optimizer.master = dtype_bytes(o, "master_weights", 4.0, true);
      t.optimizer.moments = 2.0 * dtype_bytes(o, "moments", 4.0, false);
      t.optimizer.params_are_master = o.boolean("params_are_master", Need::optional).value_or(t.optimizer.params_are_master);
      if (t.optimizer.params_are_master && t.optimizer.master == 0)
        o.error("params_are_master", "parameters that are the master weights need \"master_weights\": \"fp32\" (or \"bf16\"), not \"none\"");
      if (const Json* passes = o.child("step_passes", Need::optional)) {
        ObjectReader sp(*passes, o.pointer("step_passes"), o.source());
        if (sp.is_object()) {
          OptimizerStepPasses& x = t.optimizer.step_passes;
          x.grad_buffer = sp.number("grad_buffer", Need::optional, 0.0, 1000.0).value_or(0.0);
          x.grad_prescale = sp.number("grad_prescale", Need::optional, 0.0, 1000.0).value_or(0.0);
          x.shard = sp.number("shard", Need::optional, 0.0, 1000.0).value_or(0.0);
        }
      }
      MuonSpec& mu = t.muon;
      mu.newton_schulz_steps = o.integer("newton_schulz_steps", Need::optional, 1, 100).value_or(mu.newton_schulz_steps);
      mu.momentum_bytes = dtype_bytes(o, "momentum", 4.0, false);
      mu.matrices_per_rank = o.integer("matrices_per_rank", Need::optional, 1, 1'000'000).value_or(mu.matrices_per_rank);
      mu.dense_zero_cap = o.integer("dense_zero_cap", Need::optional, 0, 100'000'000).value_or(0);
      mu.bf16_expert_grads =
          o.choice<bool>("expert_grads", Need::optional, {{"bf16_all_to_all", true}, {"reduce_scatter", false}}).value_or(true);
      if (t.optimizer_kind == OptimizerKind::adamw)
        for (const char* key : {"newton_schulz_steps", "momentum", "matrices_per_rank", "dense_zero_cap", "expert_grads"})
          if (o.child(key, Need::optional)) o.error(key, fmt::format("\"{}\" is a Muon setting: add \"kind\": \"muon\" or remove it", key));
    }
  }
  return t;
}

}  // namespace plumb
