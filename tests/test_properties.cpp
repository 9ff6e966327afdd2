// Properties of the simulator over random valid scenarios (issue 27): a generator draws models,
// layouts, schedules, GPUs and fabrics within their documented ranges; each scenario must load or be
// refused cleanly, and every one that loads must keep the simulator's invariants. The cases are drawn
// from a fixed seed, so a failure names a reproducible scenario (printed in full). More cases:
// PLUMB_PROPERTY_CASES=5000 ./plumb_tests -tc="random*".
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include "cli/report/memory_report.hpp"
#include "cli/report/step_report.hpp"
#include "models/memory/memory.hpp"
#include "models/step/step_summary.hpp"
#include "sim/limits.hpp"

namespace fs = std::filesystem;
using namespace plumb;

namespace {

struct Draw {
  std::mt19937_64 rng;
  template <class T>
  T pick(std::initializer_list<T> options) {
    std::uniform_int_distribution<std::size_t> d(0, options.size() - 1);
    return *(options.begin() + static_cast<std::ptrdiff_t>(d(rng)));
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
};

// A scenario within the documented ranges (docs/scenarios.md), small enough to simulate in
// milliseconds: the layout's constraints are mostly kept, so most load; those that do not must be
// refused with a clean error.
Json random_scenario(Draw& d) {
  const std::int64_t heads = d.pick<std::int64_t>({8, 16, 32}), head_dim = d.pick<std::int64_t>({64, 128});
  const std::int64_t kv_heads = heads / d.pick<std::int64_t>({1, 2, 4, 8});
  const std::int64_t hidden = heads * head_dim, layers = d.pick<std::int64_t>({2, 4, 6, 8, 12});
  Json model = {{"name", "random"},
                {"hidden", hidden},
                {"layers", layers},
                {"vocab", d.pick<std::int64_t>({32000, 50257, 128256})},
                {"attention", kv_heads == heads ? Json{{"kind", "mha"}, {"heads", heads}}
                                                : Json{{"kind", "gqa"}, {"heads", heads}, {"kv_heads", kv_heads}}},
                {"mlp", {{"kind", d.pick<std::string>({"swiglu", "gelu"})}, {"ffn_hidden", hidden * d.pick<std::int64_t>({2, 3, 4})}}}};
  const bool moe = d.chance(0.3);
  const std::int64_t experts = d.pick<std::int64_t>({4, 8, 16});
  if (moe) {
    model["moe"] = {{"experts", experts}, {"top_k", d.pick<std::int64_t>({1, 2})}, {"expert_ffn_hidden", hidden * 2}};
    model["mlp"]["kind"] = "swiglu";
  }
  const auto [gpu, fabric] = d.pick<std::pair<const char*, const char*>>({{"a100-sxm-80gb", "selene-a100-hdr"},
                                                                          {"h100-sxm", "dgx-h100-ndr"},
                                                                          {"h800-sxm", "h800-deepseek"},
                                                                          {"h200-sxm", "dgx-h100-ndr"},
                                                                          {"b200", "dgx-b200-ndr"}});
  const std::int64_t tp = std::min(kv_heads, d.pick<std::int64_t>({1, 2, 4, 8}));
  const std::int64_t pp = d.pick<std::int64_t>({1, 2, 4});
  const std::int64_t gpus = d.pick<std::int64_t>({8, 16, 32});
  const std::int64_t dp = std::max<std::int64_t>(1, gpus / (tp * pp));
  const std::string schedule = pp == 1 ? "1f1b" : d.pick<std::string>({"gpipe", "1f1b", "interleaved", "zb-h1", "zb-v", "dualpipe", "dualpipev"});
  const std::int64_t micro_batch = d.pick<std::int64_t>({1, 2});
  const std::int64_t m = d.pick<std::int64_t>({1, 2, 4, 8, 16});
  Json parallel = {{"tp", tp}, {"pp", pp}, {"dp", dp}, {"schedule", schedule}, {"micro_batch", micro_batch},
                   {"zero", d.pick<std::int64_t>({0, 1, 2, 3})}, {"recompute", d.pick<std::string>({"none", "selective", "full"})}};
  if (schedule == "interleaved") parallel["vp"] = 2;
  if (moe) parallel["ep"] = std::min(dp, std::min(experts, d.pick<std::int64_t>({1, 2, 4})));
  if (pp > 1 && layers % pp != 0) parallel["split"] = "balanced";
  Json training = {{"seq_len", d.pick<std::int64_t>({1024, 2048, 4096})},
                   {"global_batch", m * micro_batch * dp},
                   {"precision", std::string(gpu) == "a100-sxm-80gb" ? "bf16" : d.pick<std::string>({"bf16", "fp8"})}};
  if (const std::string host = d.pick<std::string>({"", "", "5us", "50us", "500us"}); !host.empty()) training["host_overhead"] = host;
  return {{"name", "random scenario"},
          {"model", model},
          {"cluster", {{"gpu", gpu}, {"nodes", std::max<std::int64_t>(1, tp * pp * dp / 8)}, {"fabric", fabric}}},
          {"parallel", parallel},
          {"training", training}};
}

std::optional<Job> load(const Json& scenario, const fs::path& file) {
  std::ofstream(file) << scenario.dump(1);
  try {
    return load_scenario(file);
  } catch (const InputError&) {
  } catch (const std::invalid_argument&) {
  }
  return std::nullopt;
}

bool close(double a, double b, double relative) { return std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b)); }

}  // namespace

