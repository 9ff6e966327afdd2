#include "validate/run/pipeline_numerics.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "validate/run/virtual_run.hpp"

namespace plumb {
namespace {

constexpr int kTokens = 3, kHidden = 6, kFfn = 10;

using Vec = std::vector<double>;  // kTokens × width, row-major

double silu(double a) { return a / (1 + std::exp(-a)); }
double silu_grad(double a) {
  double s = 1 / (1 + std::exp(-a));
  return s * (1 + a * (1 - s));
}

// out[t][o] = Σ_i in[t][i] · w[o][i]  (w is out × in)
Vec matmul(const Vec& in, const Vec& w, int width_in, int width_out) {
  Vec out(static_cast<std::size_t>(kTokens * width_out), 0.0);
  for (int t = 0; t < kTokens; ++t)
    for (int o = 0; o < width_out; ++o)
      for (int i = 0; i < width_in; ++i) out[t * width_out + o] += in[t * width_in + i] * w[o * width_in + i];
  return out;
}
// out[t][i] = Σ_o in[t][o] · w[o][i]
Vec matmul_t(const Vec& in, const Vec& w, int width_in, int width_out) {
  Vec out(static_cast<std::size_t>(kTokens * width_in), 0.0);
  for (int t = 0; t < kTokens; ++t)
    for (int o = 0; o < width_out; ++o)
      for (int i = 0; i < width_in; ++i) out[t * width_in + i] += in[t * width_out + o] * w[o * width_in + i];
  return out;
}
// grad[o][i] += Σ_t d[t][o] · x[t][i]
void accumulate_outer(Vec& grad, const Vec& d, const Vec& x, int width_out, int width_in) {
  for (int t = 0; t < kTokens; ++t)
    for (int o = 0; o < width_out; ++o)
      for (int i = 0; i < width_in; ++i) grad[o * width_in + i] += d[t * width_out + o] * x[t * width_in + i];
}

struct Weights {
  Vec gate, up, down;  // kFfn × kHidden, kFfn × kHidden, kHidden × kFfn
};

// What a stage keeps of one micro-batch between its passes.
struct Stash {
  Vec x, a, b, g;          // forward: input, gate and up projections, SwiGLU output
  Vec dy, da, db;          // input-gradient half, for the weight-gradient half
  bool forward = false, input_grad = false, weight_grad = false;
};

struct Model {
  std::vector<Weights> w, grad;
  explicit Model(std::int64_t stages, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> n(0.0, 0.05);  // small: the residual stream stays O(1) over 24 stages
    auto fill = [&](std::size_t size) {
      Vec v(size);
      for (double& x : v) x = n(rng);
      return v;
    };
    for (std::int64_t s = 0; s < stages; ++s) {
      w.push_back({fill(kFfn * kHidden), fill(kFfn * kHidden), fill(kHidden * kFfn)});
      grad.push_back({Vec(kFfn * kHidden, 0.0), Vec(kFfn * kHidden, 0.0), Vec(kHidden * kFfn, 0.0)});
    }
  }

  Vec forward(std::size_t s, Stash& st, const Vec& x) const {
    st.x = x;
    st.a = matmul(x, w[s].gate, kHidden, kFfn);
    st.b = matmul(x, w[s].up, kHidden, kFfn);
    st.g.resize(st.a.size());
    for (std::size_t i = 0; i < st.a.size(); ++i) st.g[i] = silu(st.a[i]) * st.b[i];
    Vec y = matmul(st.g, w[s].down, kFfn, kHidden);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += x[i];  // residual
    return y;
  }

  Vec input_grad(std::size_t s, Stash& st, const Vec& dy) const {
    st.dy = dy;
    Vec dg = matmul_t(dy, w[s].down, kFfn, kHidden);
    st.da.resize(dg.size());
    st.db.resize(dg.size());
    for (std::size_t i = 0; i < dg.size(); ++i) {
      st.da[i] = dg[i] * st.b[i] * silu_grad(st.a[i]);
      st.db[i] = dg[i] * silu(st.a[i]);
    }
    Vec dx = matmul_t(st.da, w[s].gate, kHidden, kFfn), dxu = matmul_t(st.db, w[s].up, kHidden, kFfn);
    for (std::size_t i = 0; i < dx.size(); ++i) dx[i] += dxu[i] + dy[i];
    return dx;
  }

