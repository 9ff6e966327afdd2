#pragma once
// Where a profiler trace's GPU time went: per kernel class (count, time, which streams), per stream
// (busy time, launch gaps, compute or communication), the overlap of communication with compute, and
// every kernel no class rule knew.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "validate/trace/kernel_classes.hpp"
#include "validate/trace/trace_reader.hpp"

namespace plumb {

struct ClassTotal {
  std::string name;
  TimelineRole kind = TimelineRole::compute;
  std::string plumb_op;
  std::uint64_t kernels = 0;
  double time_us = 0;                      // the kernels' durations summed
  std::map<std::int32_t, double> streams;  // time per stream
};

struct StreamTotal {
  std::int32_t device = 0, stream = 0;
  std::uint64_t kernels = 0;
  double busy_us = 0;          // union of its kernels' intervals
  double gaps_us = 0;          // idle between consecutive kernels, first start to last end
  double longest_gap_us = 0;
  bool communication = false;  // most of its busy time is communication kernels
  // Its gaps by cause, where the trace has the host's launch calls: a kernel launched before the one
  // ahead of it ended waited only on the device (its launch and ramp, or an event of another stream);
  // one launched after the stream went idle waited on the host for that long.
  std::uint64_t queued_gaps = 0;  // gaps before kernels launched while the stream was busy
  double median_queued_gap_us = 0;
  std::uint64_t host_bound = 0;   // kernels the stream waited on the host for
  double host_wait_us = 0;        // idle from the stream's last end to those kernels' launch calls
};

struct UnknownKernel {
  std::string name;
  std::uint64_t kernels = 0;
  double time_us = 0;
};

// A GEMM op of a trace that recorded shapes, joined with its kernels (by External id): its shape and
// its kernels' time summed (a split-K GEMM's reduction kernel included).
struct GemmSample {
  GemmOpShape shape;
  double time_us = 0;
  std::uint64_t kernels = 0;
};

// A collective's kernel with PyTorch's annotation of its message, and its time.
struct CollectiveSample {
  CollectiveArgs args;
  double time_us = 0;
};

struct TraceSummary {
  std::string file, device_name;
  std::uint64_t gpu_events = 0, events_seen = 0;
  double start_us = 0, span_us = 0;  // first start to last end
  std::vector<ClassTotal> classes;   // every class of the table that occurred, most time first
  std::vector<StreamTotal> streams;
  std::vector<UnknownKernel> unknown;  // most time first
  double unknown_time_us = 0;
  std::map<std::string, double> by_plumb_op;  // gemm, attention, memory, communication
  // Unions over all streams: time any compute kernel ran, any communication kernel ran, both at once.
  double compute_busy_us = 0, communication_busy_us = 0, overlap_us = 0;
  std::vector<GemmSample> gemm_samples;  // in External id order; empty when the trace has no shapes
  std::vector<CollectiveSample> collectives;  // in file order
  // Over the compute streams: the median gap before a kernel launched while its stream was busy (the
  // device's own time between kernels: what plumb's kernel_overhead is), how many such gaps there were,
  // and the time no compute kernel ran while a compute stream waited on the host's launch call.
  double kernel_gap_us = 0;
  std::uint64_t kernel_gaps = 0;
  double host_wait_us = 0;
  std::uint64_t launches_known = 0;  // GPU events whose launch call the trace holds
  // The host's pace: launch calls, the host threads that made them, and the median time between one
  // call and the next on the same thread (the framework's host time a kernel, waits included).
  std::uint64_t launch_calls = 0, launch_threads = 0;
  double launch_interval_us = 0;
  double exposed_communication_us() const { return communication_busy_us - overlap_us; }
};

TraceSummary summarize_trace(const GpuTrace& trace, KernelClassifier& classes);

}  // namespace plumb
