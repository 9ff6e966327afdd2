// The host backend of plumb-validate: its kernels against float64 references, and the executor on it
// running every schedule's ops in the simulated order, each after what it waits for.
#include <doctest/doctest.h>

#include <cmath>
#include <fmt/format.h>
#include <random>
#include <vector>

#include "models/input/catalogue.hpp"
#include "models/scenario/job.hpp"
#include "models/schedules/registry.hpp"
#include "validate/calibrate/device_profile.hpp"
#include "validate/execute/executor.hpp"
#include "validate/host/host_kernels.hpp"
#include "validate/host/host_pipeline_device.hpp"
#include "validate/run/compare.hpp"

using namespace plumb;

namespace {

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

double relative_error(const std::vector<double>& ref, const std::vector<float>& got) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += (ref[i] - got[i]) * (ref[i] - got[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

// Softmax attention of one head in float64: O, and dQ, dK, dV from dO (causal).
struct Reference {
  std::vector<double> o, dq, dk, dv;
};
Reference attention_reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& dout, std::int64_t s, std::int64_t d, std::size_t at) {
  Reference r{std::vector<double>(static_cast<std::size_t>(s * d)), std::vector<double>(static_cast<std::size_t>(s * d)),
              std::vector<double>(static_cast<std::size_t>(s * d)), std::vector<double>(static_cast<std::size_t>(s * d))};
  const double scale = 1 / std::sqrt(static_cast<double>(d));
  auto Q = [&](std::int64_t i, std::int64_t c) { return static_cast<double>(q[at + static_cast<std::size_t>(i * d + c)]); };
  auto K = [&](std::int64_t i, std::int64_t c) { return static_cast<double>(k[at + static_cast<std::size_t>(i * d + c)]); };
  auto V = [&](std::int64_t i, std::int64_t c) { return static_cast<double>(v[at + static_cast<std::size_t>(i * d + c)]); };
  auto dO = [&](std::int64_t i, std::int64_t c) { return static_cast<double>(dout[at + static_cast<std::size_t>(i * d + c)]); };
  for (std::int64_t i = 0; i < s; ++i) {
    std::vector<double> p(static_cast<std::size_t>(i + 1));
    double top = -1e300, sum = 0;
    for (std::int64_t j = 0; j <= i; ++j) {
      double x = 0;
      for (std::int64_t c = 0; c < d; ++c) x += Q(i, c) * K(j, c);
      p[static_cast<std::size_t>(j)] = x * scale;
      top = std::max(top, x * scale);
    }
    for (double& x : p) sum += (x = std::exp(x - top));
    for (double& x : p) x /= sum;
    std::vector<double> dp(p.size());
    double dot = 0;  // Σ_j p_j·dp_j
    for (std::int64_t j = 0; j <= i; ++j) {
      for (std::int64_t c = 0; c < d; ++c) {
        r.o[static_cast<std::size_t>(i * d + c)] += p[static_cast<std::size_t>(j)] * V(j, c);
        dp[static_cast<std::size_t>(j)] += dO(i, c) * V(j, c);
        r.dv[static_cast<std::size_t>(j * d + c)] += p[static_cast<std::size_t>(j)] * dO(i, c);
      }
      dot += p[static_cast<std::size_t>(j)] * dp[static_cast<std::size_t>(j)];
    }
    for (std::int64_t j = 0; j <= i; ++j) {
      const double ds = p[static_cast<std::size_t>(j)] * (dp[static_cast<std::size_t>(j)] - dot) * scale;
      for (std::int64_t c = 0; c < d; ++c) {
        r.dq[static_cast<std::size_t>(i * d + c)] += ds * K(j, c);
        r.dk[static_cast<std::size_t>(j * d + c)] += ds * Q(i, c);
      }
    }
  }
  return r;
}

// The job the host loop runs (scenarios/host-loop-small.json), shrunk further so that a debug build
// runs every schedule in seconds.
Job tiny_host_job(const std::string& schedule) {
  Job full = load_scenario(data_dir() / "scenarios/host-loop-small.json",
                           {"model.hidden=128", "model.mlp.ffn_hidden=256", "model.attention.heads=2", "model.attention.kv_heads=2",
                            "training.seq_len=64", "model.vocab=256", "parallel.schedule=" + schedule,
                            std::string("parallel.vp=") + (schedule == "interleaved" ? "2" : "1")});
  full.cluster.gpu = *bundled_gpu_profile(host_device_name());
  return full;
}

}  // namespace

TEST_CASE("host kernels: bf16 rounding, GEMM and flash attention against float64") {
  CHECK(host::to_bf16(1.0f) == 0x3f80);
  CHECK(host::from_bf16(0x3f80) == 1.0f);
  CHECK(host::to_bf16(1.0f + 1.0f / 256) == 0x3f80);      // halfway: ties to the even 1.0
  CHECK(host::to_bf16(1.0f + 3.0f / 256) == 0x3f82);      // halfway above an odd mantissa: up
  CHECK(host::from_bf16(host::to_bf16(-3.140625f)) == -3.140625f);  // representable: exact

  const kernels::GemmCall g{48, 40, 72, 3, false};
  const auto a = random_floats(static_cast<std::size_t>(g.m * g.k * g.batch), 1), b = random_floats(static_cast<std::size_t>(g.k * g.n * g.batch), 2);
  std::vector<float> c(static_cast<std::size_t>(g.m * g.n * g.batch), NAN);
  host::gemm(g, a.data(), b.data(), c.data());
  std::vector<double> ref(c.size());
  for (std::int64_t x = 0; x < g.batch; ++x)
    for (std::int64_t i = 0; i < g.m; ++i)
      for (std::int64_t j = 0; j < g.n; ++j)
        for (std::int64_t l = 0; l < g.k; ++l)  // column-major: A(i, l) at i + l·m
          ref[static_cast<std::size_t>(x * g.m * g.n + j * g.m + i)] +=
              static_cast<double>(a[static_cast<std::size_t>(x * g.m * g.k + l * g.m + i)]) * b[static_cast<std::size_t>(x * g.k * g.n + j * g.k + l)];
  CHECK(relative_error(ref, c) < 1e-6);

  // Two heads of 150 tokens (two whole 64-query blocks and a partial one), width 64, causal.
  const kernels::AttentionCall call{2, 150, 64, 64, true};
  host::AttentionTensors t(call);
  t.q = random_floats(t.q.size(), 3);
  t.k = random_floats(t.k.size(), 4);
  t.v = random_floats(t.v.size(), 5);
  t.dout = random_floats(t.dout.size(), 6);
  host::attention_forward(call, t);
  host::attention_backward(call, t);
  for (std::int64_t h = 0; h < call.batch_heads; ++h) {
    const std::size_t at = static_cast<std::size_t>(h * call.seq * call.d_qk), n = static_cast<std::size_t>(call.seq * call.d_qk);
    const Reference r = attention_reference(t.q, t.k, t.v, t.dout, call.seq, call.d_qk, at);
    auto head = [&](const std::vector<float>& x) { return std::vector<float>(x.begin() + static_cast<std::ptrdiff_t>(at), x.begin() + static_cast<std::ptrdiff_t>(at + n)); };
    CHECK(relative_error(r.o, head(t.o)) < 1e-5);
    CHECK(relative_error(r.dq, head(t.dq)) < 1e-5);
    CHECK(relative_error(r.dk, head(t.dk)) < 1e-5);
    CHECK(relative_error(r.dv, head(t.dv)) < 1e-5);
  }
}

TEST_CASE("host kernels: RMSNorm and SwiGLU forward and backward against float64, gather exact") {
  const std::int64_t rows = 5, cols = 96;
  auto bf = [](const std::vector<float>& f) {
    std::vector<std::uint16_t> v(f.size());
    for (std::size_t i = 0; i < f.size(); ++i) v[i] = host::to_bf16(f[i]);
    return v;
  };
  auto back = [](const std::vector<std::uint16_t>& v) {
    std::vector<float> f(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) f[i] = host::from_bf16(v[i]);
    return f;
  };
  const auto x = bf(random_floats(rows * cols, 7)), w = bf(random_floats(cols, 8)), dy = bf(random_floats(rows * cols, 9));
  std::vector<std::uint16_t> y(x.size()), dx(x.size());
  std::vector<float> rstd(rows);
  host::rmsnorm_forward(x.data(), w.data(), y.data(), rstd.data(), rows, cols);
  host::rmsnorm_backward(x.data(), w.data(), rstd.data(), dy.data(), dx.data(), rows, cols);
  std::vector<double> y_ref(x.size()), dx_ref(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double ss = 0, dot = 0;
    for (std::int64_t i = 0; i < cols; ++i) ss += std::pow(host::from_bf16(x[static_cast<std::size_t>(r * cols + i)]), 2);
    const double inv = 1 / std::sqrt(ss / cols + 1e-6);
    for (std::int64_t i = 0; i < cols; ++i) {
      const auto at = static_cast<std::size_t>(r * cols + i);
      y_ref[at] = host::from_bf16(x[at]) * inv * host::from_bf16(w[static_cast<std::size_t>(i)]);
      dot += host::from_bf16(dy[at]) * host::from_bf16(w[static_cast<std::size_t>(i)]) * host::from_bf16(x[at]);
    }
    for (std::int64_t i = 0; i < cols; ++i) {  // d/dx of x·inv·w: w·dy·inv − x·inv³·Σ(dy·w·x)/cols
      const auto at = static_cast<std::size_t>(r * cols + i);
      dx_ref[at] = host::from_bf16(dy[at]) * host::from_bf16(w[static_cast<std::size_t>(i)]) * inv - host::from_bf16(x[at]) * dot * inv * inv * inv / cols;
    }
  }
  CHECK(relative_error(y_ref, back(y)) < 1e-2);  // bf16 outputs: 2^-9 relative rounding
  CHECK(relative_error(dx_ref, back(dx)) < 1e-2);

  const auto in = bf(random_floats(rows * 2 * cols, 10));
  std::vector<std::uint16_t> out(static_cast<std::size_t>(rows * cols)), din(in.size());
  host::swiglu_forward(in.data(), out.data(), rows, cols);
  host::swiglu_backward(in.data(), dy.data(), din.data(), rows, cols);
  std::vector<double> out_ref(out.size()), din_ref(in.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < cols; ++i) {
      const double g = host::from_bf16(in[static_cast<std::size_t>(r * 2 * cols + i)]), u = host::from_bf16(in[static_cast<std::size_t>(r * 2 * cols + cols + i)]);
      const double d = host::from_bf16(dy[static_cast<std::size_t>(r * cols + i)]), sig = 1 / (1 + std::exp(-g));
      out_ref[static_cast<std::size_t>(r * cols + i)] = g * sig * u;
      din_ref[static_cast<std::size_t>(r * 2 * cols + i)] = d * u * (sig + g * sig * (1 - sig));
      din_ref[static_cast<std::size_t>(r * 2 * cols + cols + i)] = d * g * sig;
    }
  CHECK(relative_error(out_ref, back(out)) < 1e-2);
  CHECK(relative_error(din_ref, back(din)) < 1e-2);

  const std::vector<std::int32_t> index = gather_index(rows);
  std::vector<std::uint16_t> gathered(x.size());
  host::gather_rows(x.data(), index.data(), gathered.data(), rows, cols);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < cols; ++i)
      CHECK(gathered[static_cast<std::size_t>(r * cols + i)] == x[static_cast<std::size_t>(index[static_cast<std::size_t>(r)] * cols + i)]);
}

