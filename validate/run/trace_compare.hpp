#pragma once
// plumb's prediction for one pipeline stage's forward and backward set beside a profiler trace of
// them (plumb compare SCENARIO --trace): GPU time per op class plumb prices (GEMM, attention,
// memory-bound, communication) and the span, each with its error. The prediction sums every op of the
// stage's transformer layers over the forward, input-gradient and weight-gradient passes (its
// recomputation included) at the scenario's GPU profile, and the stage's TP, EP and CP communication;
// the span is its F&B pair where the schedule overlaps one, else its forward then its backward.
#include <cstdint>
#include <string>
#include <vector>

#include "models/scenario/job.hpp"
#include "validate/trace/trace_reader.hpp"
#include "validate/trace/trace_summary.hpp"

namespace plumb {

struct TraceClassComparison {
  std::string op;  // gemm, attention, memory, communication
  double measured = 0, predicted = 0;  // seconds
};

struct TraceComparison {
  std::string scenario, trace, device;
  std::int64_t stage = 0, layers = 0;
  bool pair = false;                   // the span is an F&B pair (DualPipe's)
  double measured_span = 0, predicted_span = 0;
  std::vector<TraceClassComparison> classes;
  // Per stream role over the span: compute busy and idle, communication busy, under compute and
  // exposed (the trace's streams by role against the simulated step's compute and communication
  // streams for the same ops).
  std::vector<TraceClassComparison> streams;
  double unknown = 0;                  // trace seconds in kernels no class rule knew
  // The collectives PyTorch annotated with their message: per collective, group and size, the fastest
  // kernel (the least delayed by its peers) against plumb's collective model at the scenario's fabric.
  struct Collective {
    std::string op;
    std::int64_t ranks = 0, nodes = 0;
    double bytes = 0, measured = 0, predicted = 0;  // seconds
  };
  std::vector<Collective> collectives;
};

// plumb's GPU time for a stage's layers over their three passes (recomputation included), per op class
// plumb prices, attention's forward apart from its backward; its TP/EP/CP communication; and its span.
struct StagePrediction {
  std::int64_t layers = 0;
  double gemm = 0, attention_forward = 0, attention_backward = 0, memory = 0, communication = 0;
  bool pair = false;
  double span = 0;
  double host_wait = 0;  // the GPU's waits on the host in the stage's forward and backward (training.host_overhead)
};
// Throws InputError naming --stage when the stage is not one of the job's or holds no layer.
StagePrediction predict_stage(const Job& job, std::int64_t stage);

// The same ops as the simulated step ran them: the union of its compute stream's busy time, of its
// communication streams', their overlap, and the ops' span (first start to last end).
struct StreamPrediction {
  double compute_busy = 0, communication_busy = 0, overlap = 0, span = 0;
};
StreamPrediction predict_streams(const Job& job, std::int64_t stage);

TraceComparison compare_trace(const Job& job, const TraceSummary& trace, std::int64_t stage);

// A Chrome trace (opens in Perfetto) with the measured kernels (a process, a thread per stream, each
// kernel named by its class) beside plumb's own run of the stage's first F&B pair (or its first forward
// and backward where the schedule pairs none) from the simulated step: both from time 0.
Json side_by_side_timeline(const Job& job, const GpuTrace& trace, KernelClassifier& classes, std::int64_t stage);

}  // namespace plumb
