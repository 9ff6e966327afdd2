#include "validate/run/trace_calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "models/hardware/hardware.hpp"
#include "models/input/diagnostics.hpp"
#include "validate/calibrate/fit.hpp"
#include "models/costs/step_costs.hpp"
#include "validate/run/trace_compare.hpp"

namespace plumb {

namespace {

// Scales a share of the peak in place, at most 1; whether it hit the cap.
bool scale_share(Json& value, double s) {
  const double scaled = value.get<double>() * s;
  value = std::round(std::min(1.0, scaled) * 10000) / 10000;
  return scaled > 1.0;
}

// Every GEMM figure: each shape model's ceiling (and its weight-gradient and grouped kernels') and
// each efficiency table's rows.
bool scale_gemms(Json& profile, double s) {
  bool capped = false;
  if (profile.contains("gemm_model"))
    for (auto& [dtype, model] : profile["gemm_model"].items()) {
      capped |= scale_share(model["ceiling"], s);
      for (const char* kernel : {"weight_gradient", "grouped"})
        if (model.contains(kernel)) {
          capped |= scale_share(model[kernel]["ceiling"], s);
          if (model[kernel].contains("weight_gradient")) capped |= scale_share(model[kernel]["weight_gradient"]["ceiling"], s);
        }
    }
  for (const char* table : {"gemm_efficiency", "gemm_efficiency_fp8"})
    if (profile.contains(table))
      for (Json& row : profile[table]) capped |= scale_share(row["efficiency"], s);
  return capped;
}

GpuSpec read_profile_json(const Json& profile) {
  Diagnostics d;
  SourceFile src{"the calibrated profile", {}, &d, {}};
  std::optional<GpuSpec> gpu = read_gpu(profile, "", src);
  d.throw_if_any();
  return *gpu;
}

struct Measured {
  double gemm = 0, attention_forward = 0, attention_backward = 0, memory = 0;
  std::uint64_t gemm_kernels = 0, forward_kernels = 0, backward_kernels = 0, memory_kernels = 0;
};

Measured measured_of(const TraceSummary& t) {
  Measured m;
  for (const ClassTotal& c : t.classes) {
    const double s = c.time_us * 1e-6;
    if (c.plumb_op == "gemm") m.gemm += s, m.gemm_kernels += c.kernels;
    else if (c.name == "attention_forward") m.attention_forward += s, m.forward_kernels += c.kernels;
    else if (c.name == "attention_backward") m.attention_backward += s, m.backward_kernels += c.kernels;
    else if (c.plumb_op == "memory") m.memory += s, m.memory_kernels += c.kernels;
  }
  return m;
}

// Relative error of the ops' times under a shape model: time ∝ 1/efficiency.
double rms_time_error(const std::vector<GemmShapePoint>& points, const GemmShapeModel& model, std::int64_t sms) {
  double sum = 0;
  for (const GemmShapePoint& p : points) {
    const double e = model.efficiency(p.m, p.n, p.k, p.groups, sms);
    sum += (p.efficiency / e - 1) * (p.efficiency / e - 1);
  }
  return points.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(points.size()));
}

// gemm_model.<dtype> fitted to the trace's GEMM ops with shapes, per dtype the GPU has a peak for: each
// op's efficiency is its FLOPs over its kernels' time at the dtype's peak and sustained clock (a trace
// is a training step, so its clocks are the sustained ones the profile scales by).
std::vector<TraceShapeFit> fit_trace_shapes(Json& profile, const GpuSpec& gpu, const TraceSummary& trace) {
  std::vector<TraceShapeFit> fits;
  for (MathDtype dtype : {MathDtype::bf16, MathDtype::fp8}) {
    if (!gpu.peak_dense.count(dtype)) continue;
    TraceShapeFit f;
    f.dtype = std::string(math_dtype_name(dtype));
    std::vector<GemmShapePoint> points;
    for (const GemmSample& g : trace.gemm_samples) {
      if (gemm_input_type_name(g.shape.dtype) != f.dtype || !(g.time_us > 0) || !std::isfinite(g.time_us)) continue;
      const double flops = 2 * g.shape.m * g.shape.n * g.shape.k * g.shape.groups;
      points.push_back({g.shape.m, g.shape.n, g.shape.k, g.shape.groups,
                        flops / (g.time_us * 1e-6 * gpu.peak_dense.at(dtype) * gpu.sustained_scale(dtype))});
      f.kernels += g.kernels;
    }
    const std::optional<GemmShapeFit> fit = points.size() < 3 ? std::nullopt : fit_shape_on_profile_tile(points, gpu, dtype);
    if (!fit) continue;
    f.gemms = points.size();
    if (auto it = gpu.gemm_model.find(dtype); it != gpu.gemm_model.end()) f.before = it->second;
    else f.before.ceiling = gpu.gemm_efficiency_at(1e12, dtype);  // the table's large-GEMM row, for the comparison
    f.after = fit->model;
    f.rms_before = rms_time_error(points, f.before, gpu.sms);
    f.rms_after = rms_time_error(points, f.after, gpu.sms);
    write_shape_model(profile["gemm_model"][f.dtype], f.after);
    profile["sources"]["gemm_model"] = fmt::format(
        "fitted per shape by plumb calibrate --trace {}: {} {} GEMM ops ({} kernels) with recorded shapes, at the sustained clock, "
        "RMS time error {:.1f}% (the profile's model before: {:.1f}%)",
        trace.file, f.gemms, f.dtype, f.kernels, 100 * f.rms_after, 100 * f.rms_before);
    fits.push_back(f);
  }
  return fits;
}

}  // namespace

