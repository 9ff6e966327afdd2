#include "validate/run/bench_plan.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <set>
#include <tuple>

#include "models/costs/flops.hpp"
#include "models/memory/memory.hpp"
#include "models/costs/op_cost.hpp"

namespace plumb {

std::vector<BenchGemm> bench_gemms(const Job* job, bool sweep) {
  std::vector<BenchGemm> out;
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> seen;
  auto add = [&](double m, double n, double k, std::string what) {
    auto mm = std::llround(m), nn = std::llround(n), kk = std::llround(k);
    if (mm < 1 || nn < 1 || kk < 1 || !seen.insert({mm, nn, kk}).second) return;
    out.push_back({mm, nn, kk, std::move(what)});
  };
  if (job) {
    OpContext c = op_context(job->layout, job->training, job->cluster.gpu);
    static const char* passes[] = {"forward", "input gradient", "weight gradient"};
    for (const StagePlan& s : stage_plans(job->layout, job->model.mtp_depth)) {
      std::vector<LayerOp> ops;
      if (s.layers > 0) ops = layer_ops(job->model, s.first_layer, c);
      if (s.head)
        for (LayerOp& op : head_ops(job->model, c)) ops.push_back(std::move(op));
      for (const LayerOp& op : ops) {
        if (op.cls != OpClass::gemm) continue;
        for (int p = 0; p < 3; ++p) {
          GemmShape g = gemm_shape(op, p);
          add(g.m, g.n, g.k, fmt::format("stage {} {} ({})", s.index, op.name, passes[p]));
        }
      }
    }
  }
  if (sweep)
    for (std::int64_t s = 256; s <= 16384; s *= 2) add(static_cast<double>(s), static_cast<double>(s), static_cast<double>(s), "sweep");
  std::sort(out.begin(), out.end(), [](const BenchGemm& a, const BenchGemm& b) {
    double x = static_cast<double>(a.m) * static_cast<double>(a.n) * static_cast<double>(a.k);
    double y = static_cast<double>(b.m) * static_cast<double>(b.n) * static_cast<double>(b.k);
    return x != y ? x < y : std::tie(a.m, a.n, a.k) < std::tie(b.m, b.n, b.k);
  });
  return out;
}

std::vector<BenchAttention> bench_attention(const Job* job, bool sweep) {
  std::vector<BenchAttention> out;
  std::int64_t d_qk = 128, d_v = 128;
  if (job) {
    const AttentionSpec& a = job->model.attention;
    d_qk = a.qk_head_dim();
    d_v = a.out_head_dim();
    const kernels::AttentionCall call{job->layout.micro_batch * std::max<std::int64_t>(1, a.heads / job->layout.tp), job->training.seq_len, d_qk, d_v, true};
    if (call.supported()) out.push_back({call, "the scenario's"});
  }
  if (sweep && kernels::AttentionCall::supported_widths(d_qk, d_v))
    for (std::int64_t seq = 1024; seq <= 16384; seq *= 2) {
      const kernels::AttentionCall call{(std::int64_t{1} << 18) / seq, seq, d_qk, d_v, true};
      if (out.empty() || call.seq != out.front().call.seq || call.batch_heads != out.front().call.batch_heads) out.push_back({call, "sweep"});
    }
  return out;
}

Json measurements_json(const std::string& device, const std::string& driver, int clock_mhz, const std::string& date,
                       const std::vector<std::pair<BenchGemm, double>>& timed, const std::vector<MemoryMeasurement>& memory,
                       const std::optional<LaunchMeasurement>& launch, const std::vector<AttentionMeasurement>& attention) {
  Json rows = Json::array();
  for (const auto& [g, seconds] : timed)
    rows.push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"dtype", std::string(math_dtype_name(g.dtype))}, {"seconds", seconds}, {"what", g.what}});
  Json streams = Json::array();
  for (const MemoryMeasurement& mm : memory) {
    streams.push_back({{"kernel", mm.kernel}, {"bytes", mm.bytes}, {"seconds", mm.seconds}});
    if (mm.runs != 1) streams.back()["runs"] = mm.runs;
  }
  Json flash = Json::array();
  for (const AttentionMeasurement& a : attention)
    flash.push_back({{"batch_heads", std::llround(a.batch_heads)}, {"seq", std::llround(a.seq)}, {"d_qk", std::llround(a.d_qk)},
                     {"d_v", std::llround(a.d_v)}, {"causal", a.causal}, {"forward_seconds", a.forward_seconds},
                     {"backward_seconds", a.backward_seconds}, {"what", a.what}});
  Json doc = {{"plumb_measurements", 1},
          {"device", device},
          {"driver", driver},
          {"clock_mhz", clock_mhz},
          {"date", date},
          {"note", "plumb-validate bench: cuBLASLt TN GEMMs (bf16; fp8 e4m3 with per-tensor scales and bf16 output), fp32 "
                   "accumulation, median of repetitions after warm-up, rotating buffers twice L2, inputs never zero; memory: a "
                   "vectorised copy over buffers larger than L2, bytes read plus written; attention: plumb's flash kernel "
                   "(kernels/flash_attention), bf16, each pass's median"},
          {"gemm", rows},
          {"memory", streams}};
  if (!flash.empty()) doc["attention"] = flash;
  if (launch) doc["launch"] = {{"kernels", launch->kernels}, {"seconds_per_kernel", launch->seconds_per_kernel}};
  return doc;
}

}  // namespace plumb
