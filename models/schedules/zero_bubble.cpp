#include "models/schedules/zero_bubble.hpp"

#include <cmath>
#include <deque>
#include <fmt/format.h>
#include <limits>
#include <optional>
#include <queue>

#include "models/schedules/generators.hpp"
#include "models/schedules/held_bytes.hpp"
#include "models/schedules/registry.hpp"
#include "models/schedules/zero_bubble_search.hpp"
#include "models/schedules/zero_bubble_v.hpp"

namespace plumb {
namespace {

constexpr double kNotYet = std::numeric_limits<double>::infinity();

class Greedy {
 public:
  Greedy(PipelineSchedule& s, const ZeroBubbleSettings& z) : s_(s), z_(z) {
    const std::size_t cells = static_cast<std::size_t>(s.microbatches * s.stages);
    f_done_.assign(cells, kNotYet);
    b_done_.assign(cells, kNotYet);
    for (std::int64_t r = 0; r < s.ranks; ++r) {
      Rank rank;
      rank.stages = stages_of_rank(s.layout, r, s.ranks, s.vp);
      rank.next_f.assign(rank.stages.size(), 0);
      rank.next_b.assign(rank.stages.size(), 0);
      ranks_.push_back(std::move(rank));
    }
  }

  void run() {
    for (std::int64_t r = 0; r < s_.ranks; ++r) wake_.push({0.0, r});
    while (!wake_.empty()) {
      auto [t, r] = wake_.top();
      wake_.pop();
      Rank& rank = ranks_[static_cast<std::size_t>(r)];
      if (rank.free_at > t || rank.finished(s_.microbatches)) continue;
      decide(r, t);
    }
    for (const Rank& rank : ranks_)
      if (!rank.finished(s_.microbatches))
        throw ScheduleError(fmt::format("the automatic zero-bubble scheduler stalled with the memory limits given"));
  }

 private:
  struct Rank {
    std::vector<std::int64_t> stages;
    std::vector<std::int64_t> next_f, next_b;  // next micro-batch per held stage
    std::deque<StageWork> deferred_w;
    std::int64_t alive = 0;  // activation sets held
    std::int64_t alive_first = 0;  // of them, the first held stage's (ZB-V: the down-going chunk)
    double free_at = 0;
    bool finished(std::int64_t m) const {
      for (std::size_t i = 0; i < stages.size(); ++i)
        if (next_f[i] < m || next_b[i] < m) return false;
      return deferred_w.empty();
    }
  };

  std::size_t cell(std::int64_t mb, std::int64_t stage) const { return static_cast<std::size_t>(mb * s_.stages + stage); }
  double arrival(double done, std::int64_t from_rank, std::int64_t to_rank) const {
    return done + (from_rank == to_rank ? 0.0 : z_.times.comm);
  }
  // When the input of F(mb, stage) / B(mb, stage) is on this rank (kNotYet if not known yet).
  double f_ready(std::int64_t mb, std::int64_t stage) const {
    if (stage == 0) return 0.0;
    return arrival(f_done_[cell(mb, stage - 1)], s_.rank_of(stage_work(mb, stage - 1)),
                   s_.rank_of(stage_work(mb, stage)));
  }
  double b_ready(std::int64_t mb, std::int64_t stage) const {
    double own = f_done_[cell(mb, stage)];
    if (stage + 1 == s_.stages) return own;
    double grad = arrival(b_done_[cell(mb, stage + 1)], s_.rank_of(stage_work(mb, stage + 1)),
                          s_.rank_of(stage_work(mb, stage)));
    return std::max(own, grad);
  }