TraceCalibration calibrate_from_trace(const Json& profile_json, const Job& job, const TraceSummary& trace, std::int64_t stage) {
  TraceCalibration c;
  c.profile = profile_json;
  const Measured m = measured_of(trace);
  const std::string kernel(attention_kernel_name(job.training.attention_kernel));
  const GpuSpec original = read_profile_json(c.profile);
  // The kernel the job runs keeps its own figures where the profile's catalogue has some for it.
  const std::string forward_field = GpuSpec::attention_key(kernel, "efficiency");
  const std::string backward_field = GpuSpec::attention_key(kernel, "backward_efficiency");
  // Figures the profile leaves to others get their effective values first, so they can be scaled.
  auto effective = [&](const std::string& field, double value) {
    if (c.profile.contains(field)) return;
    c.profile[field] = value;
    c.profile["sources"][field] = "the figure plumb used before (the profile left it to another)";
  };
  effective(forward_field, original.attention_efficiency_of(kernel, false));
  effective(backward_field, original.attention_efficiency_of(kernel, true));
  effective("hbm_efficiency", original.hbm_efficiency);
  // Kernel durations carry no launch gap: the efficiencies are fitted priced without one.
  const Json earlier_overhead = c.profile.value("kernel_overhead", Json());
  c.profile.erase("kernel_overhead");
  Job priced = job;
  priced.cluster.gpu = original;
  const StagePrediction before = predict_stage(priced, stage);
  c.measured_span = trace.span_us * 1e-6;
  c.span_before = before.span;
  c.fits = {{"gemm_model", "gemm, grouped_gemm", m.gemm_kernels, m.gemm, before.gemm},
            {forward_field, "attention_forward", m.forward_kernels, m.attention_forward, before.attention_forward},
            {backward_field, "attention_backward", m.backward_kernels, m.attention_backward, before.attention_backward},
            {"hbm_efficiency", "every memory-bound class", m.memory_kernels, m.memory, before.memory}};
  c.shape_fits = fit_trace_shapes(c.profile, original, trace);
  if (!c.shape_fits.empty()) c.fits[0].per_shape = true;
  priced.cluster.gpu = read_profile_json(c.profile);
  StagePrediction now = predict_stage(priced, stage);
  for (int round = 0; round < 6; ++round) {
    const double predicted[] = {now.gemm, now.attention_forward, now.attention_backward, now.memory};
    bool agree = true;
    for (std::size_t i = 0; i < c.fits.size(); ++i) {
      TraceFit& f = c.fits[i];
      if (f.measured <= 0 || predicted[i] <= 0 || f.capped || f.per_shape) continue;
      const double s = predicted[i] / f.measured;
      if (std::abs(s - 1) < 1e-3) continue;
      agree = false;
      f.scale *= s;
      f.capped = f.field == "gemm_model" ? scale_gemms(c.profile, s) : scale_share(c.profile[f.field], s);
    }
    if (agree) break;
    priced.cluster.gpu = read_profile_json(c.profile);
    now = predict_stage(priced, stage);
  }
  const double after[] = {now.gemm, now.attention_forward, now.attention_backward, now.memory};
  for (std::size_t i = 0; i < c.fits.size(); ++i) {
    TraceFit& f = c.fits[i];
    f.predicted_after = after[i];
    if (f.measured <= 0 || f.per_shape) continue;
    c.profile["sources"][f.field] = fmt::format(
        "calibrated by plumb calibrate --trace {} (stage {} of {}, {} layers): {} kernels of {} took {:.3f} ms, plumb {:.3f} ms before, "
        "{:.3f} ms after scaling by {:.4f}{}; earlier: {}",
        trace.file, stage, job.name, now.layers, f.kernels, f.classes, 1e3 * f.measured, 1e3 * f.predicted_before, 1e3 * f.predicted_after,
        f.scale, f.capped ? " (capped at the datasheet peak)" : "",
        profile_json.contains("sources") && profile_json["sources"].is_object() ? profile_json["sources"].value(f.field, std::string("none")) : "none");
  }
  if (trace.kernel_gaps >= kFewestKernelGaps) {
    c.kernel_overhead = trace.kernel_gap_us * 1e-6;
    c.kernel_gaps = trace.kernel_gaps;
    c.profile["kernel_overhead"] = fmt::format("{:.3f}us", trace.kernel_gap_us);
    c.profile["sources"]["kernel_overhead"] = fmt::format(
        "plumb calibrate --trace {}: the median of {} gaps before a compute kernel launched while its stream was still busy (the "
        "device's own time between kernels; gaps waiting on the host's launch calls left out)",
        trace.file, trace.kernel_gaps);
  } else if (!earlier_overhead.is_null()) {
    c.profile["kernel_overhead"] = earlier_overhead;
  }
  priced.cluster.gpu = read_profile_json(c.profile);
  if (trace.launch_calls >= kFewestKernelGaps && trace.launch_interval_us > 0) {
    const StepCosts costs = step_costs(priced);  // kept: a reference into a temporary's stages would dangle
    const StageCost& s = costs.stages[static_cast<std::size_t>(stage)];
    c.plumb_kernels = s.forward.kernels + s.backward.kernels;
    if (c.plumb_kernels > 0) {
      c.host_overhead = static_cast<double>(trace.launch_calls) * trace.launch_interval_us * 1e-6 / static_cast<double>(c.plumb_kernels);
      priced.training.host_overhead = *c.host_overhead;
      const StepCosts hosted = step_costs(priced);
      const StageCost& h = hosted.stages[static_cast<std::size_t>(stage)];
      c.host_wait_predicted = h.forward.host_wait + h.backward.host_wait;
    }
  }
  c.span_after = predict_stage(priced, stage).span;
  return c;
}

}  // namespace plumb
