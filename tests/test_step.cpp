// The training step: the discrete-event step, its analytic estimate, the report's figures and the
// published runs it is compared with.
#include <doctest/doctest.h>
#include <cmath>
#include <filesystem>
#include <map>
#include <fmt/format.h>

#include "models/input/catalogue.hpp"
#include "models/costs/collective.hpp"
#include "models/costs/flops.hpp"
#include "models/costs/op_cost.hpp"
#include "models/costs/step_costs.hpp"
#include "models/memory/memory.hpp"
#include "models/spec/param_count.hpp"
#include "cli/report/schedule_report.hpp"
#include "cli/report/step_report.hpp"
#include "step_fixtures.hpp"

using namespace plumb;
namespace fs = std::filesystem;

using namespace plumb::test;

namespace {

const std::vector<std::string> kBundled{"deepseek-v3-2048xh800.json", "gpt3-175b-megatron.json", "llama3-405b-16k-h100.json",
                                        "mixtral-8x7b-256xh100.json"};

}  // namespace

TEST_CASE("the analytic estimate is within 3% of the simulated step on every bundled scenario") {
  for (const std::string& name : kBundled) {
    INFO(name);
    Run r = run(scenario(name));
    CHECK(relative(r.report.estimate, r.report.step_time) < 0.03);
  }
}

TEST_CASE("the analytic estimate follows the simulation under ZeRO-2 and ZeRO-3's per-micro-batch traffic") {
  // The background reductions and gathers share the network port with the pass's own traffic and hold
  // SMs beside its compute. DeepSeek-V3's DualPipe is left out: its pairs' closed form misses by ~12%.
  for (const char* name : {"gpt3-175b-megatron.json", "llama3-405b-16k-h100.json", "mixtral-8x7b-256xh100.json"})
    for (const char* zero : {"parallel.zero=2", "parallel.zero=3"}) {
      INFO(name << " " << zero);
      Run r = run(scenario(name, {zero}));
      CHECK(relative(r.report.estimate, r.report.step_time) < 0.03);
    }
}

TEST_CASE("the analytic estimate follows the simulation across schedules") {
  // DeepSeek-V3's costs (comm-heavy, unequal stages) under each schedule that has a closed form.
  // ZB-V is the known miss: its closed-form bubble, (p − 1)(F + B − 2W), assumes equal stages, and
  // DeepSeek's 32 half-stages are not (dense first layers; the head and MTP last); with the
  // all-to-alls inside F and B the automatic ordering leaves the middle ranks ~2 s idle against the
  // formula's 0.7 s, so the estimate ran 7% optimistic; and since the heuristic counts each deferred W's
  // stash against ZB-V's limit of 2p chunks (DeepSeek's stash is 1.9 activation sets: its fp8 expert GEMMs'
  // inputs and output gradients), W's must run before memory allows the next forward: 16% (the planner
  // re-ranks its best by the DES).
  for (std::string schedule : {"1f1b", "gpipe", "zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipev"}) {
    INFO(schedule);
    Run r = run(scenario("deepseek-v3-2048xh800.json", {"parallel.schedule=" + schedule}));
    CHECK(relative(r.report.estimate, r.report.step_time) < (schedule == "zb-v" ? 0.17 : 0.03));
  }
}

TEST_CASE("each rank's step time is its compute, its exposed communication and its idle time") {
  for (const std::string& name : kBundled) {
    INFO(name);
    Run r = run(scenario(name));
    for (const RankStep& k : r.sim.ranks) {
      double sum = k.compute + k.idle;
      for (double e : k.exposed) sum += e;
      CHECK(relative(sum, r.sim.step_time) < 1e-9);
    }
  }
}

