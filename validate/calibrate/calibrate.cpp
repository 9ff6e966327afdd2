#include "validate/calibrate/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>

#include "models/costs/collective.hpp"
#include "models/input/diagnostics.hpp"
#include "models/input/statistics.hpp"
#include "models/costs/flops.hpp"

namespace plumb {

namespace {

// Each object of the optional list at `key`, read by `read_row`; anything but a list is an error
// naming what its rows hold.
template <class ReadRow>
void read_rows(ObjectReader& r, const SourceFile& src, const char* key, std::string_view row_keys, ReadRow read_row) {
  const Json* rows = r.child(key, Need::optional);
  if (!rows) return;
  if (!rows->is_array()) {
    r.error(key, fmt::format("expected a list of {{{}}}", row_keys));
    return;
  }
  for (std::size_t i = 0; i < rows->size(); ++i) {
    ObjectReader row((*rows)[i], json_pointer_append(std::string("/") + key, std::to_string(i)), src);
    read_row(row);
  }
}

}  // namespace

Measurements read_measurements(const Json& doc, const std::string& file) {
  Diagnostics d;
  SourceFile src{file, {}, &d, {}};
  Measurements m;
  m.file = file;
  {
    ObjectReader r(doc, "", src);
    r.integer("plumb_measurements", Need::required, 1, 1);
    m.device = r.string("device", Need::required).value_or("");
    m.date = r.string("date", Need::required).value_or("");
    r.string("driver", Need::optional);
    r.string("note", Need::optional);
    r.number("clock_mhz", Need::optional, 0, 1e5);
    m.sustained = r.boolean("sustained", Need::optional).value_or(false);
    read_rows(r, src, "gemm", "\"m\", \"n\", \"k\", \"dtype\", \"seconds\"", [&](ObjectReader& row) {
      GemmMeasurement g;
      g.m = static_cast<double>(row.integer("m", Need::required, 1, 1'000'000'000).value_or(1));
      g.n = static_cast<double>(row.integer("n", Need::required, 1, 1'000'000'000).value_or(1));
      g.k = static_cast<double>(row.integer("k", Need::required, 1, 1'000'000'000).value_or(1));
      g.dtype = row.choice<MathDtype>("dtype", Need::required, {{"bf16", MathDtype::bf16}, {"fp8", MathDtype::fp8}, {"tf32", MathDtype::tf32}, {"fp32", MathDtype::fp32}})
                    .value_or(MathDtype::bf16);
      g.seconds = row.number("seconds", Need::required, 1e-12, 1e6).value_or(1);
      g.groups = static_cast<double>(row.integer("groups", Need::optional, 1, 1'000'000).value_or(1));
      g.weight_gradient = row.choice<bool>("pass", Need::optional,
                                           {{"forward", false}, {"input_gradient", false}, {"weight_gradient", true}})
                              .value_or(false);
      row.string("what", Need::optional);
      m.gemm.push_back(g);
    });
    read_rows(r, src, "memory", "\"kernel\", \"bytes\", \"seconds\"", [&](ObjectReader& row) {
      MemoryMeasurement mm;
      mm.kernel = row.string("kernel", Need::required).value_or("");
      mm.bytes = row.number("bytes", Need::required, 1, 1e15).value_or(1);
      mm.seconds = row.number("seconds", Need::required, 1e-12, 1e6).value_or(1);
      mm.runs = row.number("runs", Need::optional, 1, 1e9).value_or(1);
      m.memory.push_back(mm);
    });
    read_rows(r, src, "attention", "\"batch_heads\", \"seq\", \"d_qk\", \"d_v\", \"causal\", \"forward_seconds\", \"backward_seconds\"",
              [&](ObjectReader& row) {
                AttentionMeasurement a;
                a.batch_heads = static_cast<double>(row.integer("batch_heads", Need::required, 1, 1'000'000'000).value_or(1));
                a.seq = static_cast<double>(row.integer("seq", Need::required, 1, 1'000'000'000).value_or(1));
                a.d_qk = static_cast<double>(row.integer("d_qk", Need::required, 1, 100'000).value_or(1));
                a.d_v = static_cast<double>(row.integer("d_v", Need::required, 1, 100'000).value_or(1));
                a.causal = row.boolean("causal", Need::required).value_or(true);
                a.forward_seconds = row.number("forward_seconds", Need::required, 1e-12, 1e6).value_or(1);
                a.backward_seconds = row.number("backward_seconds", Need::required, 1e-12, 1e6).value_or(1);
                a.what = row.string("what", Need::optional).value_or("");
                m.attention.push_back(a);
              });
    if (const Json* launch = r.child("launch", Need::optional)) {
      ObjectReader l(*launch, "/launch", src);
      l.integer("kernels", Need::required, 1, 1'000'000'000);
      m.kernel_overhead = l.number("seconds_per_kernel", Need::required, 0, 1e-2);
      l.finish();
    }
  }
  d.throw_if_any();
  return m;
}

namespace {

// Rows of the profile's step table at each decade of FLOPs from 10^8: the fitted curve's value at the
// row's lower edge, so the table never promises more than the fit.
std::vector<std::pair<double, double>> table_of(const EfficiencyCurve& c) {
  std::vector<std::pair<double, double>> rows{{0.0, std::clamp(c.at(1e8), 0.01, 1.0)}};
  for (double f = 1e9; f <= 1e15; f *= 10) rows.emplace_back(f, std::clamp(c.at(f), 0.01, 1.0));
  return rows;
}

std::string fit_source(const std::string& what, const std::string& files, std::size_t points, double rms) {
  return fmt::format("fitted by plumb calibrate from {} ({}; {} points, RMS relative error {:.1f}%)", files, what, points, 100 * rms);
}

// Sets `field` to the median of `shares` (at most 1), its source naming the files and `what` was
// measured; the report and --json list it.
// With `pooled`, the figure is that share instead of the median (the runs' total work over their total time).
void set_share(Calibration& c, const std::string& field, std::vector<double> shares, const std::string& files, std::string_view what,
               std::optional<double> pooled = std::nullopt) {
  if (shares.empty()) return;
  std::sort(shares.begin(), shares.end());
  ShareFit f{field, std::min(1.0, pooled.value_or(shares[shares.size() / 2])), shares.front(), shares.back(), shares.size(), 0.0,
             pooled.has_value()};
  // A run at share x takes 1/x of the work's time; the median predicts 1/x̂: off by x/x̂ − 1.
  double sum = 0;
  for (double x : shares) sum += (x / f.efficiency - 1) * (x / f.efficiency - 1);
  f.rms_relative_error = std::sqrt(sum / static_cast<double>(shares.size()));
  c.profile[field] = std::round(f.efficiency * 1000) / 1000;
  c.profile["sources"][field] = fmt::format("measured by plumb calibrate from {}: {} {} {}, {:.1f}% (range {:.1f}–{:.1f}%; RMS error {:.1f}%)",
                                            files, pooled ? "total over" : "median of", f.points, what, 100 * f.efficiency, 100 * f.lowest,
                                            100 * f.highest, 100 * f.rms_relative_error);
  c.shares.push_back(f);
}

// Launch overhead: the median of the files' back-to-back empty kernels (0 when none measured it).
double fit_kernel_overhead(Calibration& c, const std::vector<Measurements>& measured, const std::string& files) {
  std::vector<double> launches;
  for (const Measurements& m : measured)
    if (m.kernel_overhead) launches.push_back(*m.kernel_overhead);
  const double overhead = median(launches);
  if (!launches.empty()) {
    c.kernel_overhead = overhead;
    c.profile["kernel_overhead"] = fmt::format("{:.3f}us", overhead * 1e6);
    c.profile["sources"]["kernel_overhead"] = fmt::format(
        "measured by plumb calibrate from {}: back-to-back empty kernels, median of {} files", files, launches.size());
  }
  return overhead;
}

// GEMM efficiency tables (and shape models) from the GEMMs' times less the launch overhead.
void fit_gemms(Calibration& c, const GpuSpec& gpu, const std::vector<Measurements>& measured, double overhead,
               const std::string& files) {
  // One efficiency table per dtype the GPU has a peak for, from its dense GEMMs: bf16 GEMMs set
  // gemm_efficiency, fp8 ones (against the fp8 peak) gemm_efficiency_fp8; and, where the GEMMs span
  // several K, gemm_model.<dtype> (forward and input-gradient GEMMs), with its weight_gradient, grouped
  // and grouped.weight_gradient models where the measurements hold those kernels.
  std::string shape_sources;
  std::set<std::string> refitted;  // dtypes whose gemm_model the measurements fitted
  for (auto [dtype, field] : {std::pair{MathDtype::bf16, "gemm_efficiency"}, std::pair{MathDtype::fp8, "gemm_efficiency_fp8"}}) {
    if (!gpu.peak_dense.count(dtype)) continue;
    std::vector<double> flops, efficiency;
    std::map<std::string, std::vector<GemmShapePoint>> kernels;  // "" the dense forward/input-gradient GEMMs
    for (const Measurements& m : measured)
      for (const GemmMeasurement& g : m.gemm) {
        if (g.dtype != dtype) continue;
        // A sustained rate is the burst rate the profile holds times its sustained scale.
        const double e = g.flops() / std::max(g.seconds - overhead, 0.05 * g.seconds) / gpu.peak_dense.at(dtype) /
                         (m.sustained ? gpu.sustained_scale(dtype) : 1.0);
        const std::string kernel = std::string(g.groups > 1 ? "grouped" : "") + (g.groups > 1 && g.weight_gradient ? "." : "") +
                                   (g.weight_gradient ? "weight_gradient" : "");
        kernels[kernel].push_back({g.m, g.n, g.k, g.groups, e});
        if (g.groups > 1) continue;
        flops.push_back(g.flops());
        efficiency.push_back(e);
      }
    if (flops.size() < 2) continue;
    GemmFit f;
    const std::string name(math_dtype_name(dtype));
    f.shape = fit_shape_on_profile_tile(kernels[""], gpu, dtype);
    if (!f.shape && c.profile.contains("gemm_model") && c.profile["gemm_model"].contains(name)) {
      // The bundled shape model would outrank the table fitted here: it goes, so the measurements decide.
      c.profile["gemm_model"].erase(name);
      if (c.profile["gemm_model"].empty()) {
        c.profile.erase("gemm_model");
        c.profile["sources"].erase("gemm_model");
      }
    }
    auto describe = [&](const std::string& kernel, const GemmShapeFit& fit, std::size_t points) {
      const GemmShapeModel& s = fit.model;
      shape_sources += fmt::format("{}{}{}: {}", shape_sources.empty() ? "" : "; ", name, kernel.empty() ? "" : "." + kernel,
                                   fit_source(fmt::format("{} {}GEMMs by shape on {}x{} tiles, ceiling {:.3f}, k_overhead {:.0f} (elements of K)", name,
                                                          kernel.empty() ? "" : kernel + " ", s.tile_m, s.tile_n, s.ceiling, s.k_overhead),
                                              files, points, fit.rms_relative_error));
    };
    if (f.shape) {
      refitted.insert(name);
      write_shape_model(c.profile["gemm_model"][name], f.shape->model);
      describe("", *f.shape, kernels[""].size());
      for (const char* kernel : {"weight_gradient", "grouped", "grouped.weight_gradient"}) {
        const std::vector<GemmShapePoint>& points = kernels[kernel];
        std::optional<GemmShapeFit> fit = points.empty() ? std::nullopt : fit_shape_on_profile_tile(points, gpu, dtype);
        if (!fit) continue;
        Json& node = std::string(kernel) == "grouped.weight_gradient" ? c.profile["gemm_model"][name]["grouped"]["weight_gradient"]
                                                                       : c.profile["gemm_model"][name][kernel];
        write_shape_model(node, fit->model);
        describe(kernel, *fit, points.size());
        f.kernels.push_back({kernel, *fit, points.size()});
      }
    }
    f.dtype = dtype;
    f.field = field;
    f.curve = fit_efficiency(flops, efficiency);
    f.table = table_of(f.curve);
    f.points = flops.size();
    Json rows = Json::array();
    for (const auto& [from, e] : f.table) rows.push_back({{"from_flops", from}, {"efficiency", std::round(e * 1000) / 1000}});
    c.profile[field] = rows;
    c.profile["sources"][field] =
        fit_source(fmt::format("{} GEMMs, e(F) = {:.3f}·F/(F + {:.3g})", math_dtype_name(dtype), f.curve.e_max, f.curve.f_half), files,
                   f.points, f.curve.rms_relative_error);
    c.gemm.push_back(std::move(f));
  }
  if (!shape_sources.empty()) {
    // A model the measurements did not refit keeps its earlier source beside the new one.
    std::string before = c.profile["sources"].value("gemm_model", std::string());
    bool all_refitted = true;
    for (const auto& entry : c.profile["gemm_model"].items()) all_refitted = all_refitted && refitted.count(entry.key());
    c.profile["sources"]["gemm_model"] = all_refitted || before.empty() ? shape_sources : shape_sources + "; earlier: " + before;
  }
}

// Flash attention's forward and backward efficiencies, and how they fall in shorter sequences: where
// the runs span two sequence lengths or more, e(s) = e_max · s / (s + half) fitted to the forward shares
// (attention_half_sequence); each pass's share is then the median of the runs' shares taken along that
// curve to the longest run's sequence (attention_reference_sequence), where the profile holds them.
void fit_attention(Calibration& c, const GpuSpec& gpu, const std::vector<Measurements>& measured, double overhead,
                   const std::string& files) {
  // Flash attention: each pass's FLOPs as plumb counts them (the backward's recomputed scores
  // included) over its time less the kernel overhead plumb adds to every op, against the bf16 peak.
  if (!gpu.peak_dense.count(MathDtype::bf16)) return;
  std::vector<double> forward, backward, keys;
  const double peak = gpu.peak_dense.at(MathDtype::bf16);
  auto share = [&](double flops, double seconds, bool sustained) {
    return flops / std::max(seconds - overhead, 0.05 * seconds) / peak /
           (sustained ? gpu.attention_sustained_scale() : 1.0);
  };
  for (const Measurements& m : measured)
    for (const AttentionMeasurement& a : m.attention) {
      const FlashAttentionFlops f = flash_attention_flops(a.batch_heads * a.seq, a.seq, a.d_qk, a.d_v, a.causal);
      forward.push_back(share(f.forward, a.forward_seconds, m.sustained));
      backward.push_back(share(f.backward_executed(), a.backward_seconds, m.sustained));
      keys.push_back(a.seq);
    }
  if (keys.empty()) return;
  double half = gpu.attention_half_sequence;
  if (std::set<double>(keys.begin(), keys.end()).size() >= 2) {
    const EfficiencyCurve curve = fit_efficiency(keys, forward);
    half = std::max(0.0, curve.f_half);
    c.profile["attention_half_sequence"] = std::round(half);
    c.profile["sources"]["attention_half_sequence"] = fmt::format(
        "fitted by plumb calibrate from {}: e * s / (s + half) over {} flash attention forward runs at {} sequence lengths (RMS relative error {:.1f}%)",
        files, keys.size(), std::set<double>(keys.begin(), keys.end()).size(), 100 * curve.rms_relative_error);
  }
  const double reference = *std::max_element(keys.begin(), keys.end());
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (half > 0) {
      const double along = (reference / (reference + half)) / (keys[i] / (keys[i] + half));
      forward[i] *= along;
      backward[i] *= along;
    }
  set_share(c, "attention_efficiency", forward, files, "flash attention forward runs' shares of the bf16 dense peak");
  set_share(c, "attention_backward_efficiency", backward, files,
            "flash attention backward runs' shares of the bf16 dense peak (the recomputed scores counted)");
  c.profile["attention_reference_sequence"] = reference;
  c.profile["sources"]["attention_reference_sequence"] =
      fmt::format("the longest of the {} flash attention runs plumb calibrate fitted the attention efficiencies to ({})", keys.size(), files);
}

}  // namespace

Calibration calibrate_gpu(const Json& profile_json, const GpuSpec& gpu, const std::vector<Measurements>& measured) {
  Calibration c;
  c.profile = profile_json;
  std::string files;
  for (const Measurements& m : measured)
    files += (files.empty() ? "" : ", ") +
             fmt::format("{} ({}, {}{})", m.file, m.device, m.date,
                         m.sustained && gpu.sustained_scale(MathDtype::bf16) < 1.0
                             ? fmt::format("; rates sustained back to back, divided by the profile's sustained scale {:.3g}"
                                           " (fp8 {:.3g}, attention {:.3g}{}), which it keeps",
                                           gpu.sustained_scale(MathDtype::bf16), gpu.sustained_scale(MathDtype::fp8),
                                           gpu.attention_sustained_scale(),
                                           gpu.power_clock_scale < 1.0
                                               ? fmt::format("; clocks ×{:.3g} at its default_power_limit", gpu.power_clock_scale)
                                               : "")
                             : "");
  // plumb adds the launch overhead to every op, so the GEMM and attention fits take it off first.
  const double overhead = fit_kernel_overhead(c, measured, files);
  fit_gemms(c, gpu, measured, overhead, files);
  // Streaming copies: the median share of the datasheet bandwidth becomes hbm_efficiency. Where the
  // file also timed the scenario's own memory-bound kernels (rows named other than "copy": the host
  // backend's norms and SwiGLU, which a CPU core runs compute-bound, far below its copy rate), those
  // decide instead: their bytes as plumb prices them over their total time, so the scenario's
  // memory-bound work takes its measured time in all (each kernel weighed by its runs a step).
  std::vector<double> copies, kernels;
  double kernel_bytes = 0, kernel_seconds = 0;
  for (const Measurements& m : measured)
    for (const MemoryMeasurement& mm : m.memory) {
      (mm.kernel == "copy" ? copies : kernels).push_back(mm.bytes / mm.seconds / gpu.hbm_bandwidth);
      if (mm.kernel != "copy") kernel_bytes += mm.runs * mm.bytes, kernel_seconds += mm.runs * mm.seconds;
    }
  if (kernels.empty()) set_share(c, "hbm_efficiency", copies, files, "streaming-kernel runs' shares of the datasheet bandwidth");
  else
    set_share(c, "hbm_efficiency", kernels, files, "of the scenario's memory-bound kernels (bytes as plumb prices them over their time)",
              kernel_bytes / kernel_seconds / gpu.hbm_bandwidth);
  fit_attention(c, gpu, measured, overhead, files);
  return c;
}

namespace {

// plumb's collective model with `links` against every row of a log: the times, and the RMS relative error.
double model_against_log(const NcclTestsLog& log, const CollectiveLinks& links, std::vector<double>* predicted = nullptr) {
  GroupPlacement group{log.ranks, std::max<std::int64_t>(1, log.nodes)};
  double sum = 0;
  for (const NcclTestsRow& r : log.rows) {
    double p = collective_cost(log.op, r.bytes, group, links).seconds;
    if (predicted) predicted->push_back(p);
    sum += std::pow((p - r.time_s) / r.time_s, 2);
  }
  return std::sqrt(sum / static_cast<double>(log.rows.size()));
}

// Where f is least over [lo, hi], searched in log space (golden section; f need only be unimodal).
template <class F>
double argmin_log(F f, double lo, double hi) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = std::log(lo), b = std::log(hi);
  double x1 = b - g * (b - a), x2 = a + g * (b - a), f1 = f(std::exp(x1)), f2 = f(std::exp(x2));
  for (int i = 0; i < 80; ++i) {
    if (f1 <= f2) {
      b = x2, x2 = x1, f2 = f1;
      x1 = b - g * (b - a), f1 = f(std::exp(x1));
    } else {
      a = x1, x1 = x2, f1 = f2;
      x2 = a + g * (b - a), f2 = f(std::exp(x2));
    }
  }
  return std::exp((a + b) / 2);
}

// A log's latency scale (the α side): NCCL's latency tables scaled so that plumb's model, with the
// bandwidth already fitted, comes closest to every row. Only where the smallest message shows the
// latency (at least a tenth of its modelled time); a log of large messages leaves the scale alone.
void fit_latency(const NcclTestsLog& log, const GpuSpec& gpu, FabricSpec& calibrated, CollectiveFit& f) {
  f.latency_field = log.nodes > 1 ? "network_latency_scale" : "nvlink_latency_scale";
  std::optional<double>& scale = log.nodes > 1 ? calibrated.network_latency_scale : calibrated.nvlink_latency_scale;
  const std::optional<double> original = scale;
  auto links_at = [&](double s) {
    scale = s;
    return CollectiveLinks::of(gpu, calibrated);
  };
  auto error_at = [&](double s) { return model_against_log(log, links_at(s)); };
  const double before = original.value_or(1.0);
  GroupPlacement group{log.ranks, std::max<std::int64_t>(1, log.nodes)};
  double least = log.rows.front().bytes;
  for (const NcclTestsRow& r : log.rows) least = std::min(least, r.bytes);
  const double with = collective_cost(log.op, least, group, links_at(before)).seconds;
  const double without = collective_cost(log.op, least, group, links_at(0.0)).seconds;
  scale = original;
  if ((with - without) < 0.1 * with) {
    f.latency_field.clear();  // the log's messages are too large to see the latency
    return;
  }
  f.rms_before_latency = error_at(before);
  f.latency_scale = argmin_log(error_at, 1e-3, 100.0);
  scale = f.latency_scale;
}

}  // namespace

Calibration calibrate_fabric(const Json& profile_json, const GpuSpec& gpu, const FabricSpec& fabric,
                             const std::vector<NcclTestsLog>& logs_in) {
  Calibration c;
  c.profile = profile_json;
  FabricSpec calibrated = fabric;
  // Logs inside one node first: a multi-node collective also crosses NVLink, so its network figures
  // are fitted with the NVLink ones already calibrated.
  std::vector<const NcclTestsLog*> logs;
  for (const NcclTestsLog& log : logs_in) logs.push_back(&log);
  std::stable_sort(logs.begin(), logs.end(), [](const NcclTestsLog* a, const NcclTestsLog* b) { return (a->nodes > 1) < (b->nodes > 1); });
  for (const NcclTestsLog* log_ptr : logs) {
    const NcclTestsLog& log = *log_ptr;
    CollectiveFit f;
    f.log = &log;
    const double factor = bus_factor(log.op, log.ranks);
    std::vector<double> x, t;
    for (const NcclTestsRow& r : log.rows) {
      x.push_back(r.bytes * factor);
      t.push_back(r.time_s);
    }
    f.fit = fit_alpha_beta(x, t);
    const double busbw = 1.0 / f.fit.beta;
    const std::int64_t per_node = log.ranks / std::max<std::int64_t>(1, log.nodes);
    std::optional<double>* target = nullptr;
    if (log.nodes > 1) {
      f.field = "nic_effective";
      target = &calibrated.nic_effective;
    } else if (log.op == CollectiveOp::all_reduce && fabric.nvls_allreduce_algbw && per_node == fabric.gpus_per_node) {
      f.field = "nvls_allreduce_algbw";  // a full NVSwitch node all-reduces with NVLS
      target = &calibrated.nvls_allreduce_algbw;
    } else {
      f.field = "nvlink_effective_per_gpu";
      target = &calibrated.nvlink_effective_per_gpu;
    }
    // The figure at which plumb's own collective model reaches the fitted bus bandwidth on a large
    // message (bisection: the modelled bandwidth rises with the figure until another link binds).
    GroupPlacement group{log.ranks, std::max<std::int64_t>(1, log.nodes)};
    const double big = 8.0 * 1073741824.0;
    auto modelled_busbw = [&](double value) {
      *target = value;
      return collective_cost(log.op, big, group, CollectiveLinks::of(gpu, calibrated)).busbw;
    };
    auto solve = [&] {
      double lo = 1e8, hi = 1e13;
      for (int i = 0; i < 100; ++i) {
        double mid = std::sqrt(lo * hi);
        (modelled_busbw(mid) < busbw ? lo : hi) = mid;
      }
      f.value = hi;
      f.reachable = std::abs(modelled_busbw(f.value) / busbw - 1) < 0.01;
    };
    solve();
    if (!f.reachable && f.field == "nvls_allreduce_algbw") {
      // Slower than the ring alone would be: this all-reduce did not run NVLS at the profile's speed
      // (NVLS off, or another GPU). Drop the NVLS figure and fit the NVLink one instead.
      calibrated.nvls_allreduce_algbw.reset();
      c.profile.erase("nvls_allreduce_algbw");
      c.profile["sources"].erase("nvls_allreduce_algbw");
      f.note = "NVLS figure removed: the measured all-reduce is slower than plumb's ring without it";
      f.field = "nvlink_effective_per_gpu";
      target = &calibrated.nvlink_effective_per_gpu;
      solve();
    }
    c.profile[f.field] = fmt::format("{:.1f}GB/s", f.value / 1e9);
    c.profile["sources"][f.field] = fit_source(
        fmt::format("{} on {} ranks over {} node(s), {}; bus bandwidth {:.1f} GB/s, latency {:.1f} us; the value at which plumb's collective "
                    "model reaches that bus bandwidth{}",
                    collective_op_name(log.op), log.ranks, log.nodes, log.device.empty() ? "device not stated" : log.device, busbw / 1e9,
                    f.fit.alpha * 1e6, f.reachable ? "" : " (not reached: another link binds first)"),
        log.file, log.rows.size(), f.fit.rms_relative_error);
    fit_latency(log, gpu, calibrated, f);
    if (!f.latency_field.empty()) {
      c.profile[f.latency_field] = std::round(f.latency_scale * 1000) / 1000;
      c.profile["sources"][f.latency_field] = fit_source(
          fmt::format("{} on {} ranks over {} node(s): the multiple of NCCL's latency tables ({}) at which plumb's collective model, "
                      "with the fitted bandwidth, comes closest to the measured times ({:.1f}% RMS at NCCL's own latencies; the α-β "
                      "fit's latency is {:.1f} us)",
                      collective_op_name(log.op), log.ranks, log.nodes, log.nodes > 1 ? "network hops" : "base latency and NVLink hops",
                      100 * f.rms_before_latency, f.fit.alpha * 1e6),
          log.file, log.rows.size(), model_against_log(log, CollectiveLinks::of(gpu, calibrated)));
    }
    c.collectives.push_back(std::move(f));
  }
  // plumb's own collective model with the calibrated figures, against every measured row.
  CollectiveLinks links = CollectiveLinks::of(gpu, calibrated);
  for (CollectiveFit& f : c.collectives) f.prediction_rms = model_against_log(*f.log, links, &f.predicted_s);
  return c;
}

}  // namespace plumb
