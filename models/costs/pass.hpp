#pragma once
// A pass of one micro-batch on one stage (forward, input gradient, weight gradient, backward) as a
// chain of segments, each some compute followed by (or beside) a communication of one kind, and the
// span two passes take when DualPipe interleaves them on one GPU.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace plumb {

enum class CommKind : std::uint8_t { tp, ep, pp, dp, cp };
inline constexpr std::size_t kCommKinds = 5;
std::string_view comm_kind_name(CommKind k);

struct Segment {
  double compute = 0;  // seconds on the compute stream
  double comm = 0;     // seconds on a communication stream, after the compute (or beside it)
  CommKind kind = CommKind::tp;
  bool overlapped = false;  // the communication runs beside this compute (CP's ring exchange) instead of after it
  bool copy_engine = false;  // the communication is copies on the copy engines, holding no SMs (async TP)
  double span() const { return overlapped ? std::max(compute, comm) : compute + comm; }
};

struct Pass {
  std::vector<Segment> segments;
  // The host's issue of the pass's kernels, each taking the framework's host time (training.host_overhead):
  // how many, how long the host takes to issue them all, their GPU time, and when the last would end if
  // only the issue order and each kernel's own time mattered — the host runs ahead while the GPU is
  // busy, and the GPU waits where the host has not yet issued its next kernel (max over kernels i of the
  // host's issue of 1…i plus the GPU time of i…n). Composes over `append`.
  std::uint64_t kernels = 0;
  double host_issue = 0, issued_compute = 0, issue_end = 0;
  // The GPU's waits on the host that `settle_host` spread over the segments.
  double host_wait = 0;
  // ZeRO's per-micro-batch traffic: stage 3's parameter gathers, and stages 2 and 3's gradient
  // reduce-scatters in the passes that make weight gradients; issued when the pass starts, bucketed
  // layer by layer beside it, and waited for at its end. Kind dp.
  double background = 0;

  double compute() const;
  double comm(CommKind k) const;
  double span() const;  // run alone: the segments one after another, and at least the background
  // What the pass puts through the GPU's network port: its communication of the kinds that cross
  // nodes (`network`), the background included when data parallelism crosses them.
  double port_load(const std::array<bool, kCommKinds>& network) const;
  // span(), and at least the port load: the background shares the port with the pass's own traffic.
  double span(const std::array<bool, kCommKinds>& network) const { return std::max(span(), port_load(network)); }
  // Appends compute (merged into the last segment when that one has no communication yet).
  void add_compute(double seconds);
  void add_comm(double seconds, CommKind kind);
  void add_overlapped(double compute, double comm, CommKind kind, double host = 0, bool copy_engine = false);
  // A kernel the host issues in `host` seconds that computes for `seconds` (compute only when the host is free).
  void add_kernel(double seconds, double host);
  // The GPU's waits on the host (issue_end over issued_compute) added to the segments' compute, in
  // proportion to it: once per assembled pass.
  void settle_host();
  void append(const Pass& other);
};

// Two passes interleaved segment by segment on one compute stream and one communication stream, as
// DualPipe overlaps a forward with a backward chunk (each one's communication hides under the other's
// compute). Returns the makespan without SM sharing, and at least both passes' port load.
double interleaved_span(const Pass& a, const Pass& b, const std::array<bool, kCommKinds>& network = {});

}  // namespace plumb
