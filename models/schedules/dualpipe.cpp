// DualPipe and DualPipeV (deepseek-ai/DualPipe; DeepSeek-V3 report §3.2.1): each rank holds two chunks
// and runs the reference implementation's eight steps, named here as its loop comments name them (n =
// how many times; F0/F1 a forward of chunk 0/1, B a backward, W a deferred weight gradient). In
// DualPipe a rank in the second half mirrors the first half, so its local chunk 0 is the stage its
// first-half twin calls chunk 1. Step counts per rank: shared/reference/published.md.
#include <algorithm>
#include <array>
#include <deque>

#include "models/schedules/generators.hpp"

namespace plumb {
namespace {

class DualPipeRank {
 public:
  DualPipeRank(PipelineSchedule& s, std::int64_t r) : s_(s), r_(r), ops_(s.ops[static_cast<std::size_t>(r)]) {
    const std::int64_t n = s.ranks;
    v_shape_ = s.layout == StageLayout::v_shape;
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
    const std::array<std::int64_t, 8> count{(halves - h - 1) * 2, h + 1, halves - h - 1, chunks - pipeline + h + 1,
                                            halves - h - 1,       h + 1, halves - h - 1, h + 1};
    s_.steps[static_cast<std::size_t>(r_)] = count;
    step1_nF0(count[0]);
    step2_nF0F1(count[1]);
    step3_nB1W1F1(count[2]);
    step4_nF0B1F1B0(count[3], h == halves - 1);
    step5_nB1F1B0(count[4]);
    step6_nB1B0(count[5]);
    step7_nWB0(count[6]);
    step8_nW(count[7]);
  }

 private:
  // Warm-up: forwards of chunk 0 only.
  void step1_nF0(std::int64_t times) {
    step_ = 1;
    for (std::int64_t i = 0; i < times; ++i) forward(0);
  }
  // Forwards of both chunks in turn.
  void step2_nF0F1(std::int64_t times) {
    step_ = 2;
    for (std::int64_t i = 0; i < times; ++i) {
      forward(0);
      forward(1);
    }
  }
  // A chunk-1 backward split zero-bubble style (its W right after), then a chunk-1 forward.
  void step3_nB1W1F1(std::int64_t times) {
    step_ = 3;
    for (std::int64_t i = 0; i < times; ++i) {
      backward(1, true);
      weight();
      forward(1);
    }
  }
  // The main loop: overlapped F0&B1 and F1&B0 pairs. On the middle ranks the reference runs the first
  // F0 and B1 apart, to shorten the bubble.
  void step4_nF0B1F1B0(std::int64_t times, bool middle) {
    step_ = 4;
    for (std::int64_t i = 0; i < times; ++i) {
      if (i == 0 && middle) {
        forward(0);
        backward(1, false);
      } else {
        forward_backward(0, 1);
      }
      forward_backward(1, 0);
    }
  }
  // A chunk-1 backward, then an overlapped F1&B0 pair.
  void step5_nB1F1B0(std::int64_t times) {
    step_ = 5;
    for (std::int64_t i = 0; i < times; ++i) {
      backward(1, false);
      forward_backward(1, 0);
    }
  }
  // Backwards of both chunks; the second half leave their W for later (zero bubble).
  void step6_nB1B0(std::int64_t times) {
    step_ = 6;
    bool split = false;
    for (std::int64_t i = 0; i < times; ++i) {
      if (i == times / 2 && h_ % 2 == 1) split = true;
      backward(1, split);
      if (i == times / 2 && h_ % 2 == 0) split = true;
      backward(0, split);
    }
  }
  // A deferred W, then a split chunk-0 backward.
  void step7_nWB0(std::int64_t times) {
    step_ = 7;
    for (std::int64_t i = 0; i < times; ++i) {
      weight();
      backward(0, true);
    }
  }
  // The remaining deferred weight gradients.
  void step8_nW(std::int64_t times) {
    step_ = 8;
    for (std::int64_t i = 0; i < times; ++i) weight();
  }

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
    PipeOp o = stage_op(kind, mb, st);
    o.phase = static_cast<std::int8_t>(step_);
    return o;
  }
  void forward(int c) { ops_.push_back(tagged(OpKind::forward, first_mb(c) + next_f_[c]++, stage(c))); }
  void backward(int c, bool split) {
    std::int64_t mb = first_mb(c) + next_b_[c]++;
    ops_.push_back(tagged(split ? OpKind::backward_input : OpKind::backward, mb, stage(c)));
    if (split) pending_w_.push_back(stage_work(mb, stage(c)));
  }
  void weight() {
    StageWork w = pending_w_.front();
    pending_w_.pop_front();
    ops_.push_back(tagged(OpKind::weight, w.mb, w.stage));
  }
  void forward_backward(int f, int b) {
    PipeOp o = tagged(OpKind::forward_backward, first_mb(f) + next_f_[f]++, stage(f));
    o.other = stage_work(first_mb(b) + next_b_[b]++, stage(b));
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

void generate_dualpipe(PipelineSchedule& s, const OpTimes&) {
  s.steps.resize(static_cast<std::size_t>(s.ranks));
  for (std::int64_t r = 0; r < s.ranks; ++r) DualPipeRank(s, r).run();
}

}  // namespace plumb
