#include "validate/gpu/gpu_numerics.hpp"

#include <algorithm>
#include <cmath>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <memory>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/cuda_check.hpp"
#include "kernels/gemm_runner.hpp"
#include "kernels/layer_kernels.hpp"
#include "kernels/training_kernels.hpp"
#include "validate/run/virtual_run.hpp"

namespace plumb {
namespace {

using kernels::check;
using kernels::DeviceBuffer;
using bf16 = __nv_bfloat16;

std::unique_ptr<DeviceBuffer> bf16_buffer(std::int64_t elements) { return std::make_unique<DeviceBuffer>(static_cast<std::size_t>(elements) * 2); }

std::unique_ptr<DeviceBuffer> upload(const std::vector<float>& v) {
  std::vector<bf16> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h[i] = __float2bfloat16(v[i]);
  auto d = bf16_buffer(static_cast<std::int64_t>(v.size()));
  check(cudaMemcpy(d->p, h.data(), h.size() * 2, cudaMemcpyHostToDevice), "upload");
  return d;
}

// rows × cols row-major, transposed.
std::vector<float> transposed(const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(v.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) t[static_cast<std::size_t>(c * rows + r)] = v[static_cast<std::size_t>(r * cols + c)];
  return t;
}

bf16* bf(const std::unique_ptr<DeviceBuffer>& d) { return static_cast<bf16*>(d->p); }

// A stage's weights, as the forward (W) and the input gradient (Wᵀ) read them: gate and up stacked,
// [2F][H], and down, [H][F].
struct StageWeights {
  std::unique_ptr<DeviceBuffer> gate_up, gate_up_t, down, down_t;
};

// What one (stage, micro-batch) computes and keeps, and its weight gradients' products before they
// are added to the accumulators.
struct Cell {
  std::unique_ptr<DeviceBuffer> gate_up, g, y, dg, dgate_up, dx, in_t, g_t, dout_t, dgate_up_t, dw_gate_up, dw_down;
};

class Runner {
 public:
  Runner(const PipelineSchedule& s, const GpuNumericsShape& shape, std::uint64_t seed)
      : s_(s), t_(shape.tokens), h_(shape.hidden), f_(shape.ffn), stages_(static_cast<std::size_t>(s.stages)),
        mbs_(static_cast<std::size_t>(s.microbatches)) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> weight(0.f, 0.05f), data(0.f, 1.f);
    auto random = [&](std::size_t n, std::normal_distribution<float>& d) {
      std::vector<float> v(n);
      for (float& x : v) x = d(rng);
      return v;
    };
    const auto th = static_cast<std::size_t>(t_ * h_), fh = static_cast<std::size_t>(f_ * h_);
    for (std::size_t st = 0; st < stages_; ++st) {
      std::vector<float> gate_up = random(2 * fh, weight), down = random(fh, weight);
      weights_.push_back({upload(gate_up), upload(transposed(gate_up, 2 * f_, h_)), upload(down), upload(transposed(down, h_, f_))});
    }
    for (std::size_t m = 0; m < mbs_; ++m) {
      inputs_.push_back(upload(random(th, data)));
      targets_.push_back(upload(random(th, data)));
      dloss_.push_back(bf16_buffer(t_ * h_));
    }
    cells_.resize(stages_ * mbs_);
    for (Cell& c : cells_) each_buffer(c, [](std::unique_ptr<DeviceBuffer>& b, std::int64_t elements) { b = bf16_buffer(elements); });
  }

  // Loss and the stages' weight gradients (gate_up then down, per stage), pipelined or serial.
  struct Result {
    double loss = 0;
    std::vector<float> gradients;
  };

  Result pipelined() {
    const auto ranks = s_.ops.size();
    std::vector<cudaStream_t> streams(ranks);
    std::vector<std::unique_ptr<kernels::GemmRunner>> gemm;
    for (cudaStream_t& st : streams) {
      check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
      gemm.push_back(std::make_unique<kernels::GemmRunner>());
    }
    Accumulators acc = start();
    const std::vector<RunOp> order = enqueue_order(s_);
    std::vector<cudaEvent_t> done(order.size());
    for (cudaEvent_t& e : done) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    for (std::size_t i = 0; i < order.size(); ++i) {
      const RunOp& ro = order[i];
      const auto r = static_cast<std::size_t>(ro.rank);
      Lane lane{*gemm[r], streams[r], acc};
      for (std::int32_t w : ro.waits) check(cudaStreamWaitEvent(streams[r], done[static_cast<std::size_t>(w)], 0), "cudaStreamWaitEvent");
      for (const OpPass& p : op_passes(s_.ops[r][static_cast<std::size_t>(ro.index)])) switch (p.pass) {
          case StagePass::forward: forward(lane, p.work); break;
          case StagePass::input_grad: input_grad(lane, p.work); break;
          case StagePass::weight_grad: weight_grad(lane, p.work); break;
        }
      check(cudaEventRecord(done[i], streams[r]), "cudaEventRecord");
    }
    check(cudaDeviceSynchronize(), "the pipelined step");
    for (cudaEvent_t e : done) cudaEventDestroy(e);
    for (cudaStream_t st : streams) cudaStreamDestroy(st);
    return finish(acc);
  }

