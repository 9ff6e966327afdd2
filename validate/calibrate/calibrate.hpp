#pragma once
// plumb calibrate: fits a GPU profile's GEMM efficiency (its table by size and its model by shape) to measured GEMMs and a fabric
// profile's bandwidths to nccl-tests logs, writes the calibrated profile (every fitted figure with
// its fit as its source) and reports the fit error per term and plumb's collective prediction with
// the calibrated profile against every measured row.
#include <optional>
#include <string>
#include <vector>

#include "models/hardware/hardware.hpp"
#include "models/input/json_reader.hpp"
#include "validate/calibrate/fit.hpp"
#include "validate/calibrate/nccl_tests_log.hpp"

namespace plumb {

// plumb's own measurement file (plumb-validate bench writes it; small JSON with device and date):
// {"plumb_measurements": 1, "device": …, "date": …, "gemm": [{"m", "n", "k", "dtype", "seconds", "groups"?, "pass"?}],
//  "memory": [{"kernel", "bytes", "seconds", "runs"?}], "attention": [{"batch_heads", "seq", "d_qk", "d_v",
//  "causal", "forward_seconds", "backward_seconds"}], "launch": {"kernels", "seconds_per_kernel"}} —
// `bytes` read and written by a streaming kernel; `attention` the flash kernel's passes;
// `launch` back-to-back empty kernels, each's share of the time. A GEMM row of `groups` > 1 is a
// grouped (expert) GEMM of that many m × n × k products; `pass` "weight_gradient" marks the weight
// gradient's GEMM (its own kernel in some frameworks: accumulating into fp32), "forward" (the default)
// and "input_gradient" the others. An optional top-level "sustained": true says the timed calls ran
// back to back at the clock a step sustains (Measurements::sustained).
struct GemmMeasurement {
  double m = 0, n = 0, k = 0, groups = 1;
  MathDtype dtype = MathDtype::bf16;
  bool weight_gradient = false;
  double seconds = 0;
  double flops() const { return 2 * m * n * k * groups; }
};
struct MemoryMeasurement {
  std::string kernel;  // "copy", or one of the scenario's memory-bound kernels ("stage 0 · SwiGLU (forward)")
  double bytes = 0, seconds = 0;
  double runs = 1;  // a scenario kernel: how often a step of the shrunk run executes it
};
struct AttentionMeasurement {
  double batch_heads = 0, seq = 0, d_qk = 0, d_v = 0;
  bool causal = true;
  double forward_seconds = 0, backward_seconds = 0;
  std::string what;  // "the scenario's" or "sweep"
};
struct Measurements {
  std::string file, device, date;
  std::vector<GemmMeasurement> gemm;
  std::vector<MemoryMeasurement> memory;
  std::vector<AttentionMeasurement> attention;
  std::optional<double> kernel_overhead;  // seconds per kernel (launch)
  // The kernels ran back to back long enough to hold the clock a training step holds (plumb's optional
  // top-level "sustained": true): their rates are divided by the profile's sustained_compute_scale
  // (attention's by its sustained_attention_scale where it has one), which the calibrated profile keeps
  // and applies again, so a prediction gives the measured rate.
  bool sustained = false;
  std::vector<std::string> left_out;  // what the file holds that was not read as measurements, and why
};
Measurements read_measurements(const Json& doc, const std::string& file);  // throws InputError

struct CollectiveFit {
  const NcclTestsLog* log = nullptr;
  AlphaBeta fit;          // time = α + bytes × bus factor × β: 1/β is the bus bandwidth
  std::string field;      // the fabric figure it sets
  double value = 0;       // bytes/s written to it
  bool reachable = true;
  std::string note;  // false when plumb's model cannot reach the fitted bandwidth through this figure
  std::string latency_field;        // the latency scale it sets (empty: the log's messages are too large to show latency)
  double latency_scale = 1;         // × NCCL's latency tables, written to latency_field
  double rms_before_latency = 0;    // plumb's model against the rows before the latency fit (bandwidth fitted)
  std::vector<double> predicted_s;  // plumb's collective model with the calibrated fabric, per row
  double prediction_rms = 0;        // relative
};

struct GemmFit {
  MathDtype dtype = MathDtype::bf16;
  std::string field;  // gemm_efficiency (bf16) or gemm_efficiency_fp8
  EfficiencyCurve curve;
  std::vector<std::pair<double, double>> table;  // the profile's new rows for `field`
  std::size_t points = 0;
  std::optional<GemmShapeFit> shape;  // gemm_model.<dtype>, when the dense GEMMs span several K
  // The other kernels' models the measurements held (each over several K): "weight_gradient",
  // "grouped", "grouped.weight_gradient" under gemm_model.<dtype>.
  struct KernelFit {
    std::string kernel;
    GemmShapeFit fit;
    std::size_t points = 0;
  };
  std::vector<KernelFit> kernels;
};

// A figure set to the median of measured shares, with their spread: streaming kernels' share of the
// datasheet HBM bandwidth (hbm_efficiency), the flash attention passes' share of the bf16 dense peak
// (attention_efficiency, attention_backward_efficiency; plumb's FLOPs for the pass over its time less
// the kernel overhead).
struct ShareFit {
  std::string field;
  double efficiency = 0, lowest = 0, highest = 0;
  std::size_t points = 0;
  double rms_relative_error = 0;  // of the time the median predicts against each run's (launch aside)
  bool pooled = false;  // the runs' total work over their total time, not their median
};

struct Calibration {
  Json profile;  // the calibrated profile, ready to write
  std::vector<CollectiveFit> collectives;
  std::vector<GemmFit> gemm;  // one per dtype measured (bf16, fp8)
  std::vector<ShareFit> shares;  // hbm_efficiency, attention_efficiency, attention_backward_efficiency: those measured
  std::optional<double> kernel_overhead;  // the median measured, set in the profile
};

// `profile_json` is the profile as written (kept whole; only fitted figures and their sources change).
Calibration calibrate_gpu(const Json& profile_json, const GpuSpec& gpu, const std::vector<Measurements>& measured);
Calibration calibrate_fabric(const Json& profile_json, const GpuSpec& gpu, const FabricSpec& fabric,
                             const std::vector<NcclTestsLog>& logs);

}  // namespace plumb
