#include "models/plan/plan_space.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "models/parallel/placement.hpp"

namespace plumb {
namespace {

// Powers of two from 1 to `limit`, plus `own` (the scenario's value), sorted and unique.
std::vector<std::int64_t> powers_of_two(std::int64_t limit, std::int64_t own) {
  std::vector<std::int64_t> out{own};
  for (std::int64_t v = 1; v <= limit; v *= 2) out.push_back(v);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

class PlanReader {
 public:
  PlanReader(const Job& base, const SourceFile& src) : plan_(base.plan), src_(src) {}

  const Json* list(const char* key) const {
    if (plan_.is_null() || !plan_.contains(key)) return nullptr;
    return &plan_.at(key);
  }
  std::string at(const char* key, std::size_t i) const { return json_pointer_append(json_pointer_append("/plan", key), std::to_string(i)); }

  // Items of /plan/key: a list, or one value standing for a list of one.
  template <class F>
  void each(const char* key, F&& read) const {
    const Json* v = list(key);
    if (!v) return;
    if (!v->is_array()) return read(*v, json_pointer_append("/plan", key));
    if (v->empty()) src_.error(json_pointer_append("/plan", key), "expected at least one alternative");
    for (std::size_t i = 0; i < v->size(); ++i) read((*v)[i], at(key, i));
  }

  std::vector<std::int64_t> sizes(const char* key, std::vector<std::int64_t> fallback) const {
    if (!list(key)) return fallback;
    std::vector<std::int64_t> out;
    // {"from": a, "to": b}: a, 2a, 4a, … up to b.
    if (const Json& v = *list(key); v.is_object()) {
      std::string at = json_pointer_append("/plan", key);
      ObjectReader r(v, at, src_);
      std::int64_t from = r.integer("from", Need::required, 1, 1'000'000'000).value_or(1);
      std::int64_t to = r.integer("to", Need::required, 1, 1'000'000'000).value_or(1);
      if (to < from) r.error("to", fmt::format("{} is below from {}", to, from));
      for (std::int64_t x = from; x <= to; x *= 2) out.push_back(x);
      return out;
    }
    each(key, [&](const Json& v, const std::string& pointer) {
      if (!v.is_number_integer() || v.get<std::int64_t>() < (std::string_view(key) == "zero" ? 0 : 1))
        src_.error(pointer, fmt::format("expected a positive whole number, found {}", json_brief(v)));
      else
        out.push_back(v.get<std::int64_t>());
    });
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  template <class E>
  std::vector<E> words(const char* key, const std::vector<std::pair<std::string, E>>& options, std::vector<E> fallback) const {
    if (!list(key)) return fallback;
    std::vector<E> out;
    std::vector<std::string> names;
    for (const auto& [name, _] : options) names.push_back(name);
    each(key, [&](const Json& v, const std::string& pointer) {
      if (v == "all") {
        for (const auto& [_, e] : options) out.push_back(e);
        return;
      }
      auto it = std::find_if(options.begin(), options.end(), [&](const auto& o) { return v.is_string() && o.first == v.get<std::string>(); });
      if (it != options.end()) return out.push_back(it->second);
      std::string hint = v.is_string() ? nearest_word(v.get<std::string>(), names) : "";
      src_.error(pointer, fmt::format("{} is not one of {}{}", json_brief(v), fmt::join(names, ", "),
                                      hint.empty() ? "" : fmt::format("; did you mean \"{}\"?", hint)));
    });
    std::vector<E> unique;
    for (E e : out)
      if (std::find(unique.begin(), unique.end(), e) == unique.end()) unique.push_back(e);
    return unique;
  }

 private:
  const Json& plan_;
  const SourceFile& src_;
};

const std::vector<std::pair<std::string, Precision>>& precision_names() {
  static const std::vector<std::pair<std::string, Precision>> names{
      {"bf16", Precision::bf16}, {"fp16", Precision::fp16}, {"fp8", Precision::fp8}};
  return names;
}

}  // namespace

std::uint64_t PlanSpace::size() const {
  std::uint64_t n = 1;
  for (std::size_t k : {gpus.size(), tp.size(), pp.size(), vp.size(), cp.size(), ep.size(), etp.size(), micro_batch.size(),
                        zero.size(), schedule.size(), moe_execution.size(), cp_comm.size(), recompute.size(), precision.size(), gpu.size(),
                        fabric.size(), dp_shard.size()})
    n *= k;
  return n;
}

PlanSpace read_plan_space(const Job& base) {
  Diagnostics diagnostics;
  SourceFile src{base.file, std::filesystem::path(base.file).parent_path(), &diagnostics, {}};
  PlanSpace s;
  if (!base.plan.is_null() && !base.plan.is_object()) {
    src.error("/plan", fmt::format("expected an object of alternatives, found {}", json_brief(base.plan)));
    diagnostics.throw_if_any();
  }
  PlanReader r(base, src);
  const ParallelLayout& p = base.layout;
  const std::int64_t gpn = base.cluster.fabric.gpus_per_node;
  s.gpus = r.sizes("gpus", {base.cluster.gpus()});
  s.tp = r.sizes("tp", powers_of_two(gpn, p.tp));
  s.pp = r.sizes("pp", powers_of_two(32, p.pp));
  s.vp = r.sizes("vp", powers_of_two(2, p.vp));
  s.cp = r.sizes("cp", {p.cp});
  s.ep = r.sizes("ep", base.model.moe ? powers_of_two(std::min<std::int64_t>(64, base.model.moe->experts), p.ep) : std::vector<std::int64_t>{1});
  s.etp = r.sizes("etp", {p.etp});
  s.micro_batch = r.sizes("micro_batch", powers_of_two(4, p.micro_batch));
  for (std::int64_t z : r.sizes("zero", {0, 1, 2, 3})) {
    if (z > 3) src.error("/plan/zero", fmt::format("ZeRO stage {} does not exist (0–3)", z));
    s.zero.push_back(static_cast<int>(z));
  }
  s.dp_shard = r.sizes("dp_shard", {p.dp_shard});
  std::vector<ScheduleKind> all;
  for (const auto& [_, k] : schedule_names()) all.push_back(k);
  s.schedule = r.words<ScheduleKind>("schedule", schedule_names(), all);
  const std::vector<std::pair<std::string, MoeExecution>> moe_words{{"separate", MoeExecution::separate}, {"waves", MoeExecution::waves}};
  s.moe_execution = r.words<MoeExecution>("moe_execution", moe_words,
                                          base.model.moe ? std::vector<MoeExecution>{MoeExecution::separate, MoeExecution::waves}
                                                         : std::vector<MoeExecution>{MoeExecution::separate});
  s.cp_comm = r.words<CpComm>("cp_comm", cp_comm_words(), {p.cp_comm});
  s.precision = r.words<Precision>("precision", precision_names(), {base.training.precision});
  // Recomputation: the scenario's own choice plus none, selective and full.
  auto add_recompute = [&](const Recompute& rc) {
    if (std::none_of(s.recompute.begin(), s.recompute.end(), [&](const Recompute& o) { return o.label == rc.label; }))
      s.recompute.push_back(rc);
  };
  if (r.list("recompute")) {
    r.each("recompute", [&](const Json& v, const std::string& pointer) { add_recompute(read_recompute(v, pointer, src)); });
  } else {
    add_recompute(p.recompute);
    for (const char* word : {"none", "selective", "full"}) add_recompute(read_recompute(Json(word), "/plan/recompute", src));
  }
  if (r.list("gpu")) {
    r.each("gpu", [&](const Json& v, const std::string& pointer) {
      if (auto g = read_gpu(v, pointer, src)) s.gpu.push_back(*g);
    });
  } else {
    s.gpu.push_back(base.cluster.gpu);
  }
  if (r.list("fabric")) {
    r.each("fabric", [&](const Json& v, const std::string& pointer) {
      if (auto f = read_fabric(v, pointer, src)) s.fabric.push_back(*f);
    });
  } else {
    s.fabric.push_back(base.cluster.fabric);
  }
  if (const Json* v = r.list("top")) {
    if (!v->is_number_integer() || v->get<std::int64_t>() < 0) src.error("/plan/top", fmt::format("expected a whole number ≥ 0, found {}", json_brief(*v)));
    else s.top = v->get<std::int64_t>();
  }
  if (const Json* v = r.list("max_days")) {
    if (!v->is_number() || v->get<double>() <= 0) src.error("/plan/max_days", fmt::format("expected a number of days > 0, found {}", json_brief(*v)));
    else s.max_days = v->get<double>();
  }
  if (const Json* v = r.list("objective")) {
    if (*v == "cost") s.cheapest = true;
    else if (*v != "time") src.error("/plan/objective", fmt::format("expected \"time\" or \"cost\", found {}", json_brief(*v)));
  }
  if (base.plan.is_object()) {
    static const std::vector<std::string> keys{"gpus", "tp", "pp", "vp", "cp", "ep", "etp", "micro_batch", "zero", "dp_shard", "schedule",
                                               "moe_execution", "cp_comm", "recompute", "precision", "gpu", "fabric", "top", "max_days",
                                               "objective"};
    for (const auto& [key, _] : base.plan.items())
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        std::string hint = nearest_word(key, keys);
        src.error(json_pointer_append("/plan", key),
                  fmt::format("unknown key{}", hint.empty() ? "" : fmt::format("; did you mean \"{}\"?", hint)));
      }
  }
  diagnostics.throw_if_any();
  return s;
}

PlanPoint point_at(const PlanSpace& s, std::uint64_t index) {
  PlanPoint p;
  // Mixed radix, the last field fastest; hardware and cluster size vary slowest.
  auto take = [&](std::uint32_t& field, std::size_t n) {
    field = static_cast<std::uint32_t>(index % n);
    index /= n;
  };
  take(p.micro_batch, s.micro_batch.size());
  take(p.recompute, s.recompute.size());
  take(p.zero, s.zero.size());
  take(p.dp_shard, s.dp_shard.size());
  take(p.vp, s.vp.size());
  take(p.schedule, s.schedule.size());
  take(p.moe_execution, s.moe_execution.size());
  take(p.etp, s.etp.size());
  take(p.ep, s.ep.size());
  take(p.cp_comm, s.cp_comm.size());
  take(p.cp, s.cp.size());
  take(p.pp, s.pp.size());
  take(p.tp, s.tp.size());
  take(p.precision, s.precision.size());
  take(p.fabric, s.fabric.size());
  take(p.gpu, s.gpu.size());
  take(p.gpus, s.gpus.size());
  return p;
}

namespace {
// The schedule that stands for all the non-overlapping ones at pp 1: 1F1B where the space has it,
// else the first such schedule in the space.
ScheduleKind pipeline_free_schedule(const PlanSpace& s) {
  for (ScheduleKind k : s.schedule)
    if (k == ScheduleKind::one_f_one_b) return k;
  for (ScheduleKind k : s.schedule)
    if (!schedule_family(k).overlaps_pairs) return k;
  return ScheduleKind::one_f_one_b;
}
}  // namespace

std::optional<Job> job_at(const Job& base, const PlanSpace& s, const PlanPoint& p, std::string* why) {
  const ScheduleKind kind = s.schedule[p.schedule];
  const std::int64_t vp = s.vp[p.vp];
  if (vp > 1 && !schedule_family(kind).interleaves) {
    *why = "/parallel/vp: virtual stages only for the interleaved schedule";
    return std::nullopt;
  }
  // Without a pipeline the schedules that do not overlap forward-and-backward pairs all run the same
  // step (each micro-batch's forward then its backward); the layout is listed once, under 1F1B where
  // the space has it.
  if (s.pp[p.pp] == 1 && !schedule_family(kind).overlaps_pairs) {
    const ScheduleKind kept = pipeline_free_schedule(s);
    if (kind != kept) {
      *why = fmt::format("/parallel/schedule: without a pipeline (pp 1) {} runs the same step as {}; the layout is listed once, as {}",
                         schedule_name(kind), schedule_name(kept), schedule_name(kept));
      return std::nullopt;
    }
  }
  Job job = base;
  job.cluster.gpu = s.gpu[p.gpu];
  // The framework's own choices on this GPU (torchtitan's attention kernel by compute capability).
  if (auto training = training_on_gpu(base, job.cluster.gpu, why)) job.training = std::move(*training);
  else return std::nullopt;
  job.cluster.fabric = s.fabric[p.fabric];
  const std::int64_t gpus = s.gpus[p.gpus], gpn = job.cluster.fabric.gpus_per_node;
  if (gpus % gpn != 0) {
    *why = fmt::format("/cluster/nodes: {} GPUs do not fill nodes of {}", gpus, gpn);
    return std::nullopt;
  }
  job.cluster.nodes = gpus / gpn;
  if (job.cluster.power_limit && !power_clock_scale_at(job.cluster.gpu, *job.cluster.power_limit)) {
    *why = fmt::format("/cluster/power_limit: the profile of {} names no power_limit, idle_power and power_clock_exponent (an idle draw under {:.0f} W) to scale its clocks from",
                       job.cluster.gpu.name, *job.cluster.power_limit);
    return std::nullopt;
  }
  set_job_size(job.cluster);
  ParallelLayout& l = job.layout;
  l.tp = s.tp[p.tp];
  l.pp = s.pp[p.pp];
  l.cp = s.cp[p.cp];
  if (gpus % (l.tp * l.pp * l.cp) != 0) {
    *why = fmt::format("/parallel/dp: tp {} × pp {} × cp {} does not divide {} GPUs", l.tp, l.pp, l.cp, gpus);
    return std::nullopt;
  }
  l.dp = gpus / (l.tp * l.pp * l.cp);
  // Without context parallelism every algorithm runs the same step: the layout is listed once.
  l.cp_comm = s.cp_comm[p.cp_comm];
  if (l.cp == 1 && p.cp_comm != 0) {
    *why = fmt::format("/parallel/cp_comm: without context parallelism (cp 1) {} runs the same step as {}; the layout is listed once, as {}",
                       cp_comm_name(l.cp_comm), cp_comm_name(s.cp_comm.front()), cp_comm_name(s.cp_comm.front()));
    return std::nullopt;
  }
  l.ep = s.ep[p.ep];
  l.etp = s.etp[p.etp];
  l.vp = vp;
  l.schedule = kind;
  l.moe_execution = s.moe_execution[p.moe_execution];
  l.zero = s.zero[p.zero];
  l.micro_batch = s.micro_batch[p.micro_batch];
  // HSDP shard groups: a size that covers every data-parallel rank is full sharding, listed once.
  const std::int64_t shard = s.dp_shard[p.dp_shard];
  auto full = [&](std::int64_t v) { return v == 0 || v >= l.dp; };
  if (full(shard)) {
    if (p.dp_shard > 0 && full(s.dp_shard[p.dp_shard - 1])) {
      *why = fmt::format("/parallel/dp_shard: shard groups of {} cover all {} data-parallel ranks, as the list's previous size does; the layout is listed once", shard, l.dp);
      return std::nullopt;
    }
    l.dp_shard = 0;
  } else if (l.dp % shard != 0) {
    *why = fmt::format("/parallel/dp_shard: dp_shard {} does not divide dp {}", shard, l.dp);
    return std::nullopt;
  } else if (l.zero < 1) {
    *why = fmt::format("/parallel/dp_shard: shard groups of {} shard ZeRO's states, and ZeRO-0 has none", shard);
    return std::nullopt;
  } else {
    l.dp_shard = shard;
  }
  l.recompute = s.recompute[p.recompute];
  l.sequence_parallel = l.tp > 1;
  if (l.tp == 1) l.tp_overlap = TpOverlap::none;  // the base's async TP wherever there is TP to overlap
  if (l.split == PipelineSplit::explicit_list) l.split = PipelineSplit::balanced;
  l.stage_layers.clear();
  TrainingSpec& t = job.training;
  if (t.precision != s.precision[p.precision]) {
    t.precision = s.precision[p.precision];
    t.fp8_gemm_inputs = t.precision == Precision::fp8;  // the default caches of the new precision
    t.fp8_swiglu_inputs = false;
  }
  // The base's fp8 all-gathers wherever fp8 runs with sequence parallelism.
  l.fp8_all_gathers = l.fp8_all_gathers && l.sequence_parallel && t.precision == Precision::fp8;
  // And its fp8 weight gathers wherever ZeRO-3 runs tensorwise fp8.
  l.fp8_weight_gathers = l.fp8_weight_gathers && l.zero >= 3 && t.precision == Precision::fp8 && t.fp8_recipe == Fp8Recipe::tensorwise;
  Diagnostics diagnostics;
  SourceFile src{base.file, {}, &diagnostics, {}};
  finalize_layout(l, job.model, job.cluster, t, src);
  if (!diagnostics.empty()) {
    const Diagnostic& d = diagnostics.list().front();
    *why = d.pointer + ": " + d.message;
    return std::nullopt;
  }
  if (!Placement::make(l, gpn, why)) {
    *why = "/parallel/order: " + *why;
    return std::nullopt;
  }
  return job;
}

std::string describe_layout(const ParallelLayout& l) {
  std::string out = fmt::format("TP{} PP{} {}", l.tp, l.pp, data_parallel_label(l));
  if (l.cp > 1) out += fmt::format(" CP{}{}", l.cp, l.cp_comm == CpComm::ring ? "" : fmt::format("({})", cp_comm_name(l.cp_comm)));
  if (l.ep > 1) out += fmt::format(" EP{}", l.ep);
  if (l.etp > 1) out += fmt::format(" ETP{}", l.etp);
  out += fmt::format(" {}", schedule_name(l.schedule));
  if (l.vp > 1) out += fmt::format(" v{}", l.vp);
  out += fmt::format(" ZeRO-{} mb{} rc:{}", l.zero, l.micro_batch, l.recompute.label);
  if (l.moe_execution == MoeExecution::waves) out += " moe:waves";
  return out;
}

}  // namespace plumb
