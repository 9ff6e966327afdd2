#include "models/step/step_estimate.hpp"

#include <algorithm>
#include <numeric>

namespace plumb {
namespace {

// Costs of one pipeline rank's chunk (the stages it holds, per micro-batch).
struct Chunk {
  double f = 0, b = 0, bi = 0, w = 0, fb = 0;
};

// The SMs a communication kernel takes slow the compute beside it (proportional rate): compute that
// runs `overlapped` seconds beside communication takes overlapped × comm_sms / (sms − comm_sms) more.
double sm_penalty(double overlapped, const StepCosts& c) {
  return overlapped * static_cast<double>(c.comm_sms) / static_cast<double>(c.sms - c.comm_sms);
}

// A pass as the step runs it: its span on the network port, its compute slowed while its background
// traffic (ZeRO's gathers and scatters) holds SMs beside it. The background runs from the pass's
// start, so it overlaps the compute in the share compute takes of the pass.
double pass_time(const Pass& p, const StepCosts& c) {
  double segments = 0, compute = 0;
  for (const Segment& g : p.segments) {
    segments += g.span();
    compute += g.compute;
  }
  const double overlap = segments > 0 ? std::min(p.background, segments) * compute / segments : 0.0;
  return std::max({segments + sm_penalty(overlap, c), p.background, p.port_load(c.network)});
}

// Each stage's pass times, computed once: f, b, bi, w.
std::vector<Chunk> stage_times(const StepCosts& c) {
  std::vector<Chunk> out;
  out.reserve(c.stages.size());
  for (const StageCost& sc : c.stages)
    out.push_back({pass_time(sc.forward, c), pass_time(sc.backward, c), pass_time(sc.input_grad, c), pass_time(sc.weight_grad, c)});
  return out;
}

Chunk chunk_of(const std::vector<Chunk>& times, const std::vector<std::int64_t>& stages) {
  Chunk k;
  for (std::int64_t s : stages) {
    const Chunk& t = times[static_cast<std::size_t>(s)];
    k.f += t.f;
    k.b += t.b;
    k.bi += t.bi;
    k.w += t.w;
  }
  double n = static_cast<double>(stages.size());
  k.f /= n, k.b /= n, k.bi /= n, k.w /= n;
  return k;
}

}  // namespace

StepEstimate estimate_step(const Job& job, const StepCosts& c) {
  const ParallelLayout& p = job.layout;
  const auto m = static_cast<double>(job.microbatches());
  const auto pp = static_cast<double>(p.pp);
  std::vector<Chunk> ranks;
  const std::vector<Chunk> times = stage_times(c);
  for (std::int64_t r = 0; r < p.pp; ++r) ranks.push_back(chunk_of(times, stages_of_rank(p.schedule, r, p.pp, p.vp)));
  auto total = [&](auto field) {
    double s = 0;
    for (const Chunk& k : ranks) s += field(k);
    return s;
  };
  auto worst = [&](auto field) {
    double s = 0;
    for (const Chunk& k : ranks) s = std::max(s, field(k));
    return s;
  };
  const double p2p = c.stages.front().p2p;
  // Overlapped sends add a hop per stage boundary to the fill and drain; blocking ones are inside the spans.
  const double hops = c.stages.front().p2p_in_passes ? 0.0 : 2 * (pp - 1) * p2p;
  StepEstimate e;
  switch (p.schedule) {
    case ScheduleKind::gpipe:
    case ScheduleKind::one_f_one_b:
      // The first micro-batch's forward through every stage, the slowest stage's m − 1 further
      // F+B, the last backward back through every stage (Narayanan et al. §2.2 for equal stages).
      e.pipeline = total([](const Chunk& k) { return k.f + k.b; }) + (m - 1) * worst([](const Chunk& k) { return k.f + k.b; }) + hops;
      break;
    case ScheduleKind::interleaved: {
      // v chunks per rank: the fill and drain shrink to (p − 1) chunk times (Narayanan et al. §2.2.2).
      const double v = static_cast<double>(p.vp);
      double t = worst([](const Chunk& k) { return k.f + k.b; });
      e.pipeline = m * v * t + (pp - 1) * t + hops * v;
      break;
    }
    case ScheduleKind::zb_h1:
    case ScheduleKind::zb_h2:
    case ScheduleKind::zb_v: {
      // Qi et al. Table 2 bubbles over the slowest rank's busy time; ZB-V runs 2p half chunks.
      const double chunks = p.schedule == ScheduleKind::zb_v ? 2.0 : 1.0;
      double busy = worst([&](const Chunk& k) { return chunks * m * (k.f + k.bi + k.w); });
      // The bubble is set by the slowest rank's F + B − W (−2W where H2 and V fill it twice over).
      const double fill = p.schedule == ScheduleKind::zb_h1 ? 1.0 : 2.0;
      double gap = worst([&](const Chunk& k) { return std::max(0.0, k.f + k.bi - fill * k.w); });
      double bubble = (pp - 1) * gap;
      e.pipeline = busy + bubble;
      if (p.schedule == ScheduleKind::zb_v) {
        // With few micro-batches rank 0 runs out of forwards before the first one has gone down and
        // up the V (2p chunk forwards) and waits: its first backward, then all its backward work and
        // the rest of its up-going forwards, bound the step from below.
        double round_trip = worst([&](const Chunk& k) { return (2 * pp + m - 1) * k.f + 2 * m * (k.bi + k.w); });
        e.pipeline = std::max(e.pipeline, round_trip);
      }
      e.pipeline += hops;
      break;
    }
    case ScheduleKind::dualpipe:
    case ScheduleKind::dualpipe_v: {
      // Per rank: m forward and m backward chunks (DualPipe: m/2 on each of its two stages), of which
      // m − 3p/2 + 1 + r run as overlapped F&B pairs (counted from the reference implementation's
      // phases); the bubble is the DualPipe table's (p/2 − 1)(F&B + B − 3W). DualPipeV has p ranks
      // holding 2p stages, the same counts with p ranks standing for DualPipe's 2p.
      const double n = p.schedule == ScheduleKind::dualpipe ? pp : 2 * pp;
      const double chunks = p.schedule == ScheduleKind::dualpipe ? m : 2 * m;
      double busiest = 0, busy0 = 0;
      double fb_worst = 0;
      for (std::int64_t r = 0; r < p.pp; ++r) {
        // A pair is one direction's forward beside the other's backward, so over the steady phase a
        // rank pairs each of its stages' forwards with the other's backwards: the mean of its stages.
        // The pair ends when its longer stream does: communication, or compute slowed by the SMs the
        // communication holds while they overlap.
        std::vector<std::int64_t> st = stages_of_rank(p.schedule, r, p.pp, p.vp);
        double fb = 0;
        for (std::size_t i = 0; i < st.size(); ++i) {
          const StageCost& a = c.stages[static_cast<std::size_t>(st[i])];
          const StageCost& other = c.stages[static_cast<std::size_t>(st[st.size() - 1 - i])];
          double compute = a.forward.compute() + other.backward.compute();
          double comm = a.forward.span(c.network) + other.backward.span(c.network) - compute;
          fb += std::max(a.fb_overlap, compute + sm_penalty(std::min(comm, compute), c)) / static_cast<double>(st.size());
        }
        fb_worst = std::max(fb_worst, fb);
        double pairs = std::clamp(chunks - 3 * n / 2 + 1 + static_cast<double>(std::min<std::int64_t>(r, p.pp - 1 - r)), 0.0, chunks);
        const Chunk& k = ranks[static_cast<std::size_t>(r)];
        busiest = std::max(busiest, pairs * fb + (chunks - pairs) * (k.f + k.b));
        if (r == 0) busy0 = pairs * fb + (chunks - pairs) * (k.f + k.b);
      }
      const Chunk& k = ranks.front();
      e.pipeline = busiest + (n / 2 - 1) * std::max(0.0, fb_worst + k.b - 3 * k.w) + hops;
      // Rank 0 holds the last stage (DualPipe: of the second direction; DualPipeV: the top of the V).
      // After its n − 2 warm-up forwards it waits for the first micro-batch that ends there to come
      // through stages 0 … n − 2; then it works without a break, and its last backward goes back
      // through stages n − 2 … 1 (and, in the V, on to stage 0 on rank 0 again).
      const std::size_t last = c.stages.size() - 1;
      double down = 0, up = 0;
      for (std::size_t s = 0; s < last; ++s) down += c.stages[s].forward.span(c.network) + (c.stages[s].p2p_in_passes ? 0 : p2p);
      for (std::size_t s = p.schedule == ScheduleKind::dualpipe ? 1 : 0; s < last; ++s)
        up += c.stages[s].input_grad.span(c.network) + (c.stages[s].p2p_in_passes ? 0 : p2p);
      const double warm = (n - 2) * c.stages.front().forward.span(c.network);
      e.pipeline = std::max(e.pipeline, std::max(down, warm) + (busy0 - warm) + up);
      break;
    }
  }
  // Head: a stage's first forward waits for its first parameter bucket (ZeRO-1/2).
  const StageCost& first = c.stages.front();
  e.head = first.param_gather / static_cast<double>(std::max<std::int64_t>(1, p.stage_layers.front()));
  // Tail: rank 0 finishes last; its last stage's gradient reduction is exposed (all of them when
  // reductions wait for the whole backward), then the optimizer.
  std::vector<std::int64_t> held = stages_of_rank(p.schedule, 0, p.pp, p.vp);
  double optimizer = 0, sync = 0;
  for (std::int64_t s : held) {
    optimizer += c.stages[static_cast<std::size_t>(s)].optimizer;
    const double g = c.stages[static_cast<std::size_t>(s)].grad_sync;
    sync = p.overlap_grad_reduce ? std::max(sync, g) : sync + g;
  }
  e.tail = sync + optimizer;
  e.step_time = e.head + e.pipeline + e.tail;
  return e;
}

}  // namespace plumb