  void decide(std::int64_t r, double t) {
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    auto& ops = s_.ops[static_cast<std::size_t>(r)];
    const std::int64_t m = s_.microbatches;
    std::int64_t limit = z_.memory_limit.empty() ? std::numeric_limits<std::int64_t>::max()
                                                 : z_.memory_limit[static_cast<std::size_t>(r)];
    // Later stages first: they are nearer the end of the micro-batch's journey.
    auto pick = [&](bool backward) -> int {
      int best = -1;
      for (std::size_t i = 0; i < rank.stages.size(); ++i) {
        std::int64_t mb = backward ? rank.next_b[i] : rank.next_f[i];
        if (mb >= m) continue;
        double ready = backward ? b_ready(mb, rank.stages[i]) : f_ready(mb, rank.stages[i]);
        if (ready > t) continue;
        if (best < 0 || rank.stages[i] > rank.stages[static_cast<std::size_t>(best)]) best = static_cast<int>(i);
      }
      return best;
    };
    int i = pick(true);
    if (i >= 0) {
      std::int64_t mb = rank.next_b[static_cast<std::size_t>(i)]++, stage = rank.stages[static_cast<std::size_t>(i)];
      ops.push_back(PipeOp{OpKind::backward_input, stage_work(mb, stage), {}, 0});
      rank.deferred_w.push_back(stage_work(mb, stage));
      --rank.alive;
      if (i == 0) --rank.alive_first;
      finish(r, t + z_.times.input_grad, &b_done_[cell(mb, stage)], stage > 0 ? s_.rank_of(stage_work(mb, stage - 1)) : -1);
      return;
    }
    // ZB-V keeps room for the up-going chunk: its warm-up runs at most 2p − 1 − r down-going forwards
    // (Qi et al. §6), so that a rank never fills its memory with chunks whose backward needs the
    // other chunk's forward to run first.
    auto forward_allowed = [&](int which) {
      if (which != 0 || s_.layout != StageLayout::v_shape) return true;
      return rank.alive_first < 2 * s_.ranks - 1 - r;
    };
    // Room for one more activation set, the deferred W's stashes counted at their share of a set.
    const bool room = static_cast<double>(rank.alive + 1) + z_.times.stash * static_cast<double>(rank.deferred_w.size()) <=
                      static_cast<double>(limit) + 1e-9;
    if (room && (i = pick(false)) >= 0 && !forward_allowed(i)) {
      // The down-going chunk is at its cap: take the other chunk's forward if it is ready.
      i = -1;
      for (std::size_t k = 1; k < rank.stages.size(); ++k)
        if (rank.next_f[k] < m && f_ready(rank.next_f[k], rank.stages[k]) <= t) i = static_cast<int>(k);
    }
    if (room && i >= 0) {
      std::int64_t mb = rank.next_f[static_cast<std::size_t>(i)]++, stage = rank.stages[static_cast<std::size_t>(i)];
      ops.push_back(PipeOp{OpKind::forward, stage_work(mb, stage), {}, 0});
      ++rank.alive;
      if (i == 0) ++rank.alive_first;
      std::int64_t consumer = stage + 1 < s_.stages ? s_.rank_of(stage_work(mb, stage + 1)) : r;
      finish(r, t + z_.times.forward, &f_done_[cell(mb, stage)], consumer);
      return;
    }
    if (!rank.deferred_w.empty()) {
      StageWork w = rank.deferred_w.front();
      rank.deferred_w.pop_front();
      ops.push_back(PipeOp{OpKind::weight, w, {}, 0});
      finish(r, t + z_.times.weight_grad, nullptr, -1);
    }
    // Otherwise idle: a producer's completion wakes this rank.
  }

  void finish(std::int64_t r, double end, double* done, std::int64_t consumer) {
    if (done) *done = end;
    ranks_[static_cast<std::size_t>(r)].free_at = end;
    wake_.push({end, r});
    if (consumer >= 0 && consumer != r) wake_.push({end + z_.times.comm, consumer});
  }