TEST_CASE("the host backend runs every schedule's ops in the simulated order, each after what it waits for") {
  for (const std::string schedule : {"gpipe", "1f1b", "interleaved", "zb-h1", "dualpipev"}) {
    CAPTURE(schedule);
    VirtualRunOptions o;
    o.stage_per_profile = true;
    const VirtualRun plan = plan_virtual_run(tiny_host_job(schedule), o);
    std::unique_ptr<PipelineDevice> device = make_host_pipeline_device(plan);
    const MeasuredRun m = execute_virtual_run(plan, *device, {.warmup_steps = 0, .timed_steps = 1, .kernel_times = true});
    REQUIRE(m.timeline.size() == plan.order.size());
    // Ops of a rank one after another, in the schedule's order; a waiting op after what it waits for.
    for (std::size_t i = 0; i < m.timeline.size(); ++i) {
      const MeasuredOp& op = m.timeline[i];
      CHECK(op.end >= op.start);
      for (std::int32_t w : plan.order[i].waits) CHECK(op.start >= m.timeline[static_cast<std::size_t>(w)].end);
      for (std::size_t j = 0; j < m.timeline.size(); ++j)
        if (m.timeline[j].rank == op.rank && m.timeline[j].index == op.index + 1) CHECK(m.timeline[j].start >= op.end);
    }
    double last = 0;
    for (const MeasuredOp& op : m.timeline) last = std::max(last, op.end);
    CHECK(m.step_seconds.at(0) >= last);  // the step ends with each rank's optimizer pass
    // Every kernel of the plan was timed: its op and pass have a time.
    CHECK(!m.op_times.empty());
    for (const MeasuredOpTime& t : m.op_times) CHECK(t.seconds >= 0);
  }
}
