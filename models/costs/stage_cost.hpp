#pragma once
// What one micro-batch costs on one model stage, pass by pass, and the stage's once-per-step terms.
#include "models/costs/pass.hpp"

namespace plumb {

struct StageCost {
  Pass forward, input_grad, weight_grad;
  Pass backward;       // input and weight gradients in one pass, as non-split schedules run it
  double p2p = 0;      // one micro-batch's activations (or their gradient) to the neighbouring stage
  bool p2p_in_passes = false;  // blocking sends: already the last segment of each pass that sends
  double grad_sync = 0;     // the stage's gradient reduction over data parallelism, once per step
  double param_gather = 0;  // ZeRO-1/2: the updated parameters gathered back, once per step
  double optimizer = 0;     // this rank's share of the optimizer update
  double newton_schulz = 0; // of which Muon's Newton–Schulz iterations (0 under AdamW)
  // DualPipe(V): this stage's forward interleaved on one GPU with the backward of the other stage its
  // rank holds — one direction's forward beside the other's backward, an F&B pair — if no SMs were shared.
  double fb_overlap = 0;
};

}  // namespace plumb