TEST_CASE("a rank computes its ops' compute, slowed only while communication holds SMs") {
  // Llama 3 405B: each rank's compute time is m × (F + B) compute of its stages plus the optimizer,
  // stretched by at most comm_sms / (sms − comm_sms) of the time communication ran beside it.
  Job job = scenario("llama3-405b-16k-h100.json");
  Run r = run(job);
  const auto m = static_cast<double>(job.microbatches());
  std::vector<double> comm(static_cast<std::size_t>(job.layout.pp), 0.0);
  for (std::size_t t = 0; t < r.sim.task_comm.size(); ++t)
    if (r.sim.task_comm[t] >= 0)
      comm[static_cast<std::size_t>(r.sim.task_gpu[t])] += static_cast<double>(r.sim.result.end[t] - r.sim.result.start[t]) * 1e-12;
  const double stretch = 20.0 / (132.0 - 20.0);
  for (std::int64_t rank = 0; rank < job.layout.pp; ++rank) {
    double expected = 0;
    for (std::int64_t st : stages_of_rank(job.layout.schedule, rank, job.layout.pp, job.layout.vp)) {
      const StageCost& c = r.costs.stages[static_cast<std::size_t>(st)];
      expected += m * (c.forward.compute() + c.backward.compute()) + c.optimizer;
    }
    INFO("rank " << rank);
    double compute = r.sim.ranks[static_cast<std::size_t>(rank)].compute;
    CHECK(compute >= expected * (1 - 1e-9));
    CHECK(compute <= expected + comm[static_cast<std::size_t>(rank)] * stretch);
  }
}

TEST_CASE("the timeline's peak memory per stage agrees with plumb memory") {
  // The bundled scenarios, and passes that end in a marker rather than a task (ZeRO-2/3 background
  // traffic, CP's ring exchange joined with the attention): activations are freed there too.
  std::vector<std::pair<std::string, std::vector<std::string>>> cases;
  for (const std::string& name : kBundled) cases.push_back({name, {}});
  cases.push_back({"mixtral-8x7b-256xh100.json", {"parallel.zero=2"}});
  cases.push_back({"mixtral-8x7b-256xh100.json", {"parallel.zero=3"}});
  cases.push_back({"llama3-405b-16k-h100.json", {"parallel.cp=2", "parallel.dp=64"}});
  for (const auto& [name, set] : cases) {
    INFO(name << " " << (set.empty() ? "" : set.front()));
    Job job = scenario(name, set);
    Run r = run(job);
    MemoryPlan plan = plan_memory(job);
    for (std::size_t rank = 0; rank < r.sim.ranks.size(); ++rank) {
      INFO("rank " << rank);
      CHECK(relative(r.sim.ranks[rank].peak_bytes, plan.ranks[rank].total_bytes()) < 0.01);
    }
    CHECK(r.report.fits == plan.fits());
  }
}

TEST_CASE("throughput, MFU and training totals follow from the step time") {
  Job job = scenario("deepseek-v3-2048xh800.json");
  Run r = run(job);
  const StepReport& p = r.report;
  double tokens = 15360.0 * 4096.0;
  CHECK(relative(p.rates.tokens_per_s, tokens / p.step_time) < 1e-12);
  CHECK(relative(p.rates.tokens_per_s_per_gpu * 2048, p.rates.tokens_per_s) < 1e-12);
  CHECK(relative(p.rates.mfu, model_flops_per_token(job.model, 4096) * p.rates.tokens_per_s_per_gpu / 989.4e12) < 1e-9);
  CHECK(relative(p.training.steps, 14.8e12 / tokens) < 1e-12);
  CHECK(relative(p.training.gpu_hours, p.training.steps * p.step_time * 2048 / 3600) < 1e-12);
  CHECK(relative(p.training.cost_usd, 2.0 * p.training.gpu_hours) < 1e-12);
  CHECK(relative(p.training.days * 24 * 2048, p.training.gpu_hours) < 1e-12);
}

