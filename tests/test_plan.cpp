// The capacity planner: search, ranking, determinism across threads and shards, the checks against
// the published layouts, infeasible spaces, and Megatron-LM flags.
#include <doctest/doctest.h>
#include <algorithm>

#include "models/input/catalogue.hpp"
#include "cli/report/plan_report.hpp"

using namespace plumb;

namespace {

Job scenario(const std::string& name, std::vector<std::string> overrides = {}) {
  return load_scenario(data_dir() / "scenarios" / name, overrides);
}

std::vector<std::uint64_t> order(const PlanOutcome& o) {
  std::vector<std::uint64_t> out;
  for (const PlanResult& r : o.ranked) out.push_back(r.index);
  return out;
}

// DeepSeek-V3 with a space small enough for the debug and sanitizer builds, holding the published layout.
const std::vector<std::string> kDeepSeekSpace{
    "plan.pp=[8, 16]", "plan.ep=[8, 16, 64]", "plan.tp=[1, 2]", "plan.schedule=[\"1f1b\", \"dualpipe\", \"dualpipev\"]",
    "plan.zero=[1]", "plan.micro_batch=[1]", "plan.recompute=[[\"norm\", \"mla_up_proj\", \"activation\"]]", "plan.top=6",
    "plan.moe_execution=[\"separate\"]"};

}  // namespace

TEST_CASE("every point is either feasible or rejected with a reason, and the ranking is ordered") {
  Job base = scenario("deepseek-v3-2048xh800.json", kDeepSeekSpace);
  PlanSpace space = read_plan_space(base);
  CHECK(space.size() == 2 * 3 * 2 * 3 * 2);  // vp defaults to {1, 2}
  PlanOptions options;
  options.threads = 2;
  PlanOutcome o = run_plan(base, space, options);
  CHECK(o.evaluated == space.size());
  CHECK(o.feasible + o.rejected_total() == o.evaluated);
  CHECK(o.ranked.size() == o.feasible);
  CHECK(o.rejected.count({RejectionKind::invalid_layout, "/parallel/vp"}) == 1);  // vp 2 only with interleaved, which is not in this space
  // The best six by the estimate are simulated and head the ranking in simulated order; the rest
  // follow by their estimates.
  for (std::size_t i = 0; i < o.ranked.size(); ++i) CHECK(o.ranked[i].simulated == (i < 6));
  for (std::size_t i = 1; i < o.ranked.size(); ++i)
    if (o.ranked[i - 1].simulated == o.ranked[i].simulated) CHECK(o.ranked[i - 1].days_with_failures <= o.ranked[i].days_with_failures);
}

TEST_CASE("on 2048 H800 the planner's best DeepSeek-V3 layout is at least as fast as the published one") {
  Job base = scenario("deepseek-v3-2048xh800.json", kDeepSeekSpace);
  PlanSpace space = read_plan_space(base);
  PlanOutcome o = run_plan(base, space, PlanOptions{});
  auto rank = scenario_rank(base, o);
  REQUIRE(rank);
  const PlanResult& published = o.ranked[*rank - 1];
  CHECK(o.ranked.front().step_time <= published.step_time);
  // What the planner prefers, and why (README): fewer nodes per EP group (EP16 over EP64) send less of
  // the dispatch and combine over InfiniBand, which the model finds to be the bottleneck.
  CHECK(o.ranked.front().layout.find("EP64") == std::string::npos);
  // The table says where the published layout's time goes beside the best's: compute, idle and
  // exposed communication add up to each one's step.
  if (published.simulated && *rank > 1) {
    CHECK(plan_table(base, space, o, 3).find("per step, its s (the best's)") != std::string::npos);
    double parts = published.compute + published.idle;
    for (double e : published.exposed) parts += e;
    CHECK(parts == doctest::Approx(published.step_time).epsilon(1e-6));
  }
}

