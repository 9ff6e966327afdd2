#include "models/schedules/registry.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "models/schedules/generators.hpp"

namespace plumb {
namespace {

using Violations = std::vector<ScheduleViolation>;

void no_constraints(const ScheduleShape&, Violations&) {}

void interleaved_constraints(const ScheduleShape& s, Violations& v) {
  if (s.vp < 2) v.push_back({"vp", fmt::format("the interleaved schedule needs vp ≥ 2 virtual stages per rank, got vp {}", s.vp)});
  if (s.ranks < 2) v.push_back({"pp", "the interleaved schedule needs a pipeline (pp ≥ 2) to interleave"});
  if (s.microbatches % s.ranks != 0)
    v.push_back({"micro_batch", fmt::format("the interleaved schedule needs the {} micro-batches to be a multiple of "
                                            "pp {} (Megatron's micro-batch group rule)", s.microbatches, s.ranks)});
}

void zb_v_constraints(const ScheduleShape& s, Violations& v) {
  if (s.microbatches < s.ranks)
    v.push_back({"micro_batch", fmt::format("zb-v needs at least pp = {} micro-batches, got {}", s.ranks, s.microbatches)});
}

void dualpipe_constraints(const ScheduleShape& s, Violations& v) {
  if (s.ranks % 2 != 0) v.push_back({"pp", fmt::format("dualpipe needs an even number of pipeline ranks, got pp {}", s.ranks)});
  if (s.microbatches % 2 != 0 || s.microbatches < 2 * s.ranks)
    v.push_back({"micro_batch", fmt::format("dualpipe needs an even number of micro-batches ≥ 2·pp = {}, got {}",
                                            2 * s.ranks, s.microbatches)});
}

void dualpipe_v_constraints(const ScheduleShape& s, Violations& v) {
  if (s.microbatches < 2 * s.ranks)
    v.push_back({"micro_batch", fmt::format("dualpipev needs micro-batches ≥ 2·pp = {}, got {}", 2 * s.ranks, s.microbatches)});
}

double hops(const ScheduleShape& s) { return static_cast<double>(s.ranks - 1); }

// (p−1)(F+B): GPipe and 1F1B (DualPipe README table; Narayanan et al. SC'21 (p−1)/m of the ideal time).
// Interleaved: (1/v)(p−1)(F+B) with F, B a whole rank's layers, i.e. (p−1) of one virtual stage's F+B.
std::optional<double> one_f_one_b_bubble(const ScheduleShape& s, const OpTimes& t) {
  return hops(s) * (t.forward + t.backward());
}
// ZB-H1: (p−1)(T_F+T_B−T_W) with T_B the input gradient (Qi et al. Table; DualPipe's (PP−1)(F+B−2W)).
std::optional<double> zb_h1_bubble(const ScheduleShape& s, const OpTimes& t) {
  return hops(s) * (t.forward + t.input_grad - t.weight_grad);
}
// ZB-H2: (p−1)(T_F+T_B−2T_W), none when negative (Qi et al. Table).
std::optional<double> zb_h2_bubble(const ScheduleShape& s, const OpTimes& t) {
  return std::max(0.0, hops(s) * (t.forward + t.input_grad - 2 * t.weight_grad));
}
// ZB-V: 0 when T_F = T_B = T_W (Qi et al.); no closed form otherwise.
std::optional<double> zb_v_bubble(const ScheduleShape&, const OpTimes& t) {
  if (t.forward == t.input_grad && t.input_grad == t.weight_grad) return 0.0;
  return std::nullopt;
}
// ZB-1p and ZB-2p: the heuristic's bubble at the times given; no closed form (Qi et al. Table 5 computes it
// from profiled times: ZB-1p's equals ZB-H1's on every setup there, ZB-2p's is near zero).
std::optional<double> no_closed_bubble(const ScheduleShape&, const OpTimes&) { return std::nullopt; }
// DualPipe and DualPipeV: (PP/2−1)(F&B+B−3W) with PP the pipeline's stages (DualPipe README table); exact
// when the input gradient costs as much as the forward, a bound otherwise.
std::optional<double> dualpipe_bubble(const ScheduleShape& s, const OpTimes& t) {
  return (static_cast<double>(s.ranks) / 2 - 1) * (t.overlapped_pair() + t.backward() - 3 * t.weight_grad);
}
std::optional<double> dualpipe_v_bubble(const ScheduleShape& s, const OpTimes& t) {
  return hops(s) * (t.overlapped_pair() + t.backward() - 3 * t.weight_grad);
}

// In-flight activation sets per stage a rank holds, at its peak.
std::int64_t capped(std::int64_t n, const ScheduleShape& s) { return std::clamp<std::int64_t>(n, 0, s.microbatches); }
std::vector<double> as_doubles(std::initializer_list<std::int64_t> counts) {
  std::vector<double> out;
  for (std::int64_t c : counts) out.push_back(static_cast<double>(c));
  return out;
}
// Megatron runs warm-up forwards in groups of pp micro-batches per chunk, chunk 0 first.
std::vector<double> interleaved_split(std::int64_t r, const ScheduleShape& s) {
  const auto warm =
      static_cast<std::int64_t>(peak_inflight_stage_microbatches(ScheduleKind::interleaved, r, s));
  std::vector<double> counts(static_cast<std::size_t>(s.vp), 0.0);
  for (std::int64_t g = 0; g * s.ranks < warm; ++g)
    counts[static_cast<std::size_t>(g % s.vp)] += static_cast<double>(std::min(s.ranks, warm - g * s.ranks));
  for (double& c : counts) c = std::min(c, static_cast<double>(s.microbatches));
  return counts;
}

const std::vector<ScheduleFamily> kFamilies{
    {.kind = ScheduleKind::gpipe, .name = "gpipe", .layout = StageLayout::straight, .source = "Huang et al. 2019 (GPipe)",
     .generate = generate_gpipe,
     .peak_inflight = [](std::int64_t, const ScheduleShape& s) { return s.microbatches; },
     .constraints = no_constraints, .bubble = one_f_one_b_bubble},
    {.kind = ScheduleKind::one_f_one_b, .name = "1f1b", .layout = StageLayout::straight,
     .source = "Narayanan et al. 2021 (PipeDream-flush)", .generate = generate_one_f_one_b,
     .peak_inflight = [](std::int64_t r, const ScheduleShape& s) { return s.ranks - r; },
     .constraints = no_constraints, .bubble = one_f_one_b_bubble},
    {.kind = ScheduleKind::interleaved, .name = "interleaved", .layout = StageLayout::round_robin,
     .source = "Narayanan et al. SC'21 §2.2", .interleaves = true, .generate = generate_interleaved,
     .peak_inflight = [](std::int64_t r, const ScheduleShape& s) { return 2 * (s.ranks - r - 1) + (s.vp - 1) * s.ranks + 1; },
     .inflight_split = interleaved_split, .constraints = interleaved_constraints, .bubble = one_f_one_b_bubble},
    {.kind = ScheduleKind::zb_h1, .name = "zb-h1", .layout = StageLayout::straight, .source = "Qi et al. ICLR 2024",
     .splits_backward = true, .orders_by_op_times = true, .generate = generate_zero_bubble_hand,
     .peak_inflight = [](std::int64_t r, const ScheduleShape& s) { return s.ranks - r; },
     .constraints = no_constraints, .bubble = zb_h1_bubble},
    {.kind = ScheduleKind::zb_h2, .name = "zb-h2", .layout = StageLayout::straight, .source = "Qi et al. ICLR 2024",
     .splits_backward = true, .orders_by_op_times = true, .generate = generate_zero_bubble_hand,
     .peak_inflight = [](std::int64_t r, const ScheduleShape& s) { return 2 * (s.ranks - r) - 1; },
     .constraints = no_constraints, .bubble = zb_h2_bubble,
     .convention = BubbleConvention::span},
    {.kind = ScheduleKind::zb_v, .name = "zb-v", .layout = StageLayout::v_shape, .source = "Qi et al. ICLR 2024 §6",
     .splits_backward = true, .orders_by_op_times = true, .generate = generate_zero_bubble_v,
     .peak_inflight = [](std::int64_t, const ScheduleShape& s) { return 2 * s.ranks; },
     // Warm-up of 2p−1−r chunk-1 and r chunk-2 forwards, then one more (Qi et al. §6).
     .inflight_split = [](std::int64_t r, const ScheduleShape& s) { return as_doubles({capped(2 * s.ranks - 1 - r, s), capped(r + 1, s)}); },
     .constraints = zb_v_constraints, .bubble = zb_v_bubble, .convention = BubbleConvention::span},
    {.kind = ScheduleKind::dualpipe, .name = "dualpipe", .layout = StageLayout::mirrored,
     .source = "DeepSeek-V3 report §3.2.1; deepseek-ai/DualPipe", .splits_backward = true, .overlaps_pairs = true,
     .generate = generate_dualpipe,
     .peak_inflight = [](std::int64_t, const ScheduleShape& s) { return s.ranks + 1; },
     // Stage r sees direction 0 like 1F1B rank r; the mirror stage is near its pipeline's end.
     .inflight_split = [](std::int64_t r, const ScheduleShape& s) { return as_doubles({capped(s.ranks - r, s), capped(r + 1, s)}); },
     .constraints = dualpipe_constraints, .bubble = dualpipe_bubble},
    {.kind = ScheduleKind::dualpipe_v, .name = "dualpipev", .layout = StageLayout::v_shape,
     .source = "deepseek-ai/DualPipe (DualPipeV)", .splits_backward = true, .overlaps_pairs = true,
     .generate = generate_dualpipe,
     .peak_inflight = [](std::int64_t, const ScheduleShape& s) { return 2 * s.ranks + 1; },
     // A V of 2pp stages: rank r is position r going down, 2pp−1−r coming back.
     .inflight_split = [](std::int64_t r, const ScheduleShape& s) { return as_doubles({capped(2 * s.ranks - r, s), capped(r + 1, s)}); },
     .constraints = dualpipe_v_constraints, .bubble = dualpipe_v_bubble},
    // The paper's automatic schedules as its runtime makes them: its placement under a memory limit of
    // p (ZB-1p) or 2p (ZB-2p) micro-batches' activations on every rank, deferred W's counted at their
    // share (Qi et al. §3.2, §5.1; sail-sg/zero-bubble-pipeline-parallelism --zero-bubble-max-pending-backward).
    {.kind = ScheduleKind::zb_1p, .name = "zb-1p", .layout = StageLayout::straight, .source = "Qi et al. ICLR 2024 §3.2 (ZB-1p)",
     .splits_backward = true, .orders_by_op_times = true, .generate = generate_zero_bubble_search,
     .peak_inflight = [](std::int64_t r, const ScheduleShape& s) { return equal_time_peak_inflight(ScheduleKind::zb_1p, r, s); },
     .heuristic_limit = [](std::int64_t, const ScheduleShape& s) { return s.ranks; },
     .constraints = no_constraints, .bubble = no_closed_bubble, .convention = BubbleConvention::span},
    {.kind = ScheduleKind::zb_2p, .name = "zb-2p", .layout = StageLayout::straight, .source = "Qi et al. ICLR 2024 §3.2 (ZB-2p)",
     .splits_backward = true, .orders_by_op_times = true, .generate = generate_zero_bubble_search,
     .peak_inflight = [](std::int64_t r, const ScheduleShape& s) { return equal_time_peak_inflight(ScheduleKind::zb_2p, r, s); },
     .heuristic_limit = [](std::int64_t, const ScheduleShape& s) { return 2 * s.ranks; },
     .constraints = no_constraints, .bubble = no_closed_bubble, .convention = BubbleConvention::span},
};


}  // namespace

const std::vector<ScheduleFamily>& schedule_families() { return kFamilies; }

// The table lists the families in ScheduleKind's order, so a kind indexes it (a test holds the order).
const ScheduleFamily& schedule_family(ScheduleKind kind) { return kFamilies.at(static_cast<std::size_t>(kind)); }

std::string_view schedule_name(ScheduleKind s) { return schedule_family(s).name; }

const std::vector<std::pair<std::string, ScheduleKind>>& schedule_names() {
  static const std::vector<std::pair<std::string, ScheduleKind>> names = [] {
    std::vector<std::pair<std::string, ScheduleKind>> out;
    for (const ScheduleFamily& f : kFamilies) out.emplace_back(std::string(f.name), f.kind);
    return out;
  }();
  return names;
}

std::int64_t stage_count(ScheduleKind s, std::int64_t pp, std::int64_t vp) {
  return stage_count(schedule_family(s).layout, pp, vp);
}

std::vector<std::int64_t> stages_of_rank(ScheduleKind s, std::int64_t r, std::int64_t pp, std::int64_t vp) {
  return stages_of_rank(schedule_family(s).layout, r, pp, vp);
}

double peak_inflight_stage_microbatches(ScheduleKind s, std::int64_t r, const ScheduleShape& shape) {
  const ScheduleFamily& f = schedule_family(s);
  const auto held = static_cast<std::int64_t>(stages_of_rank(f.layout, r, shape.ranks, shape.vp).size());
  return static_cast<double>(std::min(f.peak_inflight(r, shape), shape.microbatches * held));
}

std::vector<double> inflight_per_stage(ScheduleKind s, std::int64_t r, const ScheduleShape& shape) {
  const ScheduleFamily& f = schedule_family(s);
  if (f.inflight_split) return f.inflight_split(r, shape);
  return {peak_inflight_stage_microbatches(s, r, shape)};
}

std::vector<ScheduleViolation> schedule_constraint_violations(ScheduleKind s, const ScheduleShape& shape) {
  const ScheduleFamily& f = schedule_family(s);
  std::vector<ScheduleViolation> v;
  // Size first: the ops are counted before any is made, so an absurd shape costs nothing.
  const double ops = schedule_op_estimate(s, shape);
  if (ops > kMaxScheduleOps) {
    v.push_back({"micro_batch", fmt::format("{} stages × {} micro-batches make {:.3g} pipeline ops, more than the {:.0e} plumb "
                                            "simulates in one step (each op costs ~2.6 KB in the step's task graph): "
                                            "fewer micro-batches per step or fewer stages",
                                            stage_count(f.layout, shape.ranks, shape.vp), shape.microbatches, ops, kMaxScheduleOps)});
    return v;
  }
  if (!f.interleaves && shape.vp != 1)
    v.push_back({"vp", fmt::format("vp {} applies only to the interleaved schedule; {} needs vp 1", shape.vp, f.name)});
  f.constraints(shape, v);
  return v;
}

double schedule_op_estimate(ScheduleKind kind, const ScheduleShape& shape) {
  const ScheduleFamily& f = schedule_family(kind);
  // Every (micro-batch, stage) runs a forward and a backward, and a W apart where the family splits them.
  return static_cast<double>(stage_count(f.layout, shape.ranks, shape.vp)) * static_cast<double>(shape.microbatches) *
         (f.splits_backward ? 3.0 : 2.0);
}

PipelineSchedule schedule_for(ScheduleKind kind, const ScheduleShape& shape, const OpTimes& op_times) {
  if (shape.ranks < 1 || shape.microbatches < 1 || shape.vp < 1)
    throw ScheduleError(fmt::format("ranks, micro-batches and vp must be at least 1 (got {}, {}, {})", shape.ranks,
                                    shape.microbatches, shape.vp));
  std::vector<ScheduleViolation> violations = schedule_constraint_violations(kind, shape);
  if (!violations.empty()) throw ScheduleError(violations.front().message);
  const ScheduleFamily& f = schedule_family(kind);
  PipelineSchedule s;
  s.kind = kind;
  s.layout = f.layout;
  s.ranks = shape.ranks;
  s.microbatches = shape.microbatches;
  s.vp = shape.vp;
  s.stages = stage_count(f.layout, shape.ranks, shape.vp);
  s.ops.resize(static_cast<std::size_t>(shape.ranks));
  f.generate(s, op_times);
  return s;
}

}  // namespace plumb