TEST_CASE("with no communication inside ops, 1F1B and GPipe take the textbook pipeline time") {
  // Llama 3 8B, PP4 × DP2 on one node, no TP: the passes are pure compute; the step is the first
  // micro-batch through every stage and back, the slowest stage's (m − 1) further F + B, the 2(p − 1)
  // sends, the first parameter bucket before it and rank 0's last gradient reduction and optimizer after.
  // Also split evenly (8 layers a stage), where the head's stage is the slowest in F, in B and in F + B
  // alike: 1F1B exact.
  for (auto [schedule, split] : {std::pair<std::string, std::string>{"1f1b", ""}, {"gpipe", ""}, {"1f1b", "even"}}) {
    INFO(schedule << " " << split);
    std::vector<std::string> sets{"model=llama3-8b", "cluster.nodes=1", "parallel.tp=1", "parallel.pp=4", "parallel.dp=2", "parallel.vp=1",
                                  "parallel.schedule=" + schedule, "training.global_batch=64"};
    if (!split.empty()) sets.push_back("parallel.split=" + split);
    Job job = scenario("llama3-405b-16k-h100.json", sets);
    Run r = run(job);
    const auto m = static_cast<double>(job.microbatches());
    double sum = 0, worst = 0, worst_f = 0, worst_b = 0;
    for (const StageCost& c : r.costs.stages) {
      CHECK(c.forward.segments.size() == 1);  // one compute segment: nothing to wait for inside
      sum += c.forward.span() + c.backward.span();
      worst = std::max(worst, c.forward.span() + c.backward.span());
      worst_f = std::max(worst_f, c.forward.span());
      worst_b = std::max(worst_b, c.backward.span());
    }
    // 1F1B's steady state paces at the slowest stage's F + B; GPipe's two phases each at their own
    // slowest stage (the same stage only when one stage is slowest at both).
    if (schedule == "gpipe") worst = worst_f + worst_b;
    const StageCost& first = r.costs.stages.front();
    const double rest = 2 * 3 * first.p2p + first.param_gather / 8 + first.grad_sync + first.optimizer;
    const double expected = sum + (m - 1) * worst + rest;
    INFO("step " << r.sim.step_time << " s, textbook " << expected << " s");
    // 1F1B paces at the slowest F + B exactly when that stage is also the slowest in F and in B; where
    // one stage has the longest F and another the longest B (the head's stage: more forward, less
    // backward), the steady state stalls on both, and the step lies between the textbook time and the
    // one paced at the longest F plus the longest B.
    bool one_bottleneck = false;
    for (const StageCost& c : r.costs.stages)
      one_bottleneck |= c.forward.span() == worst_f && c.backward.span() == worst_b;
    if (!split.empty()) CHECK(one_bottleneck);
    if (schedule == "gpipe" || one_bottleneck) {
      CHECK(relative(r.sim.step_time, expected) < 1e-3);
    } else {
      CHECK(r.sim.step_time >= expected * (1 - 1e-3));
      CHECK(r.sim.step_time <= (sum + (m - 1) * (worst_f + worst_b) + rest) * (1 + 1e-3));
    }
  }
}

TEST_CASE("MoE load imbalance slows the experts and their all-to-alls by the max/mean factor") {
  Job balanced = scenario("deepseek-v3-2048xh800.json");
  Job skewed = scenario("deepseek-v3-2048xh800.json", {"training.moe_imbalance=1.5"});
  StepCosts a = step_costs(balanced), b = step_costs(skewed);
  const StageCost &x = a.stages[5], &y = b.stages[5];  // four MoE layers
  CHECK(relative(y.forward.comm(CommKind::ep), 1.5 * x.forward.comm(CommKind::ep)) < 1e-9);
  CHECK(y.forward.compute() > x.forward.compute());
  CHECK(simulate_step(skewed, b).step_time > simulate_step(balanced, a).step_time);
  // Sampled routing: uniform top-8 of 256 experts over 64 ranks of 4 experts, 4096 tokens each:
  // each rank expects 32768 token copies, with a binomial spread of about 180, so the busiest of 64
  // sits a few per cent above the mean; the same seed gives the same draw.
  double s1 = sampled_moe_imbalance(64, 256, 8, 4096, 7), s2 = sampled_moe_imbalance(64, 256, 8, 4096, 7);
  CHECK(s1 == s2);
  CHECK(s1 > 1.005);
  CHECK(s1 < 1.05);
  CHECK(sampled_moe_imbalance(1, 256, 8, 4096, 7) == 1.0);
}

TEST_CASE("DualPipe hides the all-to-all of one chunk under the other's compute") {
  Job job = scenario("deepseek-v3-2048xh800.json");
  StepCosts c = step_costs(job);
  const StageCost& s = c.stages[5];
  double serial = s.forward.span() + s.backward.span();
  double longest = std::max(s.forward.compute() + s.backward.compute(),
                            s.forward.comm(CommKind::ep) + s.backward.comm(CommKind::ep));
  CHECK(s.fb_overlap < serial);
  CHECK(s.fb_overlap >= longest);
}