  void weight_grad(std::size_t s, const Stash& st) {
    accumulate_outer(grad[s].down, st.dy, st.g, kHidden, kFfn);
    accumulate_outer(grad[s].gate, st.da, st.x, kFfn, kHidden);
    accumulate_outer(grad[s].up, st.db, st.x, kFfn, kHidden);
  }
};

double half_squared_error(const Vec& y, const Vec& target, Vec* dy) {
  double loss = 0;
  if (dy) dy->resize(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    loss += 0.5 * (y[i] - target[i]) * (y[i] - target[i]);
    if (dy) (*dy)[i] = y[i] - target[i];
  }
  return loss;
}

}  // namespace

std::vector<OpPass> op_passes(const PipeOp& op) {
  switch (op.kind) {
    case OpKind::forward: return {{StagePass::forward, op.work}};
    case OpKind::backward: return {{StagePass::input_grad, op.work}, {StagePass::weight_grad, op.work}};
    case OpKind::backward_input: return {{StagePass::input_grad, op.work}};
    case OpKind::weight: return {{StagePass::weight_grad, op.work}};
    case OpKind::forward_backward:
      return {{StagePass::forward, op.work}, {StagePass::input_grad, op.other}, {StagePass::weight_grad, op.other}};
  }
  return {};
}

bool NumericCheck::matches(double tolerance) const {
  return std::abs(loss_pipelined - loss_serial) <= tolerance * std::max(1.0, std::abs(loss_serial)) &&
         max_gradient_difference <= tolerance;
}

namespace {

using Box = std::map<std::pair<std::size_t, std::size_t>, Vec>;  // per (stage, micro-batch)

std::string op_label(char kind, StageWork w) { return fmt::format("{}{} s{}", kind, w.mb, w.stage); }

// Takes (and removes) what `who` needs from `box`; its absence means the schedule ran `who` too early.
Vec take(Box& box, std::size_t s, std::size_t m, const std::string& who, const char* what) {
  auto it = box.find({s, m});
  if (it == box.end()) throw ScheduleDataflowError(fmt::format("{} ran before {}", who, what));
  Vec v = std::move(it->second);
  box.erase(it);
  return v;
}

// The pipelined run: the schedule's passes one by one, activations and gradients handed over per
// (stage, micro-batch), every pass refused that runs before what it needs or runs twice.
class PipelinedRun {
 public:
  PipelinedRun(std::int64_t stages, std::uint64_t seed, const std::vector<Vec>& inputs, const std::vector<Vec>& targets)
      : model(stages, seed), inputs_(inputs), targets_(targets),
        stash_(static_cast<std::size_t>(stages), std::vector<Stash>(inputs.size())) {}

  void forward(StageWork w) {
    const auto s = static_cast<std::size_t>(w.stage), m = static_cast<std::size_t>(w.mb);
    Stash& st = stash_[s][m];
    if (st.forward) throw ScheduleDataflowError(op_label('F', w) + " ran twice");
    Vec x = s == 0 ? inputs_[m] : take(activation_, s, m, op_label('F', w), "the previous stage's forward of its micro-batch");
    Vec y = model.forward(s, st, x);
    st.forward = true;
    if (s + 1 < stash_.size()) {
      activation_[{s + 1, m}] = std::move(y);
    } else {
      Vec dy;
      loss += half_squared_error(y, targets_[m], &dy);
      gradient_[{s, m}] = std::move(dy);
    }
  }
  void input_grad(StageWork w, char kind) {
    const auto s = static_cast<std::size_t>(w.stage), m = static_cast<std::size_t>(w.mb);
    Stash& st = stash_[s][m];
    if (!st.forward) throw ScheduleDataflowError(op_label(kind, w) + " ran before its own forward");
    if (st.input_grad) throw ScheduleDataflowError(op_label(kind, w) + " ran twice");
    Vec dy = take(gradient_, s, m, op_label(kind, w), "the next stage's backward of its micro-batch");
    Vec dx = model.input_grad(s, st, dy);
    st.input_grad = true;
    if (s > 0) gradient_[{s - 1, m}] = std::move(dx);
  }
  void weight_grad(StageWork w) {
    Stash& st = stash_[static_cast<std::size_t>(w.stage)][static_cast<std::size_t>(w.mb)];
    if (!st.input_grad) throw ScheduleDataflowError(op_label('W', w) + " ran before its input gradient");
    if (st.weight_grad) throw ScheduleDataflowError(op_label('W', w) + " ran twice");
    model.weight_grad(static_cast<std::size_t>(w.stage), st);
    st.weight_grad = true;
  }
  // Every (stage, micro-batch) must have finished its backward.
  void check_complete() const {
    for (std::size_t s = 0; s < stash_.size(); ++s)
      for (std::size_t m = 0; m < stash_[s].size(); ++m)
        if (!stash_[s][m].weight_grad)
          throw ScheduleDataflowError(fmt::format("stage {} of micro-batch {} never finished its backward", s, m));
  }

