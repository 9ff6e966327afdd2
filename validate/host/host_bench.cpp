#include "validate/host/host_bench.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "models/costs/flops.hpp"
#include "validate/host/host_kernels.hpp"
#include "validate/host/host_pipeline_device.hpp"
#include "validate/host/host_rank.hpp"
#include "validate/run/bench_plan.hpp"

namespace plumb {
namespace {

constexpr double kGiga = 1e9;

// The median thread CPU time of `reps` runs of f after one warm-up.
template <class F>
double median_seconds(int reps, F f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double t0 = host::thread_cpu_seconds();
    f();
    t.push_back(host::thread_cpu_seconds() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The memory-bound kernels `plumb-validate run --backend host` runs for the scenario (its default
// shrunk plan: norms, SwiGLU, gathers and streaming passes), each distinct one timed on the rank that
// runs it, with the bytes plumb prices it at. A scenario the host cannot run adds none, said on `progress`.
void time_memory_kernels(const Job& job, const GpuSpec& core, int reps, std::vector<MemoryMeasurement>& memory, std::ostream& progress) {
  static const char* passes[] = {"forward", "input gradient", "weight gradient"};
  Job full = job;
  full.cluster.gpu = core;
  VirtualRunOptions o;
  o.stage_per_profile = true;
  std::optional<VirtualRun> plan;
  try {
    plan = plan_virtual_run(full, o);
  } catch (const InputError& e) {
    progress << "memory-bound kernels not timed: the host backend cannot run the scenario (" << e.what() << ")\n";
    return;
  }
  // Each distinct kernel (kind, pass, shape, bytes) once, with how often a step runs it and the rank that does.
  using Key = std::tuple<int, int, std::int64_t, std::int64_t, double>;
  std::map<Key, std::pair<const KernelStep*, int>> first;  // the kernel and its rank
  std::map<Key, double> runs;
  std::vector<Key> order;
  for (const RunOp& r : plan->order)
    for (const KernelStep* k : plan->kernels(plan->schedule.ops[static_cast<std::size_t>(r.rank)][static_cast<std::size_t>(r.index)])) {
      if (k->kind == KernelKind::gemm || k->kind == KernelKind::attention || k->bytes <= 0) continue;
      const Key key{static_cast<int>(k->kind), k->pass, k->rows, k->cols, k->bytes};
      if (first.emplace(key, std::pair{k, r.rank}).second) order.push_back(key);
      runs[key] += 1;
    }
  std::map<int, std::unique_ptr<HostRank>> ranks;
  for (const Key& key : order) {
    // Named copies, not a structured binding: clang before 16 cannot capture one in a lambda (the fuzz preset).
    const KernelStep* k = first.at(key).first;
    const int at = first.at(key).second;
    std::unique_ptr<HostRank>& rank = ranks[at];
    if (!rank) rank = std::make_unique<HostRank>(*plan, at);
    const double seconds = median_seconds(reps, [&] { rank->run(*k); });
    const std::string name = fmt::format("{} ({})", plan->op_names[static_cast<std::size_t>(k->op)], passes[k->pass]);
    progress << fmt::format("{}: {:.2f} GB/s of the bytes plumb prices, {:.0f} a step\n", name, k->bytes / seconds / kGiga, runs.at(key));
    memory.push_back({name, k->bytes, seconds, runs.at(key)});
  }
}

}  // namespace

Json host_bench(const Job* job, const HostBenchOptions& o, const std::optional<GpuSpec>& profile, const std::string& date,
                std::ostream& progress) {
  std::vector<BenchGemm> gemms = bench_gemms(job, false);
  if (o.sweep)
    for (std::int64_t s = 64; s <= 1024; s *= 2) gemms.push_back({s, s, s, "sweep", MathDtype::bf16});
  std::vector<std::pair<BenchGemm, double>> timed;
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const BenchGemm& g = gemms[i];
    const auto a = host::varied_floats(static_cast<std::size_t>(g.m * g.k), 0.1f), b = host::varied_floats(static_cast<std::size_t>(g.k * g.n), 0.2f);
    std::vector<float> c(static_cast<std::size_t>(g.m * g.n));
    const double seconds = median_seconds(o.reps, [&] { host::gemm({g.m, g.n, g.k, 1, false}, a.data(), b.data(), c.data()); });
    const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    progress << fmt::format("[{}/{}] {}×{}×{} {:.1f} GFLOP/s ({})\n", i + 1, gemms.size(), g.m, g.n, g.k, flops / seconds / kGiga, g.what);
    if (profile && flops / seconds > 1.02 * profile->peak_dense.at(MathDtype::bf16))
      throw std::runtime_error(fmt::format("a {}×{}×{} GEMM ran at {:.0f} GFLOP/s, above the {} peak: the timing is wrong", g.m, g.n, g.k,
                                           flops / seconds / kGiga, profile->name));
    timed.emplace_back(g, seconds);
  }
  std::vector<MemoryMeasurement> memory;
  for (std::size_t mib : {16, 64}) {
    const std::size_t elements = (mib << 20) / sizeof(std::uint16_t);
    std::vector<std::uint16_t> from(elements, 0x3f80), to(elements, 0);
    const double seconds = median_seconds(o.reps, [&] { std::copy(from.begin(), from.end(), to.begin()); });
    const double moved = 2.0 * static_cast<double>(mib << 20);
    progress << fmt::format("copy {} MiB: {:.1f} GB/s read + written\n", mib, moved / seconds / kGiga);
    if (profile && moved / seconds > 1.02 * profile->hbm_bandwidth)
      throw std::runtime_error(fmt::format("a copy ran at {:.1f} GB/s, above the {} bandwidth: the timing is wrong", moved / seconds / kGiga,
                                           profile->name));
    memory.push_back({"copy", moved, seconds});
  }
  if (job && profile) time_memory_kernels(*job, *profile, o.reps, memory, progress);
  std::vector<AttentionMeasurement> attention;
  if (o.attention)
    for (const BenchAttention& b : bench_attention(job, false)) {
      const kernels::AttentionCall& c = b.call;
      host::AttentionTensors t(c);
      const double forward = median_seconds(o.reps, [&] { host::attention_forward(c, t); });
      const double backward = median_seconds(o.reps, [&] { host::attention_backward(c, t); });
      const FlashAttentionFlops f = flash_attention_flops(static_cast<double>(c.batch_heads * c.seq), static_cast<double>(c.seq),
                                                          static_cast<double>(c.d_qk), static_cast<double>(c.d_v), c.causal);
      progress << fmt::format("attention {} heads × {} tokens ({}, {}): forward {:.1f}, backward {:.1f} GFLOP/s ({})\n", c.batch_heads,
                              c.seq, c.d_qk, c.d_v, f.forward / forward / kGiga, f.backward_executed() / backward / kGiga, b.what);
      attention.push_back({static_cast<double>(c.batch_heads), static_cast<double>(c.seq), static_cast<double>(c.d_qk),
                           static_cast<double>(c.d_v), c.causal, forward, backward, b.what});
    }
  // No launch row: the host backend's clock counts a kernel's body only, never the handing of it to its
  // thread, so there is no launch overhead to fit.
  return measurements_json(host_device_name(), host_software(), 0, date, timed, memory, std::nullopt, attention);
}

}  // namespace plumb
