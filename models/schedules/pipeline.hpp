#pragma once
// Pipeline schedules as data: for every pipeline rank, the ordered list of ops it runs. Sends and
// receives follow from stage edges: an op's input comes from the rank holding the neighbouring stage of
// its micro-batch. The families that generate them are in models/schedules/registry.hpp.
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/schedules/schedule_shape.hpp"

namespace plumb {

enum class OpKind : std::uint8_t {
  forward,           // F
  backward,          // B: full backward (input and weight gradients)
  backward_input,    // the input-gradient half of B (zero-bubble schedules)
  weight,            // W: the weight-gradient half of B
  forward_backward,  // F&B: a forward and a full backward of two micro-batches, overlapped
};
inline constexpr std::size_t kOpKinds = static_cast<std::size_t>(OpKind::forward_backward) + 1;

std::string_view op_kind_symbol(OpKind k);  // "F", "B", "b", "W", "FB"

// One unit of pipeline work: micro-batch `mb` on model stage `stage`.
struct StageWork {
  std::int32_t mb = 0;
  std::int32_t stage = 0;
};
// Micro-batch `mb` on model stage `stage`, from the wider integers loops count in; the one place the two
// are put together, so that no call can swap them.
inline StageWork stage_work(std::int64_t mb, std::int64_t stage) {
  return StageWork{static_cast<std::int32_t>(mb), static_cast<std::int32_t>(stage)};
}

struct PipeOp {
  OpKind kind = OpKind::forward;
  StageWork work;   // for forward_backward: the forward part
  StageWork other;  // forward_backward only: the backward part
  std::int8_t phase = 0;  // DualPipe/DualPipeV: which of the reference loop's eight steps emitted it (1–8)
};

struct PipelineSchedule {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  StageLayout layout = StageLayout::straight;  // the family's, copied here so that rank_of needs no registry
  std::int64_t ranks = 0, stages = 0, microbatches = 0, vp = 1;
  std::vector<std::vector<PipeOp>> ops;  // per rank, in execution order
  // DualPipe/DualPipeV: loop iterations per step (1–8) per rank, as the reference implementation counts.
  std::vector<std::array<std::int64_t, 8>> steps;

  // Which rank runs w's stage for its micro-batch (DualPipe's two halves flow in opposite directions).
  std::int64_t rank_of(StageWork w) const;
  // 0 for the first half of DualPipe's micro-batches and for down-going stages of a V; 1 otherwise.
  int direction(StageWork w) const;
};

// Bad (ranks, micro-batches, vp) for a schedule: the message has the numbers.
struct ScheduleError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Times of one stage's ops, for the families whose op order depends on them (the zero-bubble heuristic)
// and for the closed-form bubbles: a forward, the input-gradient half of the backward, its weight-gradient
// half, the hand-off between ranks, and an overlapped forward-and-backward pair (0: no overlap, the sum).
struct OpTimes {
  double forward = 1, input_grad = 1, weight_grad = 1;
  double comm = 0;
  double pair = 0;
  // Not a time: what a weight gradient deferred past its input-gradient backward keeps (its GEMMs' inputs
  // and output gradients) as a share of the forward's activation set. The zero-bubble heuristic counts it
  // against its memory limit, as Qi et al.'s runtime does (F adds M_F, B frees M_F − M_W, W frees M_W:
  // sail-sg/zero-bubble-pipeline-parallelism zb_schedules.py, M_W = 32h of M_F = 34h + 5as); 0: not counted.
  double stash = 0;
  double backward() const { return input_grad + weight_grad; }
  double overlapped_pair() const { return pair > 0 ? pair : forward + backward(); }
};

}  // namespace plumb