  Result serial() {
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    kernels::GemmRunner gemm;
    Accumulators acc = start();
    Lane lane{gemm, stream, acc};
    for (std::int32_t m = 0; m < static_cast<std::int32_t>(mbs_); ++m) {
      for (std::int32_t st = 0; st < static_cast<std::int32_t>(stages_); ++st) forward(lane, stage_work(m, st));
      for (std::int32_t st = static_cast<std::int32_t>(stages_); st-- > 0;) {
        input_grad(lane, stage_work(m, st));
        weight_grad(lane, stage_work(m, st));
      }
    }
    check(cudaStreamSynchronize(stream), "the serial step");
    cudaStreamDestroy(stream);
    return finish(acc);
  }

 private:
  struct Accumulators {
    std::vector<std::unique_ptr<DeviceBuffer>> gate_up, down;  // fp32, per stage
    std::unique_ptr<DeviceBuffer> loss;                        // one fp32
  };
  struct Lane {
    kernels::GemmRunner& gemm;
    cudaStream_t stream;
    Accumulators& acc;
  };

  // Fresh accumulators, and every activation and gradient buffer poisoned with NaN.
  Accumulators start() {
    Accumulators a;
    for (std::size_t st = 0; st < stages_; ++st) {
      a.gate_up.push_back(std::make_unique<DeviceBuffer>(static_cast<std::size_t>(2 * f_ * h_) * 4));
      a.down.push_back(std::make_unique<DeviceBuffer>(static_cast<std::size_t>(f_ * h_) * 4));
      check(cudaMemset(a.gate_up.back()->p, 0, static_cast<std::size_t>(2 * f_ * h_) * 4), "cudaMemset");
      check(cudaMemset(a.down.back()->p, 0, static_cast<std::size_t>(f_ * h_) * 4), "cudaMemset");
    }
    a.loss = std::make_unique<DeviceBuffer>(4);
    check(cudaMemset(a.loss->p, 0, 4), "cudaMemset");
    auto poison = [](std::unique_ptr<DeviceBuffer>& b, std::int64_t elements) {
      check(cudaMemset(b->p, 0xff, static_cast<std::size_t>(elements) * 2), "cudaMemset(NaN)");
    };
    for (Cell& c : cells_) each_buffer(c, poison);
    for (auto& d : dloss_) poison(d, t_ * h_);
    check(cudaDeviceSynchronize(), "poisoning the buffers");
    return a;
  }

  Result finish(const Accumulators& a) {
    Result r;
    float loss = 0;
    check(cudaMemcpy(&loss, a.loss->p, 4, cudaMemcpyDeviceToHost), "download the loss");
    r.loss = loss;
    for (std::size_t st = 0; st < stages_; ++st)
      for (auto [buffer, elements] : {std::pair{a.gate_up[st].get(), 2 * f_ * h_}, std::pair{a.down[st].get(), f_ * h_}}) {
        std::vector<float> g(static_cast<std::size_t>(elements));
        check(cudaMemcpy(g.data(), buffer->p, g.size() * 4, cudaMemcpyDeviceToHost), "download the gradients");
        r.gradients.insert(r.gradients.end(), g.begin(), g.end());
      }
    return r;
  }

  // Each of a cell's bf16 buffers with its element count: allocated once, poisoned before each run.
  template <class F>
  void each_buffer(Cell& c, F f) const {
    for (auto* b : {&c.gate_up, &c.dgate_up, &c.dgate_up_t}) f(*b, 2 * t_ * f_);
    for (auto* b : {&c.g, &c.dg, &c.g_t}) f(*b, t_ * f_);
    for (auto* b : {&c.y, &c.dx, &c.in_t, &c.dout_t}) f(*b, t_ * h_);
    f(c.dw_gate_up, 2 * f_ * h_);
    f(c.dw_down, f_ * h_);
  }

  Cell& cell(StageWork w) { return cells_[static_cast<std::size_t>(w.stage) * mbs_ + static_cast<std::size_t>(w.mb)]; }
  bool last(StageWork w) const { return static_cast<std::size_t>(w.stage) + 1 == stages_; }
  // The stage's input: the micro-batch's data, or the previous stage's output.
  const bf16* input(StageWork w) { return w.stage == 0 ? bf(inputs_[static_cast<std::size_t>(w.mb)]) : bf(cell(stage_work(w.mb, w.stage - 1)).y); }
  // The gradient of the stage's output: the loss's, or the next stage's input gradient.
  const bf16* output_grad(StageWork w) { return last(w) ? bf(dloss_[static_cast<std::size_t>(w.mb)]) : bf(cell(stage_work(w.mb, w.stage + 1)).dx); }

  // C (column-major m×n, i.e. row-major [n][m]) = A[m][k] · B[n][k]ᵀ.
  void gemm(Lane& l, std::int64_t m, std::int64_t n, std::int64_t k, const bf16* a, const bf16* b, bf16* c) {
    l.gemm.run({m, n, k, 1, false}, a, b, c, l.stream);
  }