  Model model;
  double loss = 0;

 private:
  const std::vector<Vec>& inputs_;
  const std::vector<Vec>& targets_;
  std::vector<std::vector<Stash>> stash_;
  Box activation_, gradient_;
};

// Serial: each micro-batch forward through every stage, then backward; returns the loss.
double run_serially(Model& serial, std::size_t stages, const std::vector<Vec>& inputs, const std::vector<Vec>& targets) {
  double loss = 0;
  for (std::size_t m = 0; m < inputs.size(); ++m) {
    std::vector<Stash> st(stages);
    Vec h = inputs[m];
    for (std::size_t s = 0; s < stages; ++s) h = serial.forward(s, st[s], h);
    Vec d;
    loss += half_squared_error(h, targets[m], &d);
    for (std::size_t s = stages; s-- > 0;) {
      d = serial.input_grad(s, st[s], d);
      serial.weight_grad(s, st[s]);
    }
  }
  return loss;
}

// The largest difference between two runs' weight gradients, relative to the largest serial one.
double max_gradient_difference(const Model& piped, const Model& serial, std::size_t stages) {
  double largest = 0, diff = 0;
  for (std::size_t s = 0; s < stages; ++s)
    for (auto part : {&Weights::gate, &Weights::up, &Weights::down}) {
      const Vec &a = piped.grad[s].*part, &b = serial.grad[s].*part;
      for (std::size_t i = 0; i < a.size(); ++i) {
        largest = std::max(largest, std::abs(b[i]));
        diff = std::max(diff, std::abs(a[i] - b[i]));
      }
    }
  return largest > 0 ? diff / largest : diff;
}

}  // namespace

NumericCheck check_schedule_numerics(const PipelineSchedule& schedule, std::uint64_t seed) {
  const auto stages = static_cast<std::size_t>(schedule.stages);
  const auto mbs = static_cast<std::size_t>(schedule.microbatches);
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<Vec> inputs(mbs), targets(mbs);
  for (std::size_t m = 0; m < mbs; ++m)
    for (int i = 0; i < kTokens * kHidden; ++i) {
      inputs[m].push_back(n(rng));
      targets[m].push_back(n(rng));
    }

  NumericCheck check;
  check.stages = schedule.stages;
  check.microbatches = schedule.microbatches;
  Model serial(schedule.stages, seed);
  check.loss_serial = run_serially(serial, stages, inputs, targets);

  // Pipelined: the schedule's ops in the executor's order.
  PipelinedRun piped(schedule.stages, seed, inputs, targets);
  for (const RunOp& ro : enqueue_order(schedule)) {
    const PipeOp& op = schedule.ops[static_cast<std::size_t>(ro.rank)][static_cast<std::size_t>(ro.index)];
    if (schedule.rank_of(op.work) != ro.rank)
      throw ScheduleDataflowError(fmt::format("rank {} ran stage {} of micro-batch {}, which rank {} holds", ro.rank, op.work.stage,
                                              op.work.mb, schedule.rank_of(op.work)));
    for (const OpPass& p : op_passes(op)) switch (p.pass) {
        case StagePass::forward: piped.forward(p.work); break;
        case StagePass::input_grad: piped.input_grad(p.work, op.kind == OpKind::backward_input ? 'b' : 'B'); break;
        case StagePass::weight_grad: piped.weight_grad(p.work); break;
      }
    ++check.ops;
  }
  piped.check_complete();
  check.loss_pipelined = piped.loss;
  check.max_gradient_difference = max_gradient_difference(piped.model, serial, stages);
  return check;
}

}  // namespace plumb
