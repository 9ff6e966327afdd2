#include "models/hardware/hardware.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <vector>

#include "models/input/catalogue.hpp"

namespace plumb {
namespace {

// Every figure in a profile carries its source: /sources must name each figure present, and
// nothing else.
std::map<std::string, std::string> read_sources(ObjectReader& r, const std::vector<std::string>& figures) {
  std::map<std::string, std::string> sources;
  const Json* s = r.child("sources", Need::required);
  if (!s) return sources;
  ObjectReader sr(*s, r.pointer("sources"), r.source());
  for (const std::string& figure : figures) {
    if (auto text = sr.string(figure, Need::optional)) sources[figure] = *text;
    else if (sr.is_object()) sr.error(figure, fmt::format("figure \"{}\" has no source; cite where it comes from", figure));
  }
  return sources;
}

// A row's from_flops: a plain number or a count like "1G"; zero is allowed (the first row starts at 0).
double read_from_flops(ObjectReader& row) {
  const Json* v = row.child("from_flops", Need::required);
  if (!v) return 0.0;
  if (v->is_number() && v->get<double>() == 0.0) return 0.0;
  return read_quantity(*v, Dimension::count, row.pointer("from_flops"), row.source()).value_or(0.0);
}

// A profile given by name, path or inline object, read field by field; nullopt if any field failed.
template <class Spec, class ReadFields>
std::optional<Spec> read_profile(const Json& value, const std::string& pointer_in, const SourceFile& src,
                                 const std::string& folder, const std::string& what, ReadFields read_fields) {
  Json doc;
  SourceFile file = src;
  std::string pointer = pointer_in, id;
  const Json* node = resolve_document(value, folder, what, pointer, src, doc, file, id);
  if (!node) return std::nullopt;
  std::size_t errors_before = src.diagnostics->size();
  Spec spec;
  spec.id = id;
  {
    ObjectReader r(*node, pointer, file);
    read_fields(r, spec);
  }
  if (src.diagnostics->size() != errors_before) return std::nullopt;
  return spec;
}

}  // namespace

const std::vector<std::string>& GpuSpec::attention_kernel_profiles() {
  static const std::vector<std::string> kernels{"flash2", "cudnn"};
  return kernels;
}

std::string GpuSpec::attention_key(std::string_view kernel, std::string_view figure) {
  const auto& own = attention_kernel_profiles();
  const bool listed = std::find(own.begin(), own.end(), kernel) != own.end();
  return listed ? fmt::format("attention_{}_{}", kernel, figure) : fmt::format("attention_{}", figure);
}

double GpuSpec::attention_efficiency_of(std::string_view kernel, bool backward, double keys) const {
  const double forward = attention_efficiency.value_or(1.0);
  double e = backward ? attention_backward_efficiency.value_or(forward) : forward;
  double half = attention_half_sequence, reference = attention_reference_sequence;
  if (auto own = attention_kernels.find(kernel); own != attention_kernels.end()) {
    const AttentionKernelRates& k = own->second;
    if (auto rate = backward ? k.backward : k.forward) {
      e = *rate;
      half = k.half_sequence.value_or(half);
      reference = k.reference_sequence.value_or(reference);
    }
  }
  if (keys <= 0 || half <= 0 || reference <= 0 || keys >= reference) return e;
  return e * (keys / (keys + half)) / (reference / (reference + half));
}

double GpuSpec::gemm_efficiency_at(double flops, MathDtype dtype) const {
  const auto& table = dtype == MathDtype::fp8 && !gemm_efficiency_fp8.empty() ? gemm_efficiency_fp8 : gemm_efficiency;
  if (efficiency_sms > 0 && sms > 0) flops *= static_cast<double>(efficiency_sms) / static_cast<double>(sms);
  double e = 1.0;
  for (const auto& [from, efficiency] : table)
    if (flops >= from) e = efficiency;
  return e;
}

GemmShapeModel::Tiling GemmShapeModel::tiling(double m, double n, double k, double groups, std::int64_t sms) const {
  const double tm = static_cast<double>(tile_m), tn = static_cast<double>(tile_n), units = static_cast<double>(std::max<std::int64_t>(1, sms));
  const double tiles = groups * std::ceil(m / tm) * std::ceil(n / tn);
  if (!(tiles > 0) || !(k > 0)) return {std::max(k, 0.0), 1.0};  // no work: nothing to tile
  const double split = std::max(1.0, std::floor(units / tiles));
  const double work = tiles * split, waves = std::ceil(work / units);
  const double area = groups * m * n / (tiles * tm * tn);
  return {k / split, area * work / (waves * units)};
}

double GemmShapeModel::efficiency(double m, double n, double k, double groups, std::int64_t sms) const {
  Tiling t = tiling(m, n, k, groups, sms);
  if (swap_ab) {
    const Tiling swapped = tiling(n, m, k, groups, sms);
    if (swapped.busy > t.busy) t = swapped;
  }
  return t.k_steps > 0 ? ceiling * t.k_steps / (t.k_steps + k_overhead) * t.busy : ceiling;
}

const GemmShapeModel* GpuSpec::gemm_model_for(MathDtype dtype, double groups, bool weight_gradient) const {
  auto find = [dtype](const std::map<MathDtype, GemmShapeModel>& models) -> const GemmShapeModel* {
    auto it = models.find(dtype);
    return it == models.end() ? nullptr : &it->second;
  };
  const GemmShapeModel* model = nullptr;
  if (groups > 1) {
    if (weight_gradient) model = find(gemm_model_grouped_weight_gradient);
    if (!model) model = find(gemm_model_grouped);
  }
  if (!model && weight_gradient) model = find(gemm_model_weight_gradient);
  return model ? model : find(gemm_model);
}

double GpuSpec::gemm_efficiency_of(double m, double n, double k, double groups, MathDtype dtype, bool weight_gradient) const {
  if (const GemmShapeModel* model = gemm_model_for(dtype, groups, weight_gradient)) return model->efficiency(m, n, k, groups, sms);
  return gemm_efficiency_at(2 * m * n * k * groups, dtype);
}

double GpuSpec::concurrent_gemms_efficiency(double m, double n, double k, double concurrent, MathDtype dtype, bool weight_gradient) const {
  if (const GemmShapeModel* model = gemm_model_for(dtype, 1, weight_gradient)) return model->efficiency(m, n, k, concurrent, sms);
  return gemm_efficiency_at(2 * m * n * k * concurrent, dtype);
}

std::string_view math_dtype_name(MathDtype d) {
  switch (d) {
    case MathDtype::fp32: return "fp32";
    case MathDtype::tf32: return "tf32";
    case MathDtype::bf16: return "bf16";
    case MathDtype::fp8: return "fp8";
  }
  return "?";
}

namespace {

// A list of {"from_flops", "efficiency"} rows rising in from_flops.
void read_efficiency_table(ObjectReader& r, const char* key, std::vector<std::pair<double, double>>& out) {
  const Json* table = r.child(key, Need::optional);
  if (!table) return;
  std::string at = r.pointer(key);
  if (!table->is_array() || table->empty()) {
    r.error(key, "expected a list of {\"from_flops\": ..., \"efficiency\": ...} rows");
    return;
  }
  for (std::size_t i = 0; i < table->size(); ++i) {
    ObjectReader row((*table)[i], json_pointer_append(at, std::to_string(i)), r.source());
    double from = read_from_flops(row);
    double efficiency = row.number("efficiency", Need::required, 0.01, 1.0).value_or(1.0);
    if (!out.empty() && from <= out.back().first) row.error("from_flops", "rows must rise in from_flops");
    out.emplace_back(from, efficiency);
  }
}

// {"ceiling", "k_overhead", "tile": [m, n]}; the caller finishes the reader (it may hold more keys).
GemmShapeModel read_gemm_model(ObjectReader& m) {
  GemmShapeModel model;
  model.ceiling = m.number("ceiling", Need::required, 0.01, 1.0).value_or(1.0);
  model.k_overhead = m.number("k_overhead", Need::required, 0.0, 1e6).value_or(0.0);
  if (const Json* tile = m.child("tile", Need::required)) {
    if (!tile->is_array() || tile->size() != 2 || !(*tile)[0].is_number_integer() || !(*tile)[1].is_number_integer() ||
        (*tile)[0].get<std::int64_t>() < 1 || (*tile)[1].get<std::int64_t>() < 1)
      m.error("tile", "expected [tile_m, tile_n], two positive integers such as [128, 128]");
    else {
      model.tile_m = (*tile)[0].get<std::int64_t>();
      model.tile_n = (*tile)[1].get<std::int64_t>();
    }
  }
  model.swap_ab = m.boolean("swap_ab", Need::optional).value_or(false);
  return model;
}

// The model's "weight_gradient" {"ceiling", "k_overhead", "tile"}, if any, into `out`.
void read_weight_gradient_model(ObjectReader& m, MathDtype d, std::map<MathDtype, GemmShapeModel>& out) {
  const Json* wgrad = m.child("weight_gradient", Need::optional);
  if (!wgrad) return;
  ObjectReader w(*wgrad, m.pointer("weight_gradient"), m.source());
  if (w.is_object()) out[d] = read_gemm_model(w);
  w.finish();
}

// {"bf16": {"ceiling", "k_overhead", "tile": [m, n], "weight_gradient": {…}?, "grouped": {…, "weight_gradient"?}?},
// "fp8": {...}}: a dtype the GPU has a peak for.
void read_gemm_models(ObjectReader& r, GpuSpec& g) {
  const Json* models = r.child("gemm_model", Need::optional);
  if (!models) return;
  ObjectReader mr(*models, r.pointer("gemm_model"), r.source());
  if (!mr.is_object()) return;
  for (MathDtype d : {MathDtype::bf16, MathDtype::fp8}) {
    const Json* node = mr.child(math_dtype_name(d), Need::optional);
    if (!node) continue;
    if (!g.peak_dense.count(d)) {
      mr.error(math_dtype_name(d), fmt::format("the GPU has no {} peak in peak_dense: add it or remove this model", math_dtype_name(d)));
      continue;
    }
    ObjectReader m(*node, mr.pointer(math_dtype_name(d)), r.source());
    g.gemm_model[d] = read_gemm_model(m);
    // A different kernel for the weight gradient (DeepGEMM's, for one): its own constants.
    read_weight_gradient_model(m, d, g.gemm_model_weight_gradient);
    // Grouped (expert) GEMMs through another kernel, with its own weight-gradient one where it differs.
    if (const Json* grouped = m.child("grouped", Need::optional)) {
      ObjectReader gr(*grouped, m.pointer("grouped"), r.source());
      if (gr.is_object()) {
        g.gemm_model_grouped[d] = read_gemm_model(gr);
        read_weight_gradient_model(gr, d, g.gemm_model_grouped_weight_gradient);
      }
      gr.finish();
    }
    m.finish();
  }
  mr.finish();
}

}  // namespace

Json load_profile_document(const std::filesystem::path& path, bool fabric, const SourceFile& src) {
  return load_derived(path, fabric ? kFabricProfiles : kGpuProfiles, fabric ? "fabric profile" : "GPU profile", src);
}

bool is_compute_capability(std::string_view s) {
  const auto dot = s.find('.');
  auto digits = [](std::string_view d) { return !d.empty() && d.size() <= 3 && d.find_first_not_of("0123456789") == std::string_view::npos; };
  return dot != std::string_view::npos && digits(s.substr(0, dot)) && digits(s.substr(dot + 1));
}

std::optional<GpuSpec> read_gpu(const Json& value, const std::string& pointer, const SourceFile& src) {
  return read_profile<GpuSpec>(value, pointer, src, kGpuProfiles, "GPU profile", [](ObjectReader& r, GpuSpec& g) {
    g.name = r.string("name", Need::required).value_or("");
    g.compute_capability = r.string("compute_capability", Need::optional).value_or("");
    if (!g.compute_capability.empty() && !is_compute_capability(g.compute_capability))
      r.error("compute_capability", fmt::format("\"{}\" is not a compute capability; write it as NVIDIA does, major.minor (\"9.0\", \"10.0\")",
                                                g.compute_capability));
    g.sms = r.integer("sms", Need::required, 1, 100'000).value_or(1);
    g.hbm_capacity = r.quantity("hbm_capacity", Dimension::bytes, Need::required).value_or(1);
    g.hbm_bandwidth = r.quantity("hbm_bandwidth", Dimension::bandwidth, Need::required).value_or(1);
    g.nvlink_bandwidth_per_direction =
        r.quantity("nvlink_bandwidth_per_direction", Dimension::bandwidth, Need::required).value_or(1);
    g.cuda_context = r.quantity("cuda_context", Dimension::bytes, Need::required).value_or(0);
    g.cublas_workspace = r.quantity("cublas_workspace", Dimension::bytes, Need::required).value_or(0);
    if (const Json* peak = r.child("peak_dense", Need::required)) {
      ObjectReader pr(*peak, r.pointer("peak_dense"), r.source());
      for (MathDtype d : {MathDtype::fp32, MathDtype::tf32, MathDtype::bf16, MathDtype::fp8}) {
        Need need = d == MathDtype::bf16 ? Need::required : Need::optional;
        if (auto rate = pr.quantity(math_dtype_name(d), Dimension::flop_rate, need)) g.peak_dense[d] = *rate;
      }
    }
    read_efficiency_table(r, "gemm_efficiency", g.gemm_efficiency);
    read_efficiency_table(r, "gemm_efficiency_fp8", g.gemm_efficiency_fp8);
    read_gemm_models(r, g);
    g.attention_efficiency = r.number("attention_efficiency", Need::optional, 0.01, 1.0);
    g.attention_backward_efficiency = r.number("attention_backward_efficiency", Need::optional, 0.01, 1.0);
    g.attention_dropout_scale = r.number("attention_dropout_scale", Need::optional, 0.05, 1.0);
    g.attention_dropout_backward_scale = r.number("attention_dropout_backward_scale", Need::optional, 0.05, 1.0);
    auto half_sequence = r.number("attention_half_sequence", Need::optional, 0.0, 1e7);
    g.attention_half_sequence = half_sequence.value_or(0.0);
    auto reference_sequence = r.number("attention_reference_sequence", Need::optional, 1.0, 1e9);
    g.attention_reference_sequence = reference_sequence.value_or(0.0);
    if (half_sequence && !reference_sequence)
      r.error("attention_half_sequence", "give attention_reference_sequence too: the keys per query the attention efficiencies were measured at");
    std::vector<std::string> kernel_figures;
    for (const std::string& kernel : GpuSpec::attention_kernel_profiles()) {
      auto key = [&](std::string_view figure) { return GpuSpec::attention_key(kernel, figure); };
      GpuSpec::AttentionKernelRates k;
      k.forward = r.number(key("efficiency"), Need::optional, 0.01, 1.0);
      k.backward = r.number(key("backward_efficiency"), Need::optional, 0.01, 1.0);
      k.half_sequence = r.number(key("half_sequence"), Need::optional, 0.0, 1e7);
      k.reference_sequence = r.number(key("reference_sequence"), Need::optional, 1.0, 1e9);
      if (k.half_sequence && !k.reference_sequence && !reference_sequence)
        r.error(key("half_sequence"), fmt::format("give {} (or attention_reference_sequence) too: the keys per query the {} efficiencies "
                                                  "were measured at", key("reference_sequence"), kernel));
      for (const char* figure : {"efficiency", "backward_efficiency", "half_sequence", "reference_sequence"})
        if (r.has(key(figure))) kernel_figures.push_back(key(figure));  // its source is expected even where the figure is wrong
      if (k.forward || k.backward)
        g.attention_kernels[kernel] = k;
      else if (k.half_sequence || k.reference_sequence)
        r.error(key("efficiency"), fmt::format("give the {} kernel's efficiency: its half and reference sequences only shape it", kernel));
    }
    auto hbm_efficiency = r.number("hbm_efficiency", Need::optional, 0.01, 1.0);
    g.hbm_efficiency = hbm_efficiency.value_or(1.0);
    auto sustained = r.number("sustained_compute_scale", Need::optional, 0.1, 1.0);
    g.sustained_compute_scale = sustained.value_or(1.0);
    g.sustained_compute_scale_fp8 = r.number("sustained_compute_scale_fp8", Need::optional, 0.1, 1.0);
    g.sustained_attention_scale = r.number("sustained_attention_scale", Need::optional, 0.1, 1.0);
    auto spread = r.number("chip_spread", Need::optional, 0.0, 0.2);
    g.chip_spread = spread.value_or(0.0);
    auto unvectorized = r.number("unvectorized_elementwise_rate", Need::optional, 1e6, 1e15);
    g.unvectorized_elementwise_rate = unvectorized.value_or(0.0);
    g.power_limit = r.quantity("power_limit", Dimension::power, Need::optional);
    g.idle_power = r.quantity("idle_power", Dimension::power, Need::optional);
    g.power_clock_exponent = r.number("power_clock_exponent", Need::optional, 0.1, 2.0);
    const int power_figures = g.power_limit.has_value() + g.idle_power.has_value() + g.power_clock_exponent.has_value();
    if (power_figures != 0 && power_figures != 3)
      r.error(!g.power_limit ? "power_limit" : !g.idle_power ? "idle_power" : "power_clock_exponent",
              "give power_limit, idle_power and power_clock_exponent together: the clock at another limit follows the power "
              "above the idle draw to that exponent (1/3 while the voltage rises with the clock, 1 at the voltage floor)");
    else if (g.power_limit && *g.power_limit <= *g.idle_power)
      r.error("power_limit", fmt::format("{:.0f} W is not above idle_power ({:.0f} W)", *g.power_limit, *g.idle_power));
    g.default_power_limit = r.quantity("default_power_limit", Dimension::power, Need::optional);
    if (g.default_power_limit && power_figures != 3)
      r.error("default_power_limit", "give power_limit, idle_power and power_clock_exponent with it: the clocks at the default limit "
                                     "are scaled from the profile's own limit by them");
    else if (g.default_power_limit && *g.default_power_limit <= *g.idle_power)
      r.error("default_power_limit", fmt::format("{:.0f} W is not above idle_power ({:.0f} W)", *g.default_power_limit, *g.idle_power));
    else if (g.default_power_limit)  // the profile alone (calibration, ops) runs at its default limit too
      g.set_job_power_limit(std::nullopt);
    auto kernel_overhead = r.quantity("kernel_overhead", Dimension::time, Need::optional);
    g.kernel_overhead = kernel_overhead.value_or(0.0);
    std::vector<std::string> figures{"sms", "hbm_capacity", "hbm_bandwidth", "peak_dense",
                                     "nvlink_bandwidth_per_direction", "cuda_context", "cublas_workspace"};
    if (!g.gemm_efficiency.empty()) figures.emplace_back("gemm_efficiency");
    if (!g.gemm_efficiency_fp8.empty()) figures.emplace_back("gemm_efficiency_fp8");
    if (!g.gemm_model.empty()) figures.emplace_back("gemm_model");
    if (g.attention_efficiency) figures.emplace_back("attention_efficiency");
    if (g.attention_backward_efficiency) figures.emplace_back("attention_backward_efficiency");
    if (g.attention_dropout_scale) figures.emplace_back("attention_dropout_scale");
    if (g.attention_dropout_backward_scale) figures.emplace_back("attention_dropout_backward_scale");
    if (half_sequence) figures.emplace_back("attention_half_sequence");
    figures.insert(figures.end(), kernel_figures.begin(), kernel_figures.end());
    if (reference_sequence) figures.emplace_back("attention_reference_sequence");
    if (hbm_efficiency) figures.emplace_back("hbm_efficiency");
    if (kernel_overhead) figures.emplace_back("kernel_overhead");
    if (unvectorized) figures.emplace_back("unvectorized_elementwise_rate");
    if (sustained) figures.emplace_back("sustained_compute_scale");
    if (g.sustained_compute_scale_fp8) figures.emplace_back("sustained_compute_scale_fp8");
    if (g.sustained_attention_scale) figures.emplace_back("sustained_attention_scale");
    if (g.power_limit) figures.emplace_back("power_limit");
    if (g.idle_power) figures.emplace_back("idle_power");
    if (g.power_clock_exponent) figures.emplace_back("power_clock_exponent");
    if (g.default_power_limit) figures.emplace_back("default_power_limit");
    if (r.has("chip_spread")) figures.emplace_back("chip_spread");  // its source is no unknown key, even when it is wrong
    if (r.has("compute_capability")) figures.emplace_back("compute_capability");
    g.sources = read_sources(r, figures);
  });
}

std::optional<FabricSpec> read_fabric(const Json& value, const std::string& pointer, const SourceFile& src) {
  return read_profile<FabricSpec>(value, pointer, src, kFabricProfiles, "fabric profile", [](ObjectReader& r, FabricSpec& f) {
    f.name = r.string("name", Need::required).value_or("");
    f.gpus_per_node = r.integer("gpus_per_node", Need::required, 1, 1024).value_or(8);
    f.nvswitch = r.boolean("nvswitch", Need::required).value_or(true);
    f.nvlink_effective_per_gpu = r.quantity("nvlink_effective_per_gpu", Dimension::bandwidth, Need::optional);
    f.nics_per_node = r.integer("nics_per_node", Need::required, 0, 1024).value_or(0);
    f.nic_rate = r.quantity("nic_rate", Dimension::bandwidth, Need::required).value_or(1);
    f.nic_effective = r.quantity("nic_effective", Dimension::bandwidth, Need::optional);
    f.nvls_allreduce_algbw = r.quantity("nvls_allreduce_algbw", Dimension::bandwidth, Need::optional);
    f.nvlink_latency_scale = r.number("nvlink_latency_scale", Need::optional, 0.0, 100.0);
    f.network_latency_scale = r.number("network_latency_scale", Need::optional, 0.0, 100.0);
    if (const Json* ps = r.child("pipeline_send", Need::optional)) {
      ObjectReader pr(*ps, r.pointer("pipeline_send"), r.source());
      const auto latency = pr.quantity("latency", Dimension::time, Need::required);
      const auto bandwidth = pr.quantity("bandwidth", Dimension::bandwidth, Need::required);
      if (latency && bandwidth) f.pipeline_send = PipelineSend{*latency, *bandwidth};
    }
    if (const Json* t = r.child("topology", Need::required)) {
      ObjectReader tr(*t, r.pointer("topology"), r.source());
      f.topology.shape = tr.choice<FabricShape>("kind", Need::required,
                                                {{"rail-optimized-fat-tree", FabricShape::rail_optimized_fat_tree},
                                                 {"fat-tree", FabricShape::fat_tree},
                                                 {"clos3", FabricShape::clos3}})
                             .value_or(FabricShape::rail_optimized_fat_tree);
      f.topology.tiers = tr.integer("tiers", Need::required, 1, 4).value_or(2);
      f.topology.oversubscription = tr.number("oversubscription", Need::optional, 1.0, 64.0).value_or(1.0);
      f.topology.planes = tr.integer("planes", Need::optional, 1, 64).value_or(1);
      f.topology.nodes_per_leaf = tr.integer("nodes_per_leaf", Need::optional, 1, 1'000'000).value_or(0);
      f.topology.nodes_per_pod = tr.integer("nodes_per_pod", Need::optional, 1, 1'000'000).value_or(0);
      f.topology.pod_oversubscription = tr.number("pod_oversubscription", Need::optional, 1.0, 64.0).value_or(1.0);
      f.topology.ecmp = tr.choice<bool>("routing", Need::optional, {{"adaptive", false}, {"ecmp", true}}).value_or(false);
      f.topology.ecmp_uplinks = tr.integer("ecmp_uplinks", Need::optional, 1, 4096).value_or(32);
    }
    std::vector<std::string> figures{"gpus_per_node", "nvswitch", "nics_per_node", "nic_rate", "topology"};
    if (f.nvlink_effective_per_gpu) figures.emplace_back("nvlink_effective_per_gpu");
    if (f.nic_effective) figures.emplace_back("nic_effective");
    if (f.nvls_allreduce_algbw) figures.emplace_back("nvls_allreduce_algbw");
    if (f.nvlink_latency_scale) figures.emplace_back("nvlink_latency_scale");
    if (f.network_latency_scale) figures.emplace_back("network_latency_scale");
    if (f.pipeline_send) figures.emplace_back("pipeline_send");
    f.sources = read_sources(r, figures);
  });
}

std::optional<Cluster> read_cluster(const Json& value, const std::string& pointer_in, const SourceFile& src) {
  Json doc;
  SourceFile file = src;
  std::string pointer = pointer_in;
  const Json* node = &value;
  if (value.is_string()) {
    auto path = resolve_path(value.get<std::string>(), "cluster", pointer, src);
    if (!path) return std::nullopt;
    file = source_for(*path, src);
    doc = load_json_file(*path, file);
    if (doc.is_discarded()) return std::nullopt;
    node = &doc;
    pointer.clear();
  }
  ObjectReader r(*node, pointer, file);
  if (!r.is_object()) return std::nullopt;
  Cluster c;
  std::optional<GpuSpec> gpu;
  std::optional<FabricSpec> fabric;
  if (const Json* g = r.child("gpu", Need::required)) gpu = read_gpu(*g, r.pointer("gpu"), file);
  c.nodes = r.integer("nodes", Need::required, 1, 1'000'000).value_or(1);
  if (const Json* f = r.child("fabric", Need::required)) fabric = read_fabric(*f, r.pointer("fabric"), file);
  c.chip_spread = r.number("chip_spread", Need::optional, 0.0, 0.2);
  c.power_limit = r.quantity("power_limit", Dimension::power, Need::optional);
  if (gpu && c.power_limit) {
    if (!gpu->power_limit)
      r.error("power_limit", fmt::format("the profile of this GPU (\"{}\") names no power_limit, idle_power and power_clock_exponent to "
                                         "scale its clocks from; add them (with their sources) to the profile, or drop cluster.power_limit",
                                         gpu->name));
    else if (!power_clock_scale_at(*gpu, *c.power_limit))
      r.error("power_limit", fmt::format("{:.0f} W is not above the GPU's idle draw ({:.0f} W, its profile's idle_power)", *c.power_limit,
                                         *gpu->idle_power));
  }
  r.finish();
  if (!gpu || !fabric) return std::nullopt;
  c.gpu = std::move(*gpu);
  c.fabric = std::move(*fabric);
  set_job_size(c);
  return c;
}

namespace {

bool is_fabric_profile(const std::filesystem::path& path) {
  Diagnostics scratch;
  SourceFile src{path.string(), path.parent_path(), &scratch, {}};
  Json doc = load_profile_document(path, true, src);
  return scratch.empty() && doc.contains("gpus_per_node");
}

}  // namespace

std::optional<ProfileRef> find_profile_file(const std::string& ref) {
  for (auto [folder, fabric] : {std::pair{kGpuProfiles, false}, std::pair{kFabricProfiles, true}}) {
    std::filesystem::path p = data_dir() / folder / (ref + ".json");
    if (ref.find('/') == std::string::npos && path_exists(p)) return ProfileRef{p, fabric};
  }
  if (!path_exists(ref)) return std::nullopt;
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(ref, ec);
  return ProfileRef{ec ? std::filesystem::path(ref) : absolute, is_fabric_profile(ref)};
}

std::vector<std::string> profile_names() {
  std::vector<std::string> names = catalogue_names(kGpuProfiles);
  for (const std::string& n : catalogue_names(kFabricProfiles)) names.push_back(n);
  return names;
}

}  // namespace plumb