TEST_CASE("in the whole default space the published DeepSeek-V3 layout ranks in the planner's top 10") {
  // Every schedule, ZeRO stage, TP, PP, EP, micro-batch and recomputation of the default plan space on
  // 2048 H800 (129K layouts); the best 40 by the estimate re-ranked by the simulation, which is where the published
  // layout and its neighbours land.
  Job base = scenario("deepseek-v3-2048xh800.json", {"plan.top=40"});
  PlanSpace space = read_plan_space(base);
  PlanOutcome o = run_plan(base, space, PlanOptions{});
  auto rank = scenario_rank(base, o);
  REQUIRE(rank);
  CHECK(o.ranked[*rank - 1].simulated);
  CHECK(*rank <= 10);
  CHECK(o.ranked.front().step_time <= o.ranked[*rank - 1].step_time);
}

TEST_CASE("the ranking is the same whatever the thread count, and shards merge into the single run") {
  Job base = scenario("deepseek-v3-2048xh800.json", kDeepSeekSpace);
  PlanSpace space = read_plan_space(base);
  PlanOptions one, two;
  one.threads = 1;
  two.threads = 2;
  PlanOutcome a = run_plan(base, space, one), b = run_plan(base, space, two);
  CHECK(order(a) == order(b));
  std::vector<PlanOutcome> parts;
  for (std::uint64_t shard = 0; shard < 3; ++shard) {
    PlanOptions o;
    o.shard = shard;
    o.shards = 3;
    o.simulate = false;
    PlanOutcome part = run_plan(base, space, o);
    // Through the file format, as plumb merge reads it.
    parts.push_back(read_partial(partial_json(base.name, part, shard, 3, space.size()), "part.json", space.size()));
  }
  PlanOutcome merged = merge_plans(base, space, std::move(parts), one);
  CHECK(order(merged) == order(a));
  CHECK(merged.evaluated == a.evaluated);
  CHECK(merged.rejected_total() == a.rejected_total());
  REQUIRE(merged.ranked.size() == a.ranked.size());
  for (std::size_t i = 0; i < a.ranked.size(); ++i) CHECK(merged.ranked[i].step_time == a.ranked[i].step_time);
  CHECK_THROWS_AS(read_partial(partial_json(base.name, a, 0, 1, 7), "other.json", space.size()), InputError);
}

TEST_CASE("the Pareto frontier holds no layout another beats on time, GPUs and cost at once") {
  Job base = scenario("deepseek-v3-2048xh800.json", {"plan.gpus=[1024, 2048]", "plan.pp=[16]", "plan.ep=[16, 64]", "plan.tp=[1]",
                                                     "plan.schedule=[\"dualpipe\", \"1f1b\"]", "plan.zero=[1]",
                                                     "plan.micro_batch=[1]", "plan.vp=[1]", "plan.top=0"});
  PlanSpace space = read_plan_space(base);
  PlanOutcome o = run_plan(base, space, PlanOptions{});
  REQUIRE(!o.pareto.empty());
  for (std::size_t i : o.pareto)
    for (const PlanResult& r : o.ranked) {
      const PlanResult& f = o.ranked[i];
      bool dominates = r.days_with_failures <= f.days_with_failures && r.gpus <= f.gpus && r.cost_usd <= f.cost_usd &&
                       (r.days_with_failures < f.days_with_failures || r.gpus < f.gpus || r.cost_usd < f.cost_usd);
      CHECK_FALSE(dominates);
    }
  CHECK(o.pareto.front() == 0);  // the fastest is always on it
}

TEST_CASE("a GPT-3 175B search on 1024 A100 ranks a Megatron-style layout (TP8 in a node, PP across nodes) near the top") {
  Job base = scenario("gpt3-175b-megatron.json", {"plan.tp=[2, 4, 8]", "plan.pp=[4, 8, 16]", "plan.zero=[1]", "plan.micro_batch=[1]",
                                                  "plan.top=20"});
  PlanSpace space = read_plan_space(base);
  PlanOutcome o = run_plan(base, space, PlanOptions{});
  auto it = std::find_if(o.ranked.begin(), o.ranked.end(),
                         [](const PlanResult& r) { return r.layout.rfind("TP8 PP", 0) == 0 && r.layout.rfind("TP8 PP1 ", 0) != 0; });
  REQUIRE(it != o.ranked.end());
  CHECK(it - o.ranked.begin() < 10);
}

