#include "models/costs/pass.hpp"

#include <algorithm>

namespace plumb {

std::string_view comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::tp: return "tp";
    case CommKind::ep: return "ep";
    case CommKind::pp: return "pp";
    case CommKind::dp: return "dp";
    case CommKind::cp: return "cp";
  }
  return "?";
}

double Pass::compute() const {
  double s = 0;
  for (const Segment& g : segments) s += g.compute;
  return s;
}

double Pass::comm(CommKind k) const {
  double s = k == CommKind::dp ? background : 0.0;
  for (const Segment& g : segments)
    if (g.kind == k) s += g.comm;
  return s;
}

double Pass::span() const {
  double s = 0;
  for (const Segment& g : segments) s += g.span();
  return std::max(s, background);
}

double Pass::port_load(const std::array<bool, kCommKinds>& network) const {
  auto crosses = [&](CommKind k) { return network[static_cast<std::size_t>(k)]; };
  double s = crosses(CommKind::dp) ? background : 0.0;
  for (const Segment& g : segments)
    if (crosses(g.kind)) s += g.comm;
  return s;
}

void Pass::add_compute(double seconds) {
  if (seconds <= 0) return;
  if (!segments.empty() && segments.back().comm == 0 && !segments.back().overlapped)
    segments.back().compute += seconds;
  else
    segments.push_back({seconds});
}

void Pass::add_comm(double seconds, CommKind kind) {
  if (seconds <= 0) return;
  if (!segments.empty() && segments.back().comm == 0 && !segments.back().overlapped) {
    segments.back().comm = seconds;
    segments.back().kind = kind;
  } else {
    segments.push_back({0, seconds, kind});
  }
}

namespace {
// The host-issue bookkeeping of `b` after `a` (Pass::issue_end): a's kernels end, then b's; or b's end
// after the host has issued a's and then b's own.
void compose_issue(Pass& a, std::uint64_t kernels, double host, double compute, double end) {
  a.issue_end = std::max(a.issue_end + compute, a.host_issue + end);
  a.host_issue += host;
  a.issued_compute += compute;
  a.kernels += kernels;
}
}  // namespace

void Pass::add_kernel(double seconds, double host) {
  if (seconds <= 0) return;
  compose_issue(*this, 1, host, seconds, host + seconds);
  add_compute(seconds);
}

void Pass::add_overlapped(double compute, double comm, CommKind kind, double host, bool copy_engine) {
  if (compute > 0) compose_issue(*this, 1, host, compute, host + compute);
  if (comm <= 0) return add_compute(compute);
  segments.push_back({compute, comm, kind, true, copy_engine});
}

void Pass::settle_host() {
  const double wait = issue_end - issued_compute, total = compute();
  if (wait <= 1e-15 || total <= 0) return;
  for (Segment& g : segments) g.compute += wait * g.compute / total;
  host_wait += wait;
  issued_compute += wait;  // the waits are now the GPU's own time
}

void Pass::append(const Pass& other) {
  for (const Segment& g : other.segments) {
    if (g.overlapped) {
      segments.push_back(g);
      continue;
    }
    add_compute(g.compute);
    add_comm(g.comm, g.kind);
  }
  background += other.background;
  compose_issue(*this, other.kernels, other.host_issue, other.issued_compute, other.issue_end);
  host_wait += other.host_wait;
}

double interleaved_span(const Pass& a, const Pass& b, const std::array<bool, kCommKinds>& network) {
  // In-order compute and communication streams; segment i of a pass waits for segment i−1's
  // communication. Both streams take segments by (position, pass), which can never deadlock.
  std::array<const Pass*, 2> passes{&a, &b};
  std::array<double, 2> ready{0, 0};  // when each pass's next segment may start
  double compute_free = 0, comm_free = 0;
  std::size_t n = std::max(a.segments.size(), b.segments.size());
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t p = 0; p < 2; ++p) {
      if (i >= passes[p]->segments.size()) continue;
      const Segment& g = passes[p]->segments[i];
      double start = std::max(ready[p], compute_free);
      double compute_end = start + g.compute;
      compute_free = compute_end;
      if (g.comm > 0) {
        double comm_start = std::max(g.overlapped ? start : compute_end, comm_free);
        comm_free = comm_start + g.comm;
        ready[p] = std::max(compute_end, comm_free);
      } else {
        ready[p] = compute_end;
      }
    }
  return std::max({ready[0], ready[1], a.background, b.background, a.port_load(network) + b.port_load(network)});
}

}  // namespace plumb