TEST_CASE("each rank's step splits into what its schedule ran, every op once, and nothing else") {
  for (const std::string& name : kBundled) {
    INFO(name);
    Run r = run(scenario(name));
    REQUIRE(r.report.phases.size() == r.sim.schedule.ops.size());
    for (std::size_t rank = 0; rank < r.report.phases.size(); ++rank) {
      INFO("rank " << rank);
      const RankPhases& p = r.report.phases[rank];
      CHECK(p.total() == doctest::Approx(r.report.step_time).epsilon(1e-9));
      std::array<std::int64_t, RankPhases::kKinds> expected{};
      for (const PipeOp& op : r.sim.schedule.ops[rank]) ++expected[static_cast<std::size_t>(op.kind)];
      CHECK(p.count == expected);
      // Time with no op of the schedule running is at least the rank's idle time (idle has neither
      // compute nor communication; between ops a rank may still finish a send or a gradient bucket).
      CHECK(p.before + p.waiting + p.after >= r.report.ranks[rank].idle - 1e-9);
    }
  }
}

TEST_CASE("every op of the schedule is placed on the step's timeline in its rank's order") {
  Job job = scenario("deepseek-v3-2048xh800.json");
  StepCosts costs = step_costs(job);
  StepSimulation sim = simulate_step(job, costs);
  auto rows = placed_step_ops(sim);
  REQUIRE(rows.size() == 16);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    INFO("rank " << r);
    CHECK(rows[r].size() == sim.schedule.ops[r].size());
    for (std::size_t i = 0; i < rows[r].size(); ++i) {
      CHECK(rows[r][i].start < rows[r][i].end);
      CHECK(rows[r][i].end <= sim.step_time);
      if (i > 0) CHECK(rows[r][i].start >= rows[r][i - 1].start);  // one compute stream runs them in order
    }
  }
  // Drawn, it is well-formed XML: DualPipe's "F&B" labels have their ampersand escaped.
  std::string svg = schedule_svg(sim.schedule, rows, sim.step_time, "DeepSeek-V3 & DualPipe");
  std::size_t escaped = 0;
  for (std::size_t at = svg.find('&'); at != std::string::npos; at = svg.find('&', at + 1)) {
    CHECK(svg.compare(at, 5, "&amp;") == 0);
    ++escaped;
  }
  CHECK(escaped > 1);
}

TEST_CASE("context parallelism and ZeRO-3 add their communication where it belongs") {
  // CP: the ring exchange runs beside each layer's attention, forward and (twice the bytes) backward.
  Job cp = scenario("llama3-405b-16k-h100.json", {"parallel.cp=2", "parallel.dp=64"});
  StepCosts c = step_costs(cp);
  const StageCost& s = c.stages[1];
  CHECK(s.forward.comm(CommKind::cp) > 0);
  CHECK(relative(s.input_grad.comm(CommKind::cp), 2 * s.forward.comm(CommKind::cp)) < 1e-9);
  Run r = run(cp);
  CHECK(relative(r.report.estimate, r.report.step_time) < 0.03);
  // ZeRO-3: no once-per-step reduction or gather; every pass gathers in the background instead.
  Job z3 = scenario("llama3-405b-16k-h100.json", {"parallel.zero=3"});
  StepCosts d = step_costs(z3);
  CHECK(d.stages[1].grad_sync == 0);
  CHECK(d.stages[1].param_gather == 0);
  CHECK(d.stages[1].forward.background > 0);
  CHECK(d.stages[1].backward.background > d.stages[1].forward.background);  // gather and scatter
  CHECK(simulate_step(z3, d).step_time > 0);
  // FSDP2 unpacks each gather on the compute stream: the stage's bf16 weights read and written once per
  // pass that gathers them, beyond what ZeRO-2 computes.
  const StepCosts z2 = step_costs(scenario("llama3-405b-16k-h100.json", {"parallel.zero=2"}));
  const StageParams held = stage_params(z3)[1];
  const GpuSpec& gpu = z3.cluster.gpu;
  const double copy_out = (held.dense + held.expert) * 2.0 * 2.0 / (gpu.hbm_bandwidth * gpu.hbm_efficiency);
  CHECK(d.stages[1].forward.compute() - z2.stages[1].forward.compute() == doctest::Approx(copy_out));
  // And copies each backward's 16-bit gradients into its reduce-scatter's input, of the reduce dtype
  // (this scenario's bf16: 2 bytes read, 2 written; torchtitan's fp32: 4 written), before the compute
  // stream goes on: in the backward, and in a split schedule's W, which makes the gradients and gathers
  // nothing.
  CHECK(z3.training.optimizer.grads == 2.0);
  const double copy_in = (held.dense + held.expert) * (2.0 + 2.0) / (gpu.hbm_bandwidth * gpu.hbm_efficiency);
  CHECK(d.stages[1].backward.compute() - z2.stages[1].backward.compute() == doctest::Approx(copy_out + copy_in));
  CHECK(d.stages[1].weight_grad.compute() - z2.stages[1].weight_grad.compute() == doctest::Approx(copy_in));
  CHECK(d.stages[1].input_grad.compute() - z2.stages[1].input_grad.compute() == doctest::Approx(copy_out));
  // torchtitan reduces in fp32 (mixed_precision_reduce): 6 bytes a gradient.
  const Job tt3 = scenario("published/torchtitan-h100-8b-fsdp8-sac.json");
  const Job tt2 = scenario("published/torchtitan-h100-8b-fsdp8-sac.json", {"parallel.zero=2"});
  CHECK(tt3.training.optimizer.grads == 4.0);
  const StageParams tt_held = stage_params(tt3)[0];
  const double tt_copy_in = (tt_held.dense + tt_held.expert) * (2.0 + 4.0) / (tt3.cluster.gpu.hbm_bandwidth * tt3.cluster.gpu.hbm_efficiency);
  CHECK(step_costs(tt3).stages[0].weight_grad.compute() - step_costs(tt2).stages[0].weight_grad.compute() == doctest::Approx(tt_copy_in));
}

