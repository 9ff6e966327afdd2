#include "cli/report/calibrate_report.hpp"

#include <cmath>
#include <fmt/format.h>

namespace plumb {

std::string calibration_report(const Calibration& c) {
  std::string out;
  if (c.kernel_overhead)
    out += fmt::format("kernel overhead: {:.2f} us per launch (back-to-back empty kernels); the GEMM fits below are of the times less it\n",
                       *c.kernel_overhead * 1e6);
  for (const GemmFit& g : c.gemm) {
    out += fmt::format("GEMM efficiency ({}, {}): e(F) = {:.3f} · F / (F + {:.3g} FLOPs) over {} GEMMs, RMS error {:.1f}%\n",
                       math_dtype_name(g.dtype), g.field, g.curve.e_max, g.curve.f_half, g.points, 100 * g.curve.rms_relative_error);
    for (const auto& [from, e] : g.table) out += fmt::format("  from {:>8.0e} FLOPs: {:.3f}\n", from, e);
    if (g.shape)
      out += fmt::format("GEMM efficiency by shape ({}, gemm_model): ceiling {:.3f}, k_overhead {:.0f} (elements of K) on {}x{} tiles, RMS error {:.1f}%\n",
                         math_dtype_name(g.dtype), g.shape->model.ceiling, g.shape->model.k_overhead, g.shape->model.tile_m,
                         g.shape->model.tile_n, 100 * g.shape->rms_relative_error);
    for (const GemmFit::KernelFit& k : g.kernels)
      out += fmt::format("  {} GEMMs (gemm_model.{}.{}): ceiling {:.3f}, k_overhead {:.0f} over {} GEMMs, RMS error {:.1f}%\n", k.kernel,
                         math_dtype_name(g.dtype), k.kernel, k.fit.model.ceiling, k.fit.model.k_overhead, k.points,
                         100 * k.fit.rms_relative_error);
  }
  for (const ShareFit& f : c.shares)
    out += fmt::format("{}: {:.3f} of the {} ({} {} {}, {:.3f}–{:.3f}), RMS error {:.1f}%\n", f.field, f.efficiency,
                       f.field == "hbm_efficiency" ? "datasheet HBM bandwidth" : "bf16 dense peak",
                       f.pooled ? "total over" : "median of", f.points, f.pooled ? "of the scenario's kernels, weighed by runs" : "runs",
                       f.lowest, f.highest, 100 * f.rms_relative_error);
  for (const CollectiveFit& f : c.collectives) {
    const NcclTestsLog& log = *f.log;
    out += fmt::format("\n{}: {} on {} ranks, {} node(s){} — collective from {}\n", log.file, collective_op_name(log.op), log.ranks, log.nodes,
                       log.device.empty() ? "" : ", " + log.device, log.op_source);
    out += fmt::format("  fit: latency {:.2f} us, bus bandwidth {:.1f} GB/s, RMS error {:.1f}% → {} = {:.1f} GB/s{}\n", f.fit.alpha * 1e6,
                       1e-9 / f.fit.beta, 100 * f.fit.rms_relative_error, f.field, f.value / 1e9,
                       f.reachable ? "" : " (plumb's model cannot reach the measured bandwidth through this figure: another link binds)");
    if (!f.note.empty()) out += "  " + f.note + "\n";
    if (!f.latency_field.empty())
      out += fmt::format("  latency: {} = {:.3f} × NCCL's tables (plumb's RMS error over the rows {:.1f}% before, with the bandwidth fitted)\n",
                         f.latency_field, f.latency_scale, 100 * f.rms_before_latency);
    else
      out += "  latency: not fitted (the smallest message is bandwidth-bound in plumb's model)\n";
    out += fmt::format("  {:>14} {:>12} {:>10} {:>12} {:>8}\n", "bytes", "measured us", "fit us", "plumb us", "plumb");
    for (std::size_t i = 0; i < log.rows.size(); ++i) {
      const NcclTestsRow& r = log.rows[i];
      double fit = r.time_s * (1 + f.fit.relative_errors[i]);
      out += fmt::format("  {:>14.0f} {:>12.2f} {:>10.2f} {:>12.2f} {:>+7.1f}%\n", r.bytes, r.time_s * 1e6, fit * 1e6, f.predicted_s[i] * 1e6,
                         100 * (f.predicted_s[i] / r.time_s - 1));
    }
    out += fmt::format("  plumb's collective model with the calibrated profile: RMS error {:.1f}% over {} sizes\n", 100 * f.prediction_rms,
                       log.rows.size());
  }
  if (out.empty()) out = "nothing to fit: give GEMM measurements for a GPU profile or nccl-tests logs for a fabric profile\n";
  return out;
}

namespace {

// " 1-4 TFLOP x0.813 (78), ..., 16 TFLOP and more x0.764 (20)" and a newline.
std::string bands_text(const std::vector<ClockBand>& bands) {
  std::string out;
  for (const ClockBand& b : bands)
    out += b.max_flops > 0 ? fmt::format(" {:g}-{:g} TFLOP x{:.3f} ({}),", b.min_flops / 1e12, b.max_flops / 1e12, b.ratio, b.points)
                           : fmt::format(" {:g} TFLOP and more x{:.3f} ({}),", b.min_flops / 1e12, b.ratio, b.points);
  if (out.empty()) return "\n";
  out.back() = '\n';
  return out;
}

// Each band as {min_flops, max_flops (null: no upper bound), points, <ratio_key>}.
Json bands_json(const std::vector<ClockBand>& bands, const char* ratio_key) {
  Json out = Json::array();
  for (const ClockBand& b : bands)
    out.push_back({{"min_flops", b.min_flops}, {"max_flops", b.max_flops > 0 ? Json(b.max_flops) : Json(nullptr)}, {"points", b.points},
                   {ratio_key, b.ratio}});
  return out;
}

}  // namespace

std::string clock_fit_report(const ClockFit& f, const std::string& profile) {
  std::string out = fmt::format(
      "settled clock: x{:.3f} of {}'s (median of {} dense bf16 GEMMs of {:g} FLOPs or more, quartiles {:.3f}-{:.3f}; the shape model kept)\n",
      f.ratio, profile, f.points, kClockFitMinFlops, f.lower_quartile, f.upper_quartile);
  out += "  by size:" + bands_text(f.bands);
  out += "  (a clock slows every size alike; a ratio that drifts with size points at shapes the model misses)\n";
  if (!f.short_bands.empty())
    out += "  not fitted, shorter GEMMs at the fitted clock (the profile's time over the measured):" + bands_text(f.short_bands);
  if (f.weight_gradient_points > 0)
    out += fmt::format("  not fitted: {} weight-gradient GEMMs as long ran at a median x{:.3f} (a kernel difference, not the clock)\n",
                       f.weight_gradient_points, f.weight_gradient_ratio);
  out += fmt::format("  sustained_compute_scale {:.3f} -> {:.3f}, sustained_compute_scale_fp8 {:.3f} -> {:.3f}, sustained_attention_scale {:.3f} -> {:.3f}\n",
                     f.compute_before, f.compute_after, f.fp8_before, f.fp8_after, f.attention_before, f.attention_after);
  return out;
}

Json clock_fit_json(const ClockFit& f) {
  return {{"clock_ratio", f.ratio},
          {"lower_quartile", f.lower_quartile},
          {"upper_quartile", f.upper_quartile},
          {"points", f.points},
          {"min_flops", kClockFitMinFlops},
          {"bands", bands_json(f.bands, "clock_ratio")},
          {"short_bands", bands_json(f.short_bands, "time_ratio")},
          {"weight_gradient_ratio", f.weight_gradient_ratio},
          {"weight_gradient_points", f.weight_gradient_points},
          {"sustained_compute_scale", {{"before", f.compute_before}, {"after", f.compute_after}}},
          {"sustained_compute_scale_fp8", {{"before", f.fp8_before}, {"after", f.fp8_after}}},
          {"sustained_attention_scale", {{"before", f.attention_before}, {"after", f.attention_after}}},
          {"profile", f.profile}};
}

Json calibration_json(const Calibration& c) {
  Json fits = Json::array();
  for (const GemmFit& g : c.gemm) {
    fits.push_back({{"term", g.field}, {"dtype", std::string(math_dtype_name(g.dtype))}, {"e_max", g.curve.e_max}, {"f_half", g.curve.f_half},
                    {"points", g.points}, {"rms_relative_error", g.curve.rms_relative_error}});
    if (g.shape)
      fits.push_back({{"term", "gemm_model"}, {"dtype", std::string(math_dtype_name(g.dtype))}, {"ceiling", g.shape->model.ceiling},
                      {"k_overhead", g.shape->model.k_overhead}, {"tile", {g.shape->model.tile_m, g.shape->model.tile_n}},
                      {"points", g.points}, {"rms_relative_error", g.shape->rms_relative_error}});
    for (const GemmFit::KernelFit& k : g.kernels)
      fits.push_back({{"term", "gemm_model." + k.kernel}, {"dtype", std::string(math_dtype_name(g.dtype))}, {"ceiling", k.fit.model.ceiling},
                      {"k_overhead", k.fit.model.k_overhead}, {"tile", {k.fit.model.tile_m, k.fit.model.tile_n}}, {"points", k.points},
                      {"rms_relative_error", k.fit.rms_relative_error}});
  }
  if (c.kernel_overhead) fits.push_back({{"term", "kernel_overhead"}, {"value", *c.kernel_overhead}});
  for (const ShareFit& f : c.shares)
    fits.push_back({{"term", f.field}, {"value", f.efficiency}, {"lowest", f.lowest}, {"highest", f.highest}, {"points", f.points},
                    {"rms_relative_error", f.rms_relative_error}, {"fit", f.pooled ? "total" : "median"}});
  for (const CollectiveFit& f : c.collectives)
    fits.push_back({{"term", f.field}, {"file", f.log->file}, {"op", std::string(collective_op_name(f.log->op))}, {"ranks", f.log->ranks},
                    {"nodes", f.log->nodes}, {"alpha_s", f.fit.alpha}, {"bus_bandwidth", 1.0 / f.fit.beta}, {"value", f.value},
                    {"points", f.log->rows.size()}, {"rms_relative_error", f.fit.rms_relative_error},
                    {"prediction_rms_relative_error", f.prediction_rms}});
  for (const CollectiveFit& f : c.collectives)
    if (!f.latency_field.empty())
      fits.push_back({{"term", f.latency_field}, {"file", f.log->file}, {"op", std::string(collective_op_name(f.log->op))},
                      {"value", f.latency_scale}, {"alpha_s", f.fit.alpha}, {"rms_before", f.rms_before_latency},
                      {"prediction_rms_relative_error", f.prediction_rms}});
  return {{"fits", fits}, {"profile", c.profile}};
}

std::string trace_calibration_report(const TraceCalibration& c) {
  std::string out = fmt::format("{:<38} {:>8} {:>12} {:>14} {:>13} {:>8}\n", "figure (fitted to the trace's classes)", "kernels", "measured ms",
                                "plumb before", "plumb after", "scale");
  for (const TraceFit& f : c.fits) {
    if (f.measured <= 0) {
      out += fmt::format("{:<38} {:>8} {:>12}   not fitted: the trace has no {} kernels\n", f.field, 0, "–", f.classes);
      continue;
    }
    out += fmt::format("{:<38} {:>8} {:>12.3f} {:>14.3f} {:>13.3f} {:>8}{}\n", f.field, f.kernels, 1e3 * f.measured, 1e3 * f.predicted_before,
                       1e3 * f.predicted_after, f.per_shape ? "shapes" : fmt::format("{:.4f}", f.scale),
                       f.capped ? "  (capped at the peak)" : "");
  }
  if (!c.shape_fits.empty()) {
    out += fmt::format("\n{:<38} {:>8} {:>8} {:>22} {:>22}\n", "gemm_model fitted per shape", "GEMMs", "kernels", "before: ceiling, K ovh",
                       "after: ceiling, K ovh");
    for (const TraceShapeFit& f : c.shape_fits)
      out += fmt::format("{:<38} {:>8} {:>8} {:>9.3f} {:>5.0f} ({:>4.1f}%) {:>9.3f} {:>5.0f} ({:>4.1f}%)\n", "gemm_model." + f.dtype, f.gemms,
                         f.kernels, f.before.ceiling, f.before.k_overhead, 100 * f.rms_before, f.after.ceiling, f.after.k_overhead,
                         100 * f.rms_after);
    out += "(each op's time at its shape, the profile's tile and sustained clock; the % is the RMS error of the ops' times)\n";
  }
  if (c.kernel_overhead)
    out += fmt::format("\nkernel_overhead {:.2f} us: the median of {} gaps before a compute kernel launched while its stream was busy "
                       "(the efficiencies above were fitted to kernel durations, priced without it)\n",
                       1e6 * *c.kernel_overhead, c.kernel_gaps);
  else
    out += fmt::format("\nkernel_overhead not fitted: the trace has fewer than {} gaps between kernels launched while their stream was busy "
                       "(or no launch calls)\n", kFewestKernelGaps);
  if (c.host_overhead)
    out += fmt::format("training.host_overhead {:.1f} us a plumb kernel (the framework's, not the GPU's: give it with --set): the trace's "
                       "launch calls at their median pace, over plumb's {} kernels of the stage's forward and backward; with it plumb's GPU "
                       "waits {:.3f} ms on the host there\n",
                       1e6 * *c.host_overhead, c.plumb_kernels, 1e3 * c.host_wait_predicted);
  out += fmt::format("\nthe stage's span, not fitted: measured {:.3f} ms, plumb {:.3f} ms before ({:+.1f}%), {:.3f} ms with the calibrated "
                     "profile ({:+.1f}%)\n",
                     1e3 * c.measured_span, 1e3 * c.span_before, 100 * (c.span_before / c.measured_span - 1), 1e3 * c.span_after,
                     100 * (c.span_after / c.measured_span - 1));
  out += "communication: its kernels' time in a trace includes the wait for their peers; --fabric-out fits the fabric to the "
         "fastest kernel of each message size where PyTorch annotated them\n";
  return out;
}

Json trace_calibration_json(const TraceCalibration& c) {
  Json fits = Json::array();
  for (const TraceFit& f : c.fits)
    fits.push_back({{"term", f.field}, {"classes", f.classes}, {"kernels", f.kernels}, {"measured_s", f.measured},
                    {"predicted_before_s", f.predicted_before}, {"predicted_after_s", f.predicted_after}, {"scale", f.scale},
                    {"capped", f.capped}, {"per_shape", f.per_shape}});
  Json shapes = Json::array();
  for (const TraceShapeFit& f : c.shape_fits)
    shapes.push_back({{"term", "gemm_model." + f.dtype}, {"gemms", f.gemms}, {"kernels", f.kernels},
                      {"before", {{"ceiling", f.before.ceiling}, {"k_overhead", f.before.k_overhead}, {"rms_time_error", f.rms_before}}},
                      {"after", {{"ceiling", f.after.ceiling}, {"k_overhead", f.after.k_overhead}, {"rms_time_error", f.rms_after}}}});
  return {{"fits", fits},
          {"shape_fits", shapes},
          {"span", {{"measured_s", c.measured_span}, {"before_s", c.span_before}, {"after_s", c.span_after}}},
          {"kernel_overhead", c.kernel_overhead ? Json{{"seconds", *c.kernel_overhead}, {"gaps", c.kernel_gaps}} : Json()},
          {"host_overhead", c.host_overhead ? Json{{"seconds", *c.host_overhead}, {"plumb_kernels", c.plumb_kernels},
                                                   {"predicted_host_wait_s", c.host_wait_predicted}}
                                            : Json()},
          {"profile", c.profile}};
}

}  // namespace plumb