TEST_CASE("random valid scenarios: clean refusals, and the simulator's invariants on every one that loads") {
  const char* env = std::getenv("PLUMB_PROPERTY_CASES");
  const int cases = env ? std::atoi(env) : 300;
  Draw d{std::mt19937_64(20261125)};
  const fs::path file = fs::temp_directory_path() / ("plumb-property-" + std::to_string(getpid()) + ".json");
  int loaded = 0, simulated = 0, full_compared = 0;
  for (int i = 0; i < cases; ++i) {
    const Json scenario = random_scenario(d);
    INFO("case " << i << ": " << scenario.dump());
    std::optional<Job> job = load(scenario, file);
    if (!job) continue;
    ++loaded;
    // Memory: the report's parts sum to its total on every rank, and growing HBM never un-fits a layout.
    const MemoryPlan plan = plan_memory(*job);
    const Json memory = memory_report_json(*job, plan);  // kept: a loop over a temporary's member would dangle
    for (const Json& s : memory["stages"])
      CHECK(close(s["params_bytes"].get<double>() + s["grads_bytes"].get<double>() + s["optimizer_bytes"].get<double>() +
                      s["activations_bytes"].get<double>() + s["other_bytes"].get<double>(),
                  s["total_bytes"].get<double>(), 1e-12));
    Job bigger = *job;
    bigger.cluster.gpu.hbm_capacity *= 2;
    if (plan.fits()) CHECK(plan_memory(bigger).fits());
    StepCosts costs;
    std::optional<StepSimulation> sim, again;
    try {
      costs = step_costs(*job);
      sim = simulate_step(*job, costs);
      again = simulate_step(*job, costs);
    } catch (const std::invalid_argument&) {
      continue;  // a schedule this pipeline cannot run: refused cleanly
    } catch (const sim::LimitError&) {
      continue;
    }
    ++simulated;
    // Deterministic: the same report, byte for byte.
    const StepReport report = make_step_report(*job, *sim, costs);
    CHECK(step_report_json(*job, report).dump() == step_report_json(*job, make_step_report(*job, *again, costs)).dump());
    REQUIRE(std::isfinite(report.step_time));
    CHECK(report.step_time > 0);
    // Each rank's time closes: its compute, exposed communication and idle time make the step, and
    // neither its compute (the critical path's share on that rank) nor its bubble exceeds it.
    for (const RankStep& r : sim->ranks) {
      double exposed = 0;
      for (double e : r.exposed) exposed += e;
      CHECK(r.compute <= report.step_time * (1 + 1e-9));
      CHECK(close(r.compute + exposed + r.idle, report.step_time, 1e-6));
      CHECK(r.bubble_fraction >= 0);
      CHECK(r.bubble_fraction < 1);
    }
    // The host: no pass computes in less than its host takes to issue its kernels, and (in-order
    // schedules, whose op order does not follow the op times) a slower host never makes the step faster.
    for (const StageCost& st : costs.stages)
      for (const Pass* p : {&st.forward, &st.backward, &st.input_grad, &st.weight_grad})
        if (p->kernels > 0) CHECK(p->compute() >= p->host_issue * (1 - 1e-12));
    if (job->layout.schedule == ScheduleKind::one_f_one_b || job->layout.schedule == ScheduleKind::gpipe) {
      Job slower = *job;
      slower.training.host_overhead = 2 * job->training.host_overhead + 10e-6;
      const StepCosts slow_costs = step_costs(slower);
      CHECK(simulate_step(slower, slow_costs).step_time >= report.step_time * (1 - 1e-9));
    }
    // Throughput is tokens per step over the step time.
    CHECK(close(report.rates.tokens_per_s * report.step_time,
                static_cast<double>(job->training.global_batch * job->training.seq_len), 1e-9));
    // Symmetric and full-rank agree where every rank is alike (dense models: no sampled routing).
    if (!job->model.moe && job->layout.gpus() <= 32) {
      StepSimulation full = simulate_step(*job, costs, StepMode::full);
      ++full_compared;
      CHECK(close(full.step_time, sim->step_time, 1e-3));
    }
  }
  fs::remove(file);
  MESSAGE(cases << " random scenarios: " << loaded << " loaded, " << simulated << " simulated, " << full_compared << " also full-rank");
  // The generator keeps most layouts valid: a generator that only made refusals would test nothing.
  CHECK(loaded * 2 > cases);
  CHECK(simulated * 3 > cases);
}