TEST_CASE("ZeRO-2 reduce-scatters every micro-batch's gradients; ZeRO-1 the accumulated ones once") {
  // DeepSpeed keeps only a rank's shard of the accumulated gradients under stage 2, so it reduces
  // after every backward (deepspeedai/DeepSpeed#2252): the same bytes as ZeRO-1's one reduction, m times.
  Job z1 = scenario("deepseek-v3-2048xh800.json");
  Job z2 = scenario("deepseek-v3-2048xh800.json", {"parallel.zero=2"});
  StepCosts a = step_costs(z1), b = step_costs(z2);
  const StageCost &one = a.stages[5], &two = b.stages[5];
  CHECK(one.grad_sync > 0);
  CHECK(one.backward.background == 0);
  CHECK(two.grad_sync == 0);
  CHECK(relative(two.backward.background, one.grad_sync) < 1e-9);  // per micro-batch
  CHECK(relative(two.param_gather, one.param_gather) < 1e-9);      // updated weights, once per step
  CHECK(two.forward.background == 0);
  // 120 micro-batches: the per-micro-batch reductions share the NIC with the all-to-alls.
  CHECK(simulate_step(z2, b).step_time > simulate_step(z1, a).step_time);
  // Zero-bubble schedules make the weight gradients in their W half: the reduction rides there.
  StepCosts zb = step_costs(scenario("deepseek-v3-2048xh800.json", {"parallel.zero=2", "parallel.schedule=zb-h1"}));
  CHECK(zb.stages[5].weight_grad.background > 0);
  CHECK(zb.stages[5].input_grad.background == 0);
  // ZeRO-3 the same, and gathers the weights for every pass that uses them (not W).
  StepCosts z3 = step_costs(scenario("deepseek-v3-2048xh800.json", {"parallel.zero=3", "parallel.schedule=zb-h1"}));
  CHECK(z3.stages[5].input_grad.background > 0);
  CHECK(relative(z3.stages[5].weight_grad.background, zb.stages[5].weight_grad.background) < 1e-9);
}

TEST_CASE("a pass's background reduction and its own all-to-all share the network port in the estimate") {
  Pass p;
  p.add_compute(0.2);
  p.add_comm(0.5, CommKind::ep);
  p.background = 1.0;  // ZeRO-2's reduce-scatter of this micro-batch's gradients
  std::array<bool, kCommKinds> network{};
  CHECK(p.span() == doctest::Approx(1.0));
  CHECK(p.span(network) == doctest::Approx(1.0));  // nothing crosses nodes: no sharing
  network[static_cast<std::size_t>(CommKind::ep)] = network[static_cast<std::size_t>(CommKind::dp)] = true;
  CHECK(p.port_load(network) == doctest::Approx(1.5));
  CHECK(p.span(network) == doctest::Approx(1.5));
  Pass q = p;
  CHECK(interleaved_span(p, q, network) == doctest::Approx(3.0));  // DualPipe's pair: both through one port
}