  using Wake = std::pair<double, std::int64_t>;  // (time, rank): earliest first, then lowest rank
  PipelineSchedule& s_;
  const ZeroBubbleSettings& z_;
  std::vector<Rank> ranks_;
  std::vector<double> f_done_, b_done_;
  std::priority_queue<Wake, std::vector<Wake>, std::greater<>> wake_;
};

}  // namespace

PipelineSchedule automatic_zero_bubble(ScheduleKind kind, std::int64_t ranks, std::int64_t microbatches,
                                       const ZeroBubbleSettings& settings) {
  const ScheduleFamily& family = schedule_family(kind);
  if (!family.orders_by_op_times)
    throw ScheduleError("the automatic zero-bubble scheduler makes zb-h1, zb-h2, zb-1p, zb-2p or zb-v shaped schedules");
  if (!settings.memory_limit.empty() && static_cast<std::int64_t>(settings.memory_limit.size()) != ranks)
    throw ScheduleError(fmt::format("{} memory limits given for {} ranks", settings.memory_limit.size(), ranks));
  PipelineSchedule s;
  s.kind = kind;
  s.layout = family.layout;
  s.ranks = ranks;
  s.microbatches = microbatches;
  s.stages = stage_count(family.layout, ranks, 1);
  s.ops.resize(static_cast<std::size_t>(ranks));
  Greedy(s, settings).run();
  return s;
}

namespace {

// The heuristic at `times` under the family's own memory limits (its peak in-flight activations).
PipelineSchedule zero_bubble_at(const PipelineSchedule& shape, const OpTimes& times) {
  ZeroBubbleSettings z{times, {}};
  const ScheduleFamily& family = schedule_family(shape.kind);
  const ScheduleShape at{.ranks = shape.ranks, .microbatches = shape.microbatches, .vp = shape.vp};
  for (std::int64_t r = 0; r < shape.ranks; ++r)
    z.memory_limit.push_back(family.heuristic_limit ? family.heuristic_limit(r, at)
                                                    : static_cast<std::int64_t>(peak_inflight_stage_microbatches(shape.kind, r, at)));
  return automatic_zero_bubble(shape.kind, shape.ranks, shape.microbatches, z);
}

// A placement's order, or the greedy heuristic's where the placement found none within the limit.
void order_or_heuristic(PipelineSchedule& s, const OpTimes& times, std::optional<std::vector<std::vector<PipeOp>>> order) {
  if (order) s.ops = std::move(*order);
  else generate_zero_bubble(s, times);
}

// ZB-H1 and ZB-H2 as the paper draws them (Qi et al. §3.1, Figure 3; the order its bubble tables are
// computed with, sail-sg/zero-bubble-pipeline-parallelism f68d3879 efficiency.py get_hand_schedule): rank
// r runs (p − 1 − r)·w forwards, then forward, input-gradient backward and, once r·w of them wait, the
// oldest W in turn, the rest of the W's at the end — w = 1 (ZB-H1: 1F1B's warm-up, each W put off r
// rounds) or 2 (ZB-H2: a warm-up as long again). It needs m ≥ (p − 1)·w; none where it is not.
std::optional<std::vector<std::vector<PipeOp>>> hand_zero_bubble(std::int64_t p, std::int64_t m, std::int64_t warmup_per_hop) {
  const std::int64_t deferred_most = (p - 1) * warmup_per_hop;
  if (m < deferred_most) return std::nullopt;
  std::vector<std::vector<PipeOp>> order(static_cast<std::size_t>(p));
  for (std::int64_t r = 0; r < p; ++r) {
    auto& ops = order[static_cast<std::size_t>(r)];
    const std::int64_t warmup = (p - 1 - r) * warmup_per_hop;
    std::int64_t f = 0, b = 0, w = 0;
    for (; f < warmup; ++f) ops.push_back(stage_op(OpKind::forward, f, r));
    for (std::int64_t i = 0; i < m; ++i) {
      if (f < m) ops.push_back(stage_op(OpKind::forward, f++, r));
      ops.push_back(stage_op(OpKind::backward_input, b++, r));
      if (warmup + i >= deferred_most) ops.push_back(stage_op(OpKind::weight, w++, r));
    }
    while (w < m) ops.push_back(stage_op(OpKind::weight, w++, r));
  }
  return order;
}

}  // namespace

void generate_zero_bubble_search(PipelineSchedule& s, const OpTimes& times) {
  const ScheduleFamily& family = schedule_family(s.kind);
  const ScheduleShape at{.ranks = s.ranks, .microbatches = s.microbatches, .vp = s.vp};
  const double limit = static_cast<double>(family.heuristic_limit(0, at));  // the same on every rank
  order_or_heuristic(s, times, zero_bubble_search(s.stages, s.microbatches, times, limit));
}

void generate_zero_bubble_hand(PipelineSchedule& s, const OpTimes& times) {
  order_or_heuristic(s, times, hand_zero_bubble(s.ranks, s.microbatches, s.kind == ScheduleKind::zb_h2 ? 2 : 1));
}

void generate_zero_bubble_v(PipelineSchedule& s, const OpTimes& times) {
  const ScheduleShape at{.ranks = s.ranks, .microbatches = s.microbatches, .vp = s.vp};
  const double limit = static_cast<double>(schedule_family(s.kind).peak_inflight(0, at));  // 2p chunk sets
  order_or_heuristic(s, times, zero_bubble_v_placement(s.ranks, s.microbatches, times, limit));
}

void generate_zero_bubble(PipelineSchedule& s, const OpTimes& times) {
  try {
    s = zero_bubble_at(s, times);
  } catch (const ScheduleError&) {
    // The greedy heuristic can stall under the memory limits with very unequal times (ZB-V); the
    // equal-time order then stands (and its own failure is the schedule's).
    s = zero_bubble_at(s, OpTimes{});
  }
}

std::int64_t equal_time_peak_inflight(ScheduleKind kind, std::int64_t r, const ScheduleShape& shape) {
  const auto s = equal_time_schedule(kind, shape, 0.0);
  const std::vector<double> one(static_cast<std::size_t>(s->stages), 1.0), none(static_cast<std::size_t>(s->stages), 0.0);
  return static_cast<std::int64_t>(std::lround(peak_held_bytes(*s, r, one, none)));
}

}  // namespace plumb
