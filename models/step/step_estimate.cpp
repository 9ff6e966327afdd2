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

// What every family's closed form reads: the layout, the micro-batches, each rank's chunk costs, the
// step's costs, and the hand-offs the fill and drain pay.
struct EstimateInputs {
  const ParallelLayout& p;
  const StepCosts& c;
  double m = 0, pp = 0;
  std::vector<Chunk> ranks;
  double p2p = 0;
  double hops = 0;  // overlapped sends add a hop per stage boundary to the fill and drain; blocking ones are inside the spans

  template <class F>
  double total(F field) const {
    double s = 0;
    for (const Chunk& k : ranks) s += field(k);
    return s;
  }
  template <class F>
  double worst(F field) const {
    double s = 0;
    for (const Chunk& k : ranks) s = std::max(s, field(k));
    return s;
  }
};

// GPipe and 1F1B: the first micro-batch's forward through every stage, the slowest stage's m − 1
// further F+B, the last backward back through every stage (Narayanan et al. §2.2 for equal stages).
double flush_pipeline(const EstimateInputs& in) {
  return in.total([](const Chunk& k) { return k.f + k.b; }) + (in.m - 1) * in.worst([](const Chunk& k) { return k.f + k.b; }) +
         in.hops;
}

// Interleaved: v chunks per rank; the fill and drain shrink to (p − 1) chunk times (Narayanan et al. §2.2.2).
double interleaved_pipeline(const EstimateInputs& in) {
  const double v = static_cast<double>(in.p.vp);
  double t = in.worst([](const Chunk& k) { return k.f + k.b; });
  return in.m * v * t + (in.pp - 1) * t + in.hops * v;
}

// ZB-H1, ZB-H2, ZB-V: Qi et al. Table 2 bubbles over the slowest rank's busy time; ZB-V runs 2p half chunks.
double zero_bubble_pipeline(const EstimateInputs& in) {
  const double m = in.m, pp = in.pp;
  const bool v_shape = schedule_family(in.p.schedule).layout == StageLayout::v_shape;
  const double chunks = v_shape ? 2.0 : 1.0;
  double busy = in.worst([&](const Chunk& k) { return chunks * m * (k.f + k.bi + k.w); });
  // The bubble is set by the slowest rank's F + B − W (−2W where H2 and V fill it twice over).
  const double fill = in.p.schedule == ScheduleKind::zb_h1 ? 1.0 : 2.0;
  double gap = in.worst([&](const Chunk& k) { return std::max(0.0, k.f + k.bi - fill * k.w); });
  double bubble = (pp - 1) * gap;
  double pipeline = busy + bubble;
  if (v_shape) {
    // With few micro-batches rank 0 runs out of forwards before the first one has gone down and
    // up the V (2p chunk forwards) and waits: its first backward, then all its backward work and
    // the rest of its up-going forwards, bound the step from below.
    double round_trip = in.worst([&](const Chunk& k) { return (2 * pp + m - 1) * k.f + 2 * m * (k.bi + k.w); });
    pipeline = std::max(pipeline, round_trip);
  }
  return pipeline + in.hops;
}

// One DualPipe(V) rank's overlapped F&B pair: one direction's forward beside the other's backward, so over
// the steady phase a rank pairs each of its stages' forwards with the other's backwards: the mean of its
// stages. The pair ends when its longer stream does: communication, or compute slowed by the SMs the
// communication holds while they overlap.
double overlapped_pair(const EstimateInputs& in, std::int64_t r) {
  const StepCosts& c = in.c;
  std::vector<std::int64_t> st = stages_of_rank(in.p.schedule, r, in.p.pp, in.p.vp);
  double fb = 0;
  for (std::size_t i = 0; i < st.size(); ++i) {
    const StageCost& a = c.stages[static_cast<std::size_t>(st[i])];
    const StageCost& other = c.stages[static_cast<std::size_t>(st[st.size() - 1 - i])];
    double compute = a.forward.compute() + other.backward.compute();
    double comm = a.forward.span(c.network) + other.backward.span(c.network) - compute;
    fb += std::max(a.fb_overlap, compute + sm_penalty(std::min(comm, compute), c)) / static_cast<double>(st.size());
  }
  return fb;
}