TEST_CASE("failures: Llama 3's interruption rate, Young's interval and the goodput Meta reports") {
  Job job = scenario("llama3-405b-16k-h100.json");
  Resilience f = resilience_of(count_params(job.model).total, job.layout.gpus(), job.training);
  // 419 unexpected interruptions in 54 days on 16,384 GPUs: one every 54 · 24 / 419 = 3.09 hours.
  CHECK(relative(f.job_mtbf_seconds, 54.0 * 24 * 3600 / 419) < 1e-9);
  CHECK(relative(f.interval_seconds, std::sqrt(2 * f.checkpoint_seconds * f.job_mtbf_seconds)) < 1e-12);
  // Young's interval minimises the waste: a little shorter or longer loses more.
  auto waste = [&](double tau) { return f.checkpoint_seconds / tau + (tau / 2 + f.restart_seconds) / f.job_mtbf_seconds; };
  CHECK(waste(f.interval_seconds) < waste(0.8 * f.interval_seconds));
  CHECK(waste(f.interval_seconds) < waste(1.25 * f.interval_seconds));
  CHECK(relative(1 - f.goodput, waste(f.interval_seconds)) < 1e-12);
  // Meta: "more than 90% effective training time" at this scale.
  CHECK(f.goodput > 0.90);
  CHECK(f.goodput < 0.95);
  // Fewer GPUs fail less often; no failures means no loss.
  Job small = scenario("deepseek-v3-2048xh800.json");
  CHECK(resilience_of(count_params(small.model).total, small.layout.gpus(), small.training).goodput > f.goodput);
  Job never = scenario("deepseek-v3-2048xh800.json", {"training.failures_per_gpu_hour=0"});
  CHECK(resilience_of(count_params(never.model).total, never.layout.gpus(), never.training).goodput == 1.0);
  StepReport r = run(small).report;
  CHECK(relative(r.training.days_with_failures * r.training.resilience.goodput, r.training.days) < 1e-12);
}

TEST_CASE("--full simulates every GPU with collectives as barriers and agrees with the symmetric step") {
  // Mixtral on 32 GPUs: PP4 × DP8 with EP8, so TP-free layers, EP all-to-alls over 8 GPUs and
  // gradient reductions over 8 data-parallel ranks, each a barrier in full mode.
  for (std::string routing : {"balanced", "sampled"}) {
    INFO(routing);
    Job job = scenario("mixtral-8x7b-256xh100.json",
                       {"cluster.nodes=4", "parallel.dp=8", "training.global_batch=64", "training.moe_imbalance=" + routing});
    StepCosts costs = step_costs(job);
    StepSimulation symmetric = simulate_step(job, costs), full = simulate_step(job, costs, StepMode::every_gpu);
    CHECK(full.machine.gpus().size() == 32);
    CHECK(symmetric.machine.gpus().size() == 4);
    std::size_t barriers = 0;
    for (sim::TaskId t = 0; t < full.graph.size(); ++t) barriers += full.graph.label(t) == "ep barrier";
    CHECK(barriers > 0);
    // Every peer runs the same costs (or, sampled, the all-to-alls wait for the busiest EP rank at
    // every MoE layer, as the symmetric step charges everyone): the same step.
    CHECK(relative(full.step_time, symmetric.step_time) < 1e-9);
    for (std::size_t r = 0; r < 4; ++r) {
      CHECK(relative(full.ranks[r].peak_bytes, symmetric.ranks[r].peak_bytes) < 1e-9);
      if (routing == "balanced") CHECK(relative(full.ranks[r].compute, symmetric.ranks[r].compute) < 1e-6);
      // Sampled: only the busiest EP rank computes at the max/mean; the others compute less and wait.
      else CHECK(full.ranks[r].compute < symmetric.ranks[r].compute * (1 - 1e-3));
    }
  }
}

TEST_CASE("collectives crossing nodes share each GPU's network port when they overlap") {
  // Under 1F1B every all-to-all is on the critical path, so what shares its port shows in the step
  // (under DualPipe the pairs hide it, and the order of a few transfers can move the step either way).
  // Today's kernels (DeepGEMM, FlashAttention-3): with the slower 2024 ones the compute hides most of
  // the transfers that share the port, and what is left is within the reordering noise.
  Job job = scenario("deepseek-v3-2048xh800.json", {"parallel.schedule=1f1b", "cluster.gpu=h800-sxm"});
  StepCosts costs = step_costs(job);
  // EP64 over 8 nodes, DP over 128 ranks and PP16 all cross nodes; there is no TP.
  CHECK(costs.network[static_cast<std::size_t>(CommKind::ep)]);
  CHECK(costs.network[static_cast<std::size_t>(CommKind::dp)]);
  CHECK(costs.network[static_cast<std::size_t>(CommKind::pp)]);
  CHECK_FALSE(costs.network[static_cast<std::size_t>(CommKind::tp)]);
  // Pipeline sends and gradient reductions overlap the all-to-alls: sharing the NIC costs time.
  double shared = simulate_step(job, costs).step_time;
  costs.network = {};
  double exclusive = simulate_step(job, costs).step_time;
  CHECK(shared > exclusive * 1.0005);  // +0.09% (it read +0.1% and more while stale events set the makespan)
  CHECK(shared < exclusive * 1.10);
}

