#include "models/pipeline.hpp"

#include <algorithm>
#include <deque>
#include <fmt/format.h>

#include "models/zero_bubble.hpp"


namespace plumb {

std::string_view op_kind_symbol(OpKind k) {
  switch (k) {
    case OpKind::forward: return "F";
    case OpKind::backward: return "B";
    case OpKind::backward_input: return "b";
    case OpKind::weight: return "W";
    case OpKind::forward_backward: return "FB";
  }
  return "?";
}

std::int64_t PipelineSchedule::rank_of(std::int32_t stage, std::int32_t mb) const {
  switch (kind) {
    case ScheduleKind::interleaved: return stage % ranks;
    case ScheduleKind::zb_v:
    case ScheduleKind::dualpipe_v: return stage < ranks ? stage : 2 * ranks - 1 - stage;
    case ScheduleKind::dualpipe: return direction(stage, mb) == 0 ? stage : ranks - 1 - stage;
    default: return stage;
  }
}

int PipelineSchedule::direction(std::int32_t stage, std::int32_t mb) const {
  switch (kind) {
    case ScheduleKind::dualpipe: return mb < microbatches / 2 ? 0 : 1;
    case ScheduleKind::zb_v:
    case ScheduleKind::dualpipe_v: return stage < ranks ? 0 : 1;
    default: return 0;
  }
}

namespace {

PipeOp op(OpKind kind, std::int64_t mb, std::int64_t stage) {
  return PipeOp{kind, {static_cast<std::int32_t>(mb), static_cast<std::int32_t>(stage)}, {}, 0};
}

void gpipe(PipelineSchedule& s) {
  for (std::int64_t r = 0; r < s.ranks; ++r) {
    for (std::int64_t mb = 0; mb < s.microbatches; ++mb) s.ops[static_cast<std::size_t>(r)].push_back(op(OpKind::forward, mb, r));
    for (std::int64_t mb = 0; mb < s.microbatches; ++mb) s.ops[static_cast<std::size_t>(r)].push_back(op(OpKind::backward, mb, r));
  }
}

// 1F1B (PipeDream-flush; Narayanan et al. 2021): p−r−1 warm-up forwards, then one forward and one
// backward in turn, then the remaining backwards.
void one_f_one_b(PipelineSchedule& s) {
  for (std::int64_t r = 0; r < s.ranks; ++r) {
    auto& ops = s.ops[static_cast<std::size_t>(r)];
    std::int64_t warm = std::min(s.ranks - r - 1, s.microbatches);
    for (std::int64_t mb = 0; mb < warm; ++mb) ops.push_back(op(OpKind::forward, mb, r));
    for (std::int64_t i = 0; i < s.microbatches - warm; ++i) {
      ops.push_back(op(OpKind::forward, warm + i, r));
      ops.push_back(op(OpKind::backward, i, r));
    }
    for (std::int64_t mb = s.microbatches - warm; mb < s.microbatches; ++mb) ops.push_back(op(OpKind::backward, mb, r));
  }
}

// Megatron-LM's interleaved 1F1B: micro-batches go through the rank's v chunks in groups of p;
// warm-up is 2(p−r−1) + (v−1)p forwards (Narayanan et al. 2021 §2.2; Megatron schedules.py).
void interleaved(PipelineSchedule& s) {
  const std::int64_t p = s.ranks, v = s.vp, total = s.microbatches * v;
  auto mb_of = [&](std::int64_t k) { return (k / (p * v)) * p + k % p; };
  for (std::int64_t r = 0; r < p; ++r) {
    auto& ops = s.ops[static_cast<std::size_t>(r)];
    auto forward = [&](std::int64_t k) { ops.push_back(op(OpKind::forward, mb_of(k), ((k / p) % v) * p + r)); };
    auto backward = [&](std::int64_t k) { ops.push_back(op(OpKind::backward, mb_of(k), (v - 1 - (k / p) % v) * p + r)); };
    std::int64_t warm = std::min(2 * (p - r - 1) + (v - 1) * p, total);
    for (std::int64_t k = 0; k < warm; ++k) forward(k);
    for (std::int64_t i = 0; i < total - warm; ++i) {
      forward(warm + i);
      backward(i);
    }
    for (std::int64_t k = total - warm; k < total; ++k) backward(k);
  }
}

// DualPipe and DualPipeV (deepseek-ai/DualPipe): each rank holds two chunks and runs the reference
// implementation's eight steps. In DualPipe a rank in the second half mirrors the first half, so
// its local chunk 0 is the stage its first-half twin calls chunk 1.
class DualPipeRank {
 public:
  DualPipeRank(PipelineSchedule& s, std::int64_t r) : s_(s), r_(r), ops_(s.ops[static_cast<std::size_t>(r)]) {
    const std::int64_t n = s.ranks;
    v_shape_ = s.kind == ScheduleKind::dualpipe_v;
    h_ = v_shape_ ? r : std::min(r, n - 1 - r);
    flip_ = !v_shape_ && r >= n / 2;
  }