// DualPipe and DualPipeV. Per rank: m forward and m backward chunks (DualPipe: m/2 on each of its two
// stages), of which m − 3p/2 + 1 + r run as overlapped F&B pairs (counted from the reference
// implementation's phases); the bubble is the DualPipe table's (p/2 − 1)(F&B + B − 3W). DualPipeV has p
// ranks holding 2p stages, the same counts with p ranks standing for DualPipe's 2p.
double dualpipe_pipeline(const EstimateInputs& in) {
  const ParallelLayout& p = in.p;
  const StepCosts& c = in.c;
  const bool mirrored = schedule_family(p.schedule).layout == StageLayout::mirrored;
  const double n = mirrored ? in.pp : 2 * in.pp;
  const double chunks = mirrored ? in.m : 2 * in.m;
  double busiest = 0, busy0 = 0;
  double fb_worst = 0;
  for (std::int64_t r = 0; r < p.pp; ++r) {
    const double fb = overlapped_pair(in, r);
    fb_worst = std::max(fb_worst, fb);
    double pairs = std::clamp(chunks - 3 * n / 2 + 1 + static_cast<double>(std::min<std::int64_t>(r, p.pp - 1 - r)), 0.0, chunks);
    const Chunk& k = in.ranks[static_cast<std::size_t>(r)];
    busiest = std::max(busiest, pairs * fb + (chunks - pairs) * (k.f + k.b));
    if (r == 0) busy0 = pairs * fb + (chunks - pairs) * (k.f + k.b);
  }
  const Chunk& k = in.ranks.front();
  double pipeline = busiest + (n / 2 - 1) * std::max(0.0, fb_worst + k.b - 3 * k.w) + in.hops;
  // Rank 0 holds the last stage (DualPipe: of the second direction; DualPipeV: the top of the V).
  // After its n − 2 warm-up forwards it waits for the first micro-batch that ends there to come
  // through stages 0 … n − 2; then it works without a break, and its last backward goes back
  // through stages n − 2 … 1 (and, in the V, on to stage 0 on rank 0 again).
  const std::size_t last = c.stages.size() - 1;
  double down = 0, up = 0;
  for (std::size_t s = 0; s < last; ++s) down += c.stages[s].forward.span(c.network) + (c.stages[s].p2p_in_passes ? 0 : in.p2p);
  for (std::size_t s = mirrored ? 1 : 0; s < last; ++s)
    up += c.stages[s].input_grad.span(c.network) + (c.stages[s].p2p_in_passes ? 0 : in.p2p);
  const double warm = (n - 2) * c.stages.front().forward.span(c.network);
  return std::max(pipeline, std::max(down, warm) + (busy0 - warm) + up);
}

// First forward to last backward, by the closed form of the schedule's family.
double pipeline_time(const EstimateInputs& in) {
  const ScheduleFamily& family = schedule_family(in.p.schedule);
  if (family.overlaps_pairs) return dualpipe_pipeline(in);
  if (family.splits_backward) return zero_bubble_pipeline(in);
  if (family.interleaves) return interleaved_pipeline(in);
  return flush_pipeline(in);
}

}  // namespace

StepEstimate estimate_step(const ParallelLayout& p, std::int64_t microbatches, const StepCosts& c) {
  EstimateInputs in{p, c, static_cast<double>(microbatches), static_cast<double>(p.pp), {}, 0, 0};
  const std::vector<Chunk> times = stage_times(c);
  for (std::int64_t r = 0; r < p.pp; ++r) in.ranks.push_back(chunk_of(times, stages_of_rank(p.schedule, r, p.pp, p.vp)));
  in.p2p = c.stages.front().p2p;
  in.hops = c.stages.front().p2p_in_passes ? 0.0 : 2 * (in.pp - 1) * in.p2p;
  StepEstimate e;
  e.pipeline = pipeline_time(in);
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
