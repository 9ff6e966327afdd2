#pragma once
// plumb calibrate --trace: a GPU profile fitted so that one pipeline stage of a scenario, priced with
// it, spends the GPU time its profiler trace shows per op class — GEMMs (every GEMM model's ceiling and
// table scaled alike), attention forward and backward (the fused-attention efficiencies the scenario's
// kernel uses), memory-bound kernels (hbm_efficiency). Each figure is scaled by predicted over measured
// time and the stage priced again until they agree (op times are rooflines, so a few rounds), capped
// at the datasheet peak. Communication is not fitted: a communication kernel's time in a trace
// includes its wait for the peers. Where the trace recorded shapes (torch.profiler record_shapes),
// the GEMMs are fitted per shape first: gemm_model.<dtype>'s ceiling and K overhead by least squares
// over every GEMM op's time at its (m, n, k), on the profile's tile, at its sustained clock; the GEMM
// class is then not scaled. The efficiencies are fitted to the kernels' durations, priced without a
// kernel overhead; kernel_overhead is then the trace's own: the median gap before a compute kernel
// launched while its stream was busy (TraceSummary::kernel_gap_us), where the trace holds 20 or more.
// The framework's host time a kernel (training.host_overhead, not a GPU figure: reported, not written
// to the profile) from the host's launch calls, and the stage's span after is priced with it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/input/json_reader.hpp"
#include "models/scenario/job.hpp"
#include "validate/trace/trace_summary.hpp"

namespace plumb {

struct TraceFit {
  std::string field;     // gemm_model (every GEMM figure), attention_efficiency, attention_backward_efficiency, hbm_efficiency
  std::string classes;   // the trace's kernel classes it was fitted to
  std::uint64_t kernels = 0;
  double measured = 0, predicted_before = 0, predicted_after = 0;  // seconds
  double scale = 1;       // applied to the figure
  bool capped = false;    // the figure reached the datasheet peak before the times agreed
  bool per_shape = false; // gemm_model fitted per shape instead (TraceShapeFit), not scaled
};

// gemm_model.<dtype> fitted to the GEMM ops whose shapes the trace recorded.
struct TraceShapeFit {
  std::string dtype;
  std::size_t gemms = 0;        // ops (shapes) it was fitted to
  std::uint64_t kernels = 0;    // their kernels
  GemmShapeModel before, after;
  double rms_before = 0, rms_after = 0;  // relative error of the ops' times
};

struct TraceCalibration {
  Json profile;  // the calibrated GPU profile, ready to write
  std::vector<TraceFit> fits;
  std::vector<TraceShapeFit> shape_fits;
  double measured_span = 0, span_before = 0, span_after = 0;  // the stage's span (F&B pair where paired)
  std::optional<double> kernel_overhead;  // seconds, set from the trace's gaps
  std::uint64_t kernel_gaps = 0;          // the gaps it is the median of
  // The framework's host time a plumb kernel (training.host_overhead): the trace's launch calls at their
  // median pace on their threads, spread over the kernels plumb prices for the stage's forward and
  // backward; and the GPU's waits on the host it predicts for them (the trace's: TraceSummary::host_wait_us).
  std::optional<double> host_overhead;
  std::uint64_t plumb_kernels = 0;
  double host_wait_predicted = 0;
};
constexpr std::uint64_t kFewestKernelGaps = 20;

// `profile_json`: the GPU profile as written (whole, its base resolved); `job` priced with it.
TraceCalibration calibrate_from_trace(const Json& profile_json, const Job& job, const TraceSummary& trace, std::int64_t stage);

}  // namespace plumb