TEST_CASE("when nothing fits, the planner says so with the nearest misses") {
  Job base = load_scenario(data_dir() / "tests/fixtures/scenarios/gpt3-175b-one-gpu.json");
  PlanSpace space = read_plan_space(base);
  PlanOutcome o = run_plan(base, space, PlanOptions{});
  CHECK(o.ranked.empty());
  REQUIRE(!o.near_misses.empty());
  CHECK(o.near_misses.front().peak_bytes > o.near_misses.front().capacity_bytes);
  for (std::size_t i = 1; i < o.near_misses.size(); ++i)
    CHECK(o.near_misses[i - 1].peak_bytes / o.near_misses[i - 1].capacity_bytes <=
          o.near_misses[i].peak_bytes / o.near_misses[i].capacity_bytes);
  CHECK(infeasible_explanation(o).find("nearest misses") != std::string::npos);
}

TEST_CASE("Megatron-LM flags say the layout") {
  Job job = scenario("gpt3-175b-megatron.json");
  std::string flags = megatron_flags(job);
  CHECK(flags.find("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16") != std::string::npos);
  CHECK(flags.find("--num-layers-per-virtual-pipeline-stage 3") != std::string::npos);  // 96 layers / (16 × 2)
  CHECK(flags.find("--sequence-parallel") == std::string::npos);  // SC'21 predates it
  CHECK(megatron_flags(scenario("gpt3-175b-megatron.json", {"parallel.sequence_parallel=true"})).find("--sequence-parallel") !=
        std::string::npos);
  CHECK(flags.find("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1") != std::string::npos);
  CHECK(flags.find("--micro-batch-size 1 --global-batch-size 1536 --seq-length 2048") != std::string::npos);
  std::string ds = megatron_flags(scenario("deepseek-v3-2048xh800.json"));
  CHECK(ds.find("--expert-model-parallel-size 64") != std::string::npos);
  CHECK(ds.find("--recompute-modules layernorm mla_up_proj moe_act") != std::string::npos);
  CHECK(ds.find("--use-distributed-optimizer") != std::string::npos);
  CHECK(ds.find("--fp8-format hybrid") != std::string::npos);
  CHECK(ds.find("no dualpipe schedule") != std::string::npos);
}