  // gate_up = x·W_guᵀ, g = SwiGLU, y = g·W_downᵀ + x; the last stage adds its loss.
  void forward(Lane& l, StageWork w) {
    Cell& c = cell(w);
    const StageWeights& wt = weights_[static_cast<std::size_t>(w.stage)];
    const bf16* x = input(w);
    gemm(l, 2 * f_, t_, h_, bf(wt.gate_up), x, bf(c.gate_up));
    kernels::swiglu_forward(bf(c.gate_up), bf(c.g), t_, f_, l.stream);
    gemm(l, h_, t_, f_, bf(wt.down), bf(c.g), bf(c.y));
    kernels::add_bf16(bf(c.y), x, bf(c.y), t_ * h_, l.stream);
    if (last(w))
      kernels::squared_error(bf(c.y), bf(targets_[static_cast<std::size_t>(w.mb)]), bf(dloss_[static_cast<std::size_t>(w.mb)]),
                             static_cast<float*>(l.acc.loss->p), t_ * h_, l.stream);
  }

  // dg = dy·W_down, dgate_up = SwiGLU backward, dx = dgate_up·W_gu + dy.
  void input_grad(Lane& l, StageWork w) {
    Cell& c = cell(w);
    const StageWeights& wt = weights_[static_cast<std::size_t>(w.stage)];
    const bf16* dy = output_grad(w);
    gemm(l, f_, t_, h_, bf(wt.down_t), dy, bf(c.dg));
    kernels::swiglu_backward(bf(c.gate_up), bf(c.dg), bf(c.dgate_up), t_, f_, l.stream);
    gemm(l, h_, t_, 2 * f_, bf(wt.gate_up_t), bf(c.dgate_up), bf(c.dx));
    kernels::add_bf16(bf(c.dx), dy, bf(c.dx), t_ * h_, l.stream);
  }

  // dW_down[o][f] = Σ_t dy[t][o]·g[t][f] and dW_gu[j][i] = Σ_t dgate_up[t][j]·x[t][i], contracted over
  // tokens (hence the transposes), then added to the fp32 accumulators.
  void weight_grad(Lane& l, StageWork w) {
    Cell& c = cell(w);
    Accumulators& a = l.acc;
    const auto st = static_cast<std::size_t>(w.stage);
    kernels::transpose_bf16(input(w), bf(c.in_t), t_, h_, l.stream);
    kernels::transpose_bf16(bf(c.g), bf(c.g_t), t_, f_, l.stream);
    kernels::transpose_bf16(output_grad(w), bf(c.dout_t), t_, h_, l.stream);
    kernels::transpose_bf16(bf(c.dgate_up), bf(c.dgate_up_t), t_, 2 * f_, l.stream);
    gemm(l, f_, h_, t_, bf(c.g_t), bf(c.dout_t), bf(c.dw_down));
    gemm(l, h_, 2 * f_, t_, bf(c.in_t), bf(c.dgate_up_t), bf(c.dw_gate_up));
    kernels::accumulate_fp32(static_cast<float*>(a.down[st]->p), bf(c.dw_down), f_ * h_, l.stream);
    kernels::accumulate_fp32(static_cast<float*>(a.gate_up[st]->p), bf(c.dw_gate_up), 2 * f_ * h_, l.stream);
  }

  const PipelineSchedule& s_;
  std::int64_t t_, h_, f_;
  std::size_t stages_, mbs_;
  std::vector<StageWeights> weights_;
  std::vector<std::unique_ptr<DeviceBuffer>> inputs_, targets_, dloss_;
  std::vector<Cell> cells_;
};

}  // namespace

NumericCheck check_schedule_numerics_gpu(const PipelineSchedule& schedule, const GpuNumericsShape& shape, std::uint64_t seed) {
  for (int d : {shape.tokens, shape.hidden, shape.ffn})
    if (d < 16 || d % 16 != 0) throw std::invalid_argument("the GPU numerics model's widths must be multiples of 16");
  Runner runner(schedule, shape, seed);
  const Runner::Result piped = runner.pipelined(), serial = runner.serial();
  NumericCheck c;
  c.stages = schedule.stages;
  c.microbatches = schedule.microbatches;
  for (const auto& rank : schedule.ops) c.ops += static_cast<std::int64_t>(rank.size());
  c.loss_pipelined = piped.loss;
  c.loss_serial = serial.loss;
  double largest = 0, diff = 0;
  for (std::size_t i = 0; i < serial.gradients.size(); ++i) {
    const double a = piped.gradients[i], b = serial.gradients[i];
    largest = std::max(largest, std::abs(b));
    diff = std::isfinite(a) && std::isfinite(b) ? std::max(diff, std::abs(a - b)) : INFINITY;  // NaN: read before written
  }
  c.max_gradient_difference = largest > 0 ? diff / largest : diff;
  return c;
}

}  // namespace plumb
