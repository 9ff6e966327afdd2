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
  // Serial: each micro-batch forward through every stage, then backward.
  Model serial(schedule.stages, seed);
  for (std::size_t m = 0; m < mbs; ++m) {
    std::vector<Stash> st(stages);
    Vec h = inputs[m];
    for (std::size_t s = 0; s < stages; ++s) h = serial.forward(s, st[s], h);
    Vec d;
    check.loss_serial += half_squared_error(h, targets[m], &d);
    for (std::size_t s = stages; s-- > 0;) {
      d = serial.input_grad(s, st[s], d);
      serial.weight_grad(s, st[s]);
    }
  }

  // Pipelined: the schedule's ops in the executor's order; activations and gradients handed over per
  // (stage, micro-batch).
  Model piped(schedule.stages, seed);
  std::vector<std::vector<Stash>> stash(stages, std::vector<Stash>(mbs));
  std::map<std::pair<std::size_t, std::size_t>, Vec> activation, gradient;  // input of (stage, mb); gradient of its output
  auto label = [](char kind, StageWork w) { return fmt::format("{}{} s{}", kind, w.mb, w.stage); };
  auto take = [](std::map<std::pair<std::size_t, std::size_t>, Vec>& box, std::size_t s, std::size_t m, const std::string& who,
                 const char* what) {
    auto it = box.find({s, m});
    if (it == box.end()) throw ScheduleDataflowError(fmt::format("{} ran before {}", who, what));
    Vec v = std::move(it->second);
    box.erase(it);
    return v;
  };
  auto forward = [&](StageWork w) {
    const auto s = static_cast<std::size_t>(w.stage), m = static_cast<std::size_t>(w.mb);
    Stash& st = stash[s][m];
    if (st.forward) throw ScheduleDataflowError(label('F', w) + " ran twice");
    Vec x = s == 0 ? inputs[m] : take(activation, s, m, label('F', w), "the previous stage's forward of its micro-batch");
    Vec y = piped.forward(s, st, x);
    st.forward = true;
    if (s + 1 < stages) activation[{s + 1, m}] = std::move(y);
    else {
      Vec dy;
      check.loss_pipelined += half_squared_error(y, targets[m], &dy);
      gradient[{s, m}] = std::move(dy);
    }
  };
  auto input_grad = [&](StageWork w, char kind) {
    const auto s = static_cast<std::size_t>(w.stage), m = static_cast<std::size_t>(w.mb);
    Stash& st = stash[s][m];
    if (!st.forward) throw ScheduleDataflowError(label(kind, w) + " ran before its own forward");
    if (st.input_grad) throw ScheduleDataflowError(label(kind, w) + " ran twice");
    Vec dy = take(gradient, s, m, label(kind, w), "the next stage's backward of its micro-batch");
    Vec dx = piped.input_grad(s, st, dy);
    st.input_grad = true;
    if (s > 0) gradient[{s - 1, m}] = std::move(dx);
  };
  auto weight_grad = [&](StageWork w) {
    Stash& st = stash[static_cast<std::size_t>(w.stage)][static_cast<std::size_t>(w.mb)];
    if (!st.input_grad) throw ScheduleDataflowError(label('W', w) + " ran before its input gradient");
    if (st.weight_grad) throw ScheduleDataflowError(label('W', w) + " ran twice");
    piped.weight_grad(static_cast<std::size_t>(w.stage), st);
    st.weight_grad = true;
  };
  for (const RunOp& ro : enqueue_order(schedule)) {
    const PipeOp& op = schedule.ops[static_cast<std::size_t>(ro.rank)][static_cast<std::size_t>(ro.index)];
    if (schedule.rank_of(op.work.stage, op.work.mb) != ro.rank)
      throw ScheduleDataflowError(fmt::format("rank {} ran stage {} of micro-batch {}, which rank {} holds", ro.rank, op.work.stage,
                                              op.work.mb, schedule.rank_of(op.work.stage, op.work.mb)));
    for (const OpPass& p : op_passes(op)) switch (p.pass) {
        case StagePass::forward: forward(p.work); break;
        case StagePass::input_grad: input_grad(p.work, op.kind == OpKind::backward_input ? 'b' : 'B'); break;
        case StagePass::weight_grad: weight_grad(p.work); break;
      }
    ++check.ops;
  }
  for (std::size_t s = 0; s < stages; ++s)
    for (std::size_t m = 0; m < mbs; ++m)
      if (!stash[s][m].weight_grad)
        throw ScheduleDataflowError(fmt::format("stage {} of micro-batch {} never finished its backward", s, m));

  double largest = 0, diff = 0;
  for (std::size_t s = 0; s < stages; ++s)
    for (auto part : {&Weights::gate, &Weights::up, &Weights::down}) {
      const Vec &a = piped.grad[s].*part, &b = serial.grad[s].*part;
      for (std::size_t i = 0; i < a.size(); ++i) {
        largest = std::max(largest, std::abs(b[i]));
        diff = std::max(diff, std::abs(a[i] - b[i]));
      }
    }
  check.max_gradient_difference = largest > 0 ? diff / largest : diff;
  return check;
}

}  // namespace plumb