TEST_CASE("a bad plan section names the key and the fix") {
  auto message = [](std::vector<std::string> overrides) {
    try {
      read_plan_space(scenario("deepseek-v3-2048xh800.json", overrides));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message({"plan.schedules=[\"1f1b\"]"}).find("/plan/schedules: unknown key; did you mean \"schedule\"?") != std::string::npos);
  CHECK(message({"plan.schedule=[\"1f1b\", \"dualpip\"]"}).find("/plan/schedule/1: \"dualpip\" is not one of") != std::string::npos);
  CHECK(message({"plan.tp=[0]"}).find("/plan/tp/0: expected a positive whole number") != std::string::npos);
  CHECK(message({"plan.objective=fast"}).find("/plan/objective: expected \"time\" or \"cost\"") != std::string::npos);
  CHECK(message({"plan.gpus={\"from\": 1024, \"to\": 512}"}).find("/plan/gpus/to: 512 is below from 1024") != std::string::npos);
}

TEST_CASE("a range of GPU counts doubles from its start to its end") {
  PlanSpace s = read_plan_space(scenario("deepseek-v3-2048xh800.json", {"plan.gpus={\"from\": 512, \"to\": 4096}"}));
  CHECK(s.gpus == std::vector<std::int64_t>{512, 1024, 2048, 4096});
}

TEST_CASE("on DeepSeek-V4-Pro the planner names the faster of DualPipe-style overlap and fine-grained EP, with the margin") {
  Job base = scenario("deepseek-v4-pro-2048xb200-dualpipe.json",
                      {"plan.pp=[16]", "plan.ep=[8, 32, 64]", "plan.schedule=[\"1f1b\", \"dualpipe\", \"dualpipev\"]", "plan.top=18"});
  PlanSpace space = read_plan_space(base);
  CHECK(space.moe_execution.size() == 2);  // an MoE model searches both by default
  PlanOutcome o = run_plan(base, space, PlanOptions{});
  const PlanResult *waves = nullptr, *separate = nullptr;
  for (const PlanResult& r : o.ranked) {
    if (r.moe_waves && !waves) waves = &r;
    if (!r.moe_waves && !separate) separate = &r;
  }
  REQUIRE(waves);
  REQUIRE(separate);
  // Fused waves keep the EP group inside one NVLink node.
  CHECK(waves->layout.find("EP8 ") != std::string::npos);
  const std::string table = plan_table(base, space, o, 5);
  const bool waves_win = waves->step_time < separate->step_time;
  CHECK(table.find(waves_win ? "fine-grained EP faster by" : "separate kernels faster by") != std::string::npos);
  // Rejected waves layouts say why: EP beyond a node.
  CHECK(o.rejected.count({RejectionKind::invalid_layout, "/parallel/moe_execution"}) == 1);
}

TEST_CASE("a base with async TP and fp8 all-gathers keeps them where TP runs and drops them where it does not") {
  // torchtitan's float8 tensorwise async-TP row: its layouts without TP (or PP-only) are priced plainly,
  // not refused for asking to overlap collectives they do not have.
  Job base = scenario("published/torchtitan-asynctp-8b-float8-tensorwise-async-tp.json",
                      {"training.global_batch=192", "plan.tp=[1, 8]", "plan.pp=[1]", "plan.cp=[1]", "plan.schedule=[\"1f1b\"]", "plan.zero=[3]",
                       "plan.micro_batch=[1]",
                       "plan.recompute=[[\"alternate_matmuls\"]]", "plan.top=2"});
  PlanOutcome o = run_plan(base, read_plan_space(base), PlanOptions{});
  CHECK(o.rejected.count({RejectionKind::invalid_layout, "/parallel/tp_overlap"}) == 0);
  CHECK(o.rejected.count({RejectionKind::invalid_layout, "/parallel/fp8_all_gathers"}) == 0);
  const auto has = [&](const std::string& prefix) {
    return std::any_of(o.ranked.begin(), o.ranked.end(), [&](const PlanResult& r) { return r.layout.rfind(prefix, 0) == 0; });
  };
  CHECK(has("TP1 "));
  CHECK(has("TP8 "));
}

TEST_CASE("without a pipeline a layout is listed once, not once per schedule") {
  // At pp 1 GPipe, 1F1B and the zero-bubble schedules all run each micro-batch's forward then its
  // backward: one entry (1F1B), the others turned down with the reason; DualPipe, which overlaps a
  // forward with a backward, stays a layout of its own.
  Job base = scenario("mixtral-8x7b-256xh100.json",
                      {"plan.pp=[1, 2]", "plan.tp=[1]", "plan.ep=[8]", "plan.zero=[1]", "plan.micro_batch=[1]",
                       "plan.recompute=[\"none\"]", "plan.moe_execution=[\"separate\"]", "plan.vp=[1]",
                       "plan.schedule=[\"gpipe\", \"1f1b\", \"zb-h1\", \"zb-v\", \"dualpipe\"]", "plan.top=0"});
  PlanSpace space = read_plan_space(base);
  PlanOutcome o = run_plan(base, space, PlanOptions{});
  std::map<std::string, int> pp1;
  for (const PlanResult& r : o.ranked)
    if (r.layout.find(" PP1 ") != std::string::npos)
      for (const char* s : {" gpipe ", " 1f1b ", " zb-h1 ", " zb-v ", " dualpipe "})
        if (r.layout.find(s) != std::string::npos) ++pp1[s];
  CHECK(pp1[" 1f1b "] == 1);
  CHECK(pp1[" gpipe "] == 0);
  CHECK(pp1[" zb-h1 "] == 0);
  CHECK(pp1[" zb-v "] == 0);
  int pp2 = 0;  // with a pipeline every schedule is its own layout (GPipe's does not fit here)
  for (const PlanResult& r : o.ranked) pp2 += r.layout.find(" PP2 ") != std::string::npos;
  CHECK(pp2 == 4);
  std::uint64_t deduplicated = 0;
  for (const auto& [reason, rejection] : o.rejected)
    if (reason.key() == "/parallel/schedule") deduplicated += rejection.count;
  CHECK(deduplicated == 3);
}

TEST_CASE("the planner compares context-parallel algorithms, once each where there is context parallelism") {
  // SimuMax's Llama 3 70B at 32,768 tokens on 8 B200: CP 1, 2 and 8 under the ring, TE's all-to-all and
  // PyTorch's all-gather. At CP 1 the three run the same step: listed once (and here refused, DP8 not
  // dividing the global batch of 4).
  Job base = scenario("published/simumax-b200-llama3-70b-tp1-cp8-seq32k.json",
                      {"plan.cp=[1, 2, 8]", "plan.cp_comm=[\"ring\", \"a2a\", \"all_gather\"]", "plan.tp=[1]", "plan.pp=[1]",
                       "plan.zero=[1]", "plan.micro_batch=[1]", "plan.recompute=[\"full\"]", "plan.schedule=[\"1f1b\"]", "plan.vp=[1]",
                       "plan.top=6"});
  PlanSpace space = read_plan_space(base);
  REQUIRE(space.cp_comm.size() == 3);
  PlanOutcome o = run_plan(base, space, PlanOptions{});
  std::map<std::string, const PlanResult*> by;
  for (const PlanResult& r : o.ranked) by[r.layout.substr(0, r.layout.find(" 1f1b"))] = &r;
  CHECK(by.size() == 6);  // CP2 and CP8 under each algorithm (CP1, DP8, cannot split the 4 sequences)
  for (const char* layout : {"TP1 PP1 DP1 CP8", "TP1 PP1 DP1 CP8(a2a)", "TP1 PP1 DP1 CP8(all_gather)", "TP1 PP1 DP4 CP2(a2a)"})
    CHECK_MESSAGE(by.count(layout), layout);
  std::uint64_t listed_once = 0;
  for (const auto& [reason, rejection] : o.rejected)
    if (reason.key() == "/parallel/cp_comm") listed_once += rejection.count;
  CHECK(listed_once == 2);
  // The same layouts as plumb run prices them: the all-to-all's one kernel over every key at cuDNN's
  // long-sequence rate beats the ring's blocks of 4,096 keys here.
  CHECK(by.at("TP1 PP1 DP1 CP8(a2a)")->step_time < by.at("TP1 PP1 DP1 CP8")->step_time);
  // The launch settings name the algorithm: Megatron-LM's --cp-comm-type, torchtitan's rotate method.
  CHECK(megatron_flags(base).find("--context-parallel-size 8 --cp-comm-type a2a") != std::string::npos);
  CHECK(megatron_flags(scenario("published/simumax-b200-llama3-70b-tp1-cp8-seq32k.json", {"parallel.cp_comm=ring"})).find("--cp-comm-type p2p") !=
        std::string::npos);
  const std::string toml = torchtitan_toml(scenario("published/torchtitan-h100-8b-fsdp1-cp8.json"));
  CHECK(toml.find("context_parallel_rotate_method = \"allgather\"") != std::string::npos);
  CHECK(torchtitan_toml(base).find("torchtitan has no all-to-all") != std::string::npos);
}

TEST_CASE("under a power limit the planner prices GPUs at that limit and refuses those whose profile cannot say") {
  // torchao's 8B on 8 B200 at 750 W, searched over the B200 and the A100 (whose profile names no power
  // limit and idle draw to scale from): every A100 point is refused with the reason, the B200 ones priced.
  Job base = scenario("published/torchao-b200-750w-8b-fsdp8-bf16.json",
                      {"plan.gpu=[\"b200\", \"a100-sxm-80gb\"]", "plan.fabric=[\"dgx-b200-ndr\"]", "plan.gpus=[8]", "plan.tp=[1]", "plan.pp=[1]",
                       "plan.cp=[1]", "plan.zero=[3]", "plan.micro_batch=[1]", "plan.recompute=[\"alternate_matmuls\"]",
                       "plan.schedule=[\"1f1b\"]", "plan.vp=[1]"});
  PlanSpace space = read_plan_space(base);
  REQUIRE(space.gpu.size() == 2);
  PlanOutcome o = run_plan(base, space, PlanOptions{});
  std::uint64_t refused = 0;
  for (const auto& [reason, rejection] : o.rejected)
    if (reason.key() == "/cluster/power_limit") refused += rejection.count;
  CHECK(refused >= 1);
  REQUIRE(!o.ranked.empty());
  for (const PlanResult& r : o.ranked) CHECK(r.gpu == "b200");
  // The B200's point is the scenario itself, priced at 750 W: slower than the same point at 1000 W.
  Job full_power = base;
  full_power.cluster.power_limit.reset();
  PlanOutcome at_1000 = run_plan(full_power, read_plan_space(full_power), PlanOptions{});
  REQUIRE(!at_1000.ranked.empty());
  CHECK(o.ranked.front().step_time > at_1000.ranked.front().step_time * 1.05);
}

TEST_CASE("HSDP in the search: shard groups that divide DP, full sharding listed once, none under ZeRO-0") {
  // torchtitan's 8B on 128 H100 (DP128): shard groups of 8 and 16, then 128 and 256, both full sharding
  // (the second a duplicate); 48 does not divide 128; ZeRO-0 shards nothing.
  const Job base = scenario("published/torchtitan-h100-8b-fsdp128-sac.json",
                            {R"(plan={"tp": [1], "pp": [1], "vp": [1], "micro_batch": [2], "schedule": ["1f1b"], "zero": [0, 3],
                                      "dp_shard": [8, 16, 48, 128, 256]})"});
  const PlanSpace space = read_plan_space(base);
  std::vector<std::int64_t> kept;
  std::vector<std::string> reasons;
  for (std::uint64_t i = 0; i < space.size(); ++i) {
    std::string why;
    const std::optional<Job> job = job_at(base, space, point_at(space, i), &why);
    if (job && job->layout.zero == 3) kept.push_back(job->layout.dp_shard);
    if (!job) reasons.push_back(why);
  }
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  CHECK(kept == std::vector<std::int64_t>{0, 8, 16});
  auto rejected = [&](const std::string& text) {
    return std::any_of(reasons.begin(), reasons.end(), [&](const std::string& r) { return r.find(text) != std::string::npos; });
  };
  CHECK(rejected("dp_shard 48 does not divide dp 128"));
  CHECK(rejected("shard groups of 256 cover all 128 data-parallel ranks"));
  CHECK(rejected("ZeRO-0 has none"));
  // Its layout line and torchtitan settings say so.
  Job hsdp = base;
  hsdp.layout.dp_shard = 8;
  CHECK(describe_layout(hsdp.layout).find("DP128 (HSDP 8×16)") != std::string::npos);
  const std::string toml = torchtitan_toml(hsdp);
  CHECK(toml.find("data_parallel_replicate_degree = 16\ndata_parallel_shard_degree = 8") != std::string::npos);
  CHECK(megatron_flags(hsdp).find("# HSDP shard groups of 8 (16 replicas)") != std::string::npos);  // custom FSDP: not emitted
  hsdp.layout.zero = 1;
  CHECK(megatron_flags(hsdp).find("--use-distributed-optimizer --num-distributed-optimizer-instances 16") != std::string::npos);
}