  void run() {
    const std::int64_t n = s_.ranks, m = s_.microbatches, h = h_;
    // Step counts: DualPipe with half-rank h of N ranks and M/2 micro-batches per direction;
    // DualPipeV with rank r of N ranks and M micro-batches (its V holds 2N stages).
    const std::int64_t halves = v_shape_ ? n : n / 2;                  // ranks per half pipeline
    const std::int64_t chunks = v_shape_ ? m : m / 2;                  // micro-batches per chunk
    const std::int64_t pipeline = v_shape_ ? 2 * n : n;                // stages one micro-batch crosses
    const bool middle = h == halves - 1;
    std::array<std::int64_t, 8> count{(halves - h - 1) * 2, h + 1, halves - h - 1, chunks - pipeline + h + 1,
                                      halves - h - 1,       h + 1, halves - h - 1, h + 1};
    s_.steps[static_cast<std::size_t>(r_)] = count;
    step_ = 1;
    for (std::int64_t i = 0; i < count[0]; ++i) forward(0);
    step_ = 2;
    for (std::int64_t i = 0; i < count[1]; ++i) {
      forward(0);
      forward(1);
    }
    step_ = 3;
    for (std::int64_t i = 0; i < count[2]; ++i) {
      backward(1, true);
      weight();
      forward(1);
    }
    step_ = 4;
    for (std::int64_t i = 0; i < count[3]; ++i) {
      if (i == 0 && middle) {  // the reference does not overlap these two, to shorten the bubble
        forward(0);
        backward(1, false);
      } else {
        forward_backward(0, 1);
      }
      forward_backward(1, 0);
    }
    step_ = 5;
    for (std::int64_t i = 0; i < count[4]; ++i) {
      backward(1, false);
      forward_backward(1, 0);
    }
    step_ = 6;
    bool split = false;  // the second half of these backwards leave their W for later
    for (std::int64_t i = 0; i < count[5]; ++i) {
      if (i == count[5] / 2 && h % 2 == 1) split = true;
      backward(1, split);
      if (i == count[5] / 2 && h % 2 == 0) split = true;
      backward(0, split);
    }
    step_ = 7;
    for (std::int64_t i = 0; i < count[6]; ++i) {
      weight();
      backward(0, true);
    }
    step_ = 8;
    for (std::int64_t i = 0; i < count[7]; ++i) weight();
  }

 private:
  // The model stage and the micro-batch numbering of local chunk c.
  std::int64_t stage(int c) const {
    const std::int64_t n = s_.ranks;
    if (v_shape_) return c == 0 ? r_ : 2 * n - 1 - r_;
    int direction = c ^ (flip_ ? 1 : 0);
    return direction == 0 ? r_ : n - 1 - r_;
  }
  std::int64_t first_mb(int c) const {
    if (v_shape_) return 0;
    int direction = c ^ (flip_ ? 1 : 0);
    return direction * (s_.microbatches / 2);
  }
  PipeOp tagged(OpKind kind, std::int64_t mb, std::int64_t st) const {
    PipeOp o = op(kind, mb, st);
    o.phase = static_cast<std::int8_t>(step_);
    return o;
  }
  void forward(int c) { ops_.push_back(tagged(OpKind::forward, first_mb(c) + next_f_[c]++, stage(c))); }
  void backward(int c, bool split) {
    std::int64_t mb = first_mb(c) + next_b_[c]++;
    ops_.push_back(tagged(split ? OpKind::backward_input : OpKind::backward, mb, stage(c)));
    if (split) pending_w_.push_back({static_cast<std::int32_t>(mb), static_cast<std::int32_t>(stage(c))});
  }
  void weight() {
    StageWork w = pending_w_.front();
    pending_w_.pop_front();
    ops_.push_back(tagged(OpKind::weight, w.mb, w.stage));
  }
  void forward_backward(int f, int b) {
    PipeOp o = tagged(OpKind::forward_backward, first_mb(f) + next_f_[f]++, stage(f));
    o.other = {static_cast<std::int32_t>(first_mb(b) + next_b_[b]++), static_cast<std::int32_t>(stage(b))};
    ops_.push_back(o);
  }

  PipelineSchedule& s_;
  std::int64_t r_;
  std::vector<PipeOp>& ops_;
  bool v_shape_ = false, flip_ = false;
  std::int64_t h_ = 0;
  int step_ = 0;
  std::array<std::int64_t, 2> next_f_{0, 0}, next_b_{0, 0};
  std::deque<StageWork> pending_w_;
};

}  // namespace

PipelineSchedule make_schedule(ScheduleKind kind, std::int64_t ranks, std::int64_t microbatches, std::int64_t vp) {
  if (ranks < 1 || microbatches < 1 || vp < 1)
    throw ScheduleError(fmt::format("ranks, micro-batches and vp must be at least 1 (got {}, {}, {})", ranks,
                                    microbatches, vp));
  std::vector<ScheduleViolation> violations = schedule_constraint_violations(kind, ranks, vp, microbatches);
  if (!violations.empty()) throw ScheduleError(violations.front().message);
  PipelineSchedule s;
  s.kind = kind;
  s.ranks = ranks;
  s.microbatches = microbatches;
  s.vp = vp;
  s.stages = stage_count(kind, ranks, vp);
  s.ops.resize(static_cast<std::size_t>(ranks));
  switch (kind) {
    case ScheduleKind::gpipe: gpipe(s); break;
    case ScheduleKind::one_f_one_b: one_f_one_b(s); break;
    case ScheduleKind::interleaved: interleaved(s); break;
    case ScheduleKind::zb_h1:
    case ScheduleKind::zb_h2:
    case ScheduleKind::zb_v: zero_bubble(s); break;
    case ScheduleKind::dualpipe:
    case ScheduleKind::dualpipe_v:
      s.steps.resize(static_cast<std::size_t>(ranks));
      for (std::int64_t r = 0; r < ranks; ++r) DualPipeRank(s, r).run();
      break;
  }
  return s;
}

}  // namespace plumb