TEST_CASE("gradient reductions wait for the whole backward when they do not overlap it") {
  // GPT-3 175B interleaved: each rank holds two chunks; overlapped, the first chunk's all-reduce runs
  // beside the second chunk's backward; not overlapped, both come after it, and the step is longer by
  // about the first one's time.
  Job overlapped = scenario("gpt3-175b-megatron.json", {"parallel.overlap_grad_reduce=true"});
  Job after = scenario("gpt3-175b-megatron.json");  // false, as Megatron-LM ran at SC'21
  REQUIRE(!after.layout.overlap_grad_reduce);
  Run a = run(overlapped), b = run(after);
  CHECK(b.sim.step_time > a.sim.step_time);
  CHECK(relative(b.report.estimate, b.sim.step_time) < 0.03);
}

TEST_CASE("the host issues each kernel in the framework's host time: the GPU waits only where the host is behind") {
  // Closed form: kernels g_1…g_n issued h apart end at max_i (i·h + g_i + … + g_n).
  Pass p;
  for (double g : {5.0, 1.0, 1.0, 1.0}) p.add_kernel(g, 2.0);
  CHECK(p.kernels == 4);
  CHECK(p.host_issue == 8.0);
  CHECK(p.issue_end == doctest::Approx(std::max({2.0 + 8.0, 4.0 + 3.0, 6.0 + 2.0, 8.0 + 1.0})));  // the long first kernel hides the rest
  Pass q;
  for (double g : {1.0, 1.0, 1.0, 5.0}) q.add_kernel(g, 2.0);
  CHECK(q.issue_end == doctest::Approx(std::max({2.0 + 8.0, 4.0 + 7.0, 6.0 + 6.0, 8.0 + 5.0})));  // behind the host until the last
  // Composing passes gives what one pass of all their kernels gives.
  Pass joined = p;
  joined.append(q);
  Pass flat;
  for (double g : {5.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5.0}) flat.add_kernel(g, 2.0);
  CHECK(joined.issue_end == doctest::Approx(flat.issue_end));
  CHECK(joined.kernels == 8);
  // Settled, the waits are the GPU's: the pass's compute becomes its issue end.
  flat.settle_host();
  CHECK(flat.compute() == doctest::Approx(flat.issue_end));
  CHECK(flat.host_wait == doctest::Approx(flat.issue_end - 16.0));
  // A host that keeps ahead costs nothing.
  Pass fast;
  for (double g : {5.0, 1.0, 1.0}) fast.add_kernel(g, 0.0);
  fast.settle_host();
  CHECK(fast.compute() == 7.0);
  CHECK(fast.host_wait == 0.0);
}

TEST_CASE("a host slower than the kernels sets the step: every pass takes its kernels' host time") {
  const Job job = scenario("gpt3-175b-megatron.json");
  const Run base = run(job);
  CHECK(base.costs.stages[0].forward.host_wait == 0);
  // At 1 ms a kernel the host is far behind every kernel: each pass takes about its kernels' host time.
  const Job slow = scenario("gpt3-175b-megatron.json", {"training.host_overhead=1ms"});
  const StepCosts costs = step_costs(slow);
  for (std::size_t i = 0; i < costs.stages.size(); ++i) {
    const Pass& f = costs.stages[i].forward;
    CHECK(f.compute() >= f.host_issue);
    CHECK(f.compute() < f.host_issue + base.costs.stages[i].forward.compute());
    CHECK(f.host_wait > 0);
    CHECK(f.kernels == base.costs.stages[i].forward.kernels);
  }
  CHECK(run(slow).report.step_time > base.report.step_time);
  CHECK_THROWS_WITH_AS(scenario("gpt3-175b-megatron.json", {"training.host_overhead=-1us"}), doctest::Contains("host_overhead"), InputError);
}
