// Zero-bubble schedules as Qi et al.'s runtime makes them: a deferred weight gradient (W) keeps its GEMMs'
// inputs and output gradients from its input-gradient backward to the W (32sbh a GPT layer, the paper's
// Table 1), the heuristic counts that against its memory limit, and ZB-1p / ZB-2p hold p / 2p activation
// sets on every rank; the memory model and the simulated step count the stash.
#include <doctest/doctest.h>

#include "models/input/catalogue.hpp"
#include "models/memory/activations.hpp"
#include "models/memory/memory.hpp"
#include "models/schedule_run/pipeline_run.hpp"
#include "models/schedules/held_bytes.hpp"
#include "models/schedules/registry.hpp"

using namespace plumb;

namespace {

Job zero_bubble_case(const std::string& name) { return load_scenario(data_dir() / "scenarios/published" / (name + ".json")); }

}  // namespace

TEST_CASE("a GPT layer's weight gradients keep 32 bytes a token and unit of h past their backward (Qi et al. Table 1)") {
  Job job = zero_bubble_case("zero-bubble-a100-1.5b-zb1p-m24");
  const ActivationSettings s = ActivationSettings::of(job.layout, job.training);
  const double h = static_cast<double>(job.model.hidden), a = static_cast<double>(job.model.attention.heads), seq = 1024;
  CHECK(bytes_per_token(weight_gradient_tensors(job.model, 1, s), s) == doctest::Approx(32 * h));
  // Over the layer's activation set, sb(34h + 5as) (Korthikanti et al.; the runtime's M_F): the share the
  // heuristic counts a deferred W at, 0.366 for this model.
  CHECK(weight_stash_share(job) == doctest::Approx(32 * h / (34 * h + 5 * a * seq)).epsilon(1e-9));
  // Under tensor parallelism with sequence parallelism every one of them is split over the ranks.
  ActivationSettings tp = s;
  tp.tp = 4;
  tp.sequence_parallel = true;
  CHECK(bytes_per_token(weight_gradient_tensors(job.model, 1, tp), tp) == doctest::Approx(32 * h / 4));
}

TEST_CASE("the zero-bubble heuristic keeps activation sets and deferred W's within its limit") {
  for (ScheduleKind kind : {ScheduleKind::zb_1p, ScheduleKind::zb_2p})
    for (double stash : {0.0, 0.366, 1.0})
      for (auto [p, m] : {std::pair{4, 12}, std::pair{8, 24}}) {
        const ScheduleShape shape{.ranks = p, .microbatches = m};
        OpTimes t;
        t.stash = stash;
        const PipelineSchedule s = schedule_for(kind, shape, t);
        INFO(schedule_name(kind) << " stash " << stash << " p " << p << " m " << m);
        CHECK(check_schedule(s).empty());
        const ScheduleFamily& f = schedule_family(kind);
        for (std::int64_t r = 0; r < p; ++r) {
          const double limit = static_cast<double>(f.heuristic_limit ? f.heuristic_limit(r, shape) : f.peak_inflight(r, shape));
          const std::vector<double> one(static_cast<std::size_t>(s.stages), 1.0), shares(static_cast<std::size_t>(s.stages), stash);
          CHECK(peak_held_bytes(s, r, one, shares) <= limit + 1e-9);
        }
      }
  // ZB-H1 as the paper draws it puts rank r's W's off r rounds: 1F1B's p − r activation sets and r stashes,
  // never above the first rank's p (Qi et al. §3.1: no worker above 1F1B's peak).
  for (double stash : {0.0, 0.366, 1.0}) {
    OpTimes t;
    t.stash = stash;
    const std::int64_t p = 8;
    const PipelineSchedule s = schedule_for(ScheduleKind::zb_h1, {.ranks = p, .microbatches = 24}, t);
    const std::vector<double> one(static_cast<std::size_t>(p), 1.0), shares(static_cast<std::size_t>(p), stash);
    for (std::int64_t r = 0; r < p; ++r) {
      INFO("ZB-H1 stash " << stash << " rank " << r);
      CHECK(peak_held_bytes(s, r, one, shares) == doctest::Approx(static_cast<double>(p - r) + static_cast<double>(r) * stash));
    }
  }
  // ZB-2p's warm-up runs as many forwards as keep the first backward from waiting, up to 2p: more than
  // ZB-1p's p on the first rank, one on the last.
  const std::vector<std::int64_t> one = peak_activations(schedule_for(ScheduleKind::zb_1p, {.ranks = 8, .microbatches = 24}));
  const std::vector<std::int64_t> two = peak_activations(schedule_for(ScheduleKind::zb_2p, {.ranks = 8, .microbatches = 24}));
  CHECK(one[0] == 8);
  CHECK(two[0] > 8);
  CHECK(two[0] <= 16);
  CHECK(one[7] == 1);
  CHECK(two[7] == 1);
}

TEST_CASE("on the paper's profiled times the bubble rates are its Table 5's, every setup") {
  // Qi et al. Table 9's T_F, T_B, T_W and T_comm (ms) and Table 5's 1F1B, ZB-1p and ZB-2p bubble rates,
  // each deferred W counted at what the runtime counts (32h of 34h + 5as, s = 1024).
  struct Row {
    std::int64_t p, m, h, a;
    double f, b, w, comm, one_f_one_b, zb_1p, zb_2p;
  };
  const Row rows[] = {
      {8, 24, 2304, 24, 18.522, 18.086, 9.337, 0.601, 0.2431, 0.1585, 0.0433},
      {8, 32, 2304, 24, 18.513, 18.086, 9.331, 0.626, 0.1985, 0.1242, 0.0039},
      {8, 64, 2304, 24, 18.546, 18.097, 9.321, 0.762, 0.1240, 0.0674, 0.0026},
      {8, 24, 4096, 32, 29.718, 29.444, 19.927, 0.527, 0.2347, 0.1323, 0.0029},
      {8, 32, 4096, 32, 29.802, 29.428, 19.530, 0.577, 0.1898, 0.1045, 0.0022},
      {8, 64, 4096, 32, 29.935, 29.621, 19.388, 0.535, 0.1091, 0.0554, 0.0010},
      {16, 48, 5120, 40, 11.347, 11.248, 8.132, 0.377, 0.2552, 0.1397, 0.0066},
      {16, 64, 5120, 40, 11.307, 11.254, 8.101, 0.379, 0.2082, 0.1088, 0.0054},
      {16, 128, 5120, 40, 11.325, 11.308, 8.109, 0.378, 0.1251, 0.0576, 0.0028},
      {32, 96, 6144, 48, 10.419, 10.207, 7.715, 0.408, 0.2646, 0.1421, 0.0038},
      {32, 128, 6144, 48, 10.408, 10.204, 7.703, 0.408, 0.2168, 0.1106, 0.0029},
      {32, 256, 6144, 48, 10.402, 10.248, 7.698, 0.460, 0.1352, 0.0594, 0.0018}};
  for (const Row& row : rows) {
    INFO("p " << row.p << " m " << row.m << " h " << row.h);
    OpCosts c;
    c.f = row.f;
    c.w = row.w;
    c.b = row.b + row.w;
    c.p2p = row.comm;
    const double stash = 32.0 * row.h / (34.0 * row.h + 5.0 * row.a * 1024.0);
    auto rate = [&](ScheduleKind kind) {
      OpTimes t = c.times();
      t.stash = stash;
      const ScheduleRun run = run_schedule(schedule_for(kind, {.ranks = row.p, .microbatches = row.m}, t), c);
      double longest = 0;
      for (const RankTiming& r : run.ranks) longest = std::max(longest, r.span);
      return run.longest_span_bubble() / longest;
    };
    CHECK(std::abs(rate(ScheduleKind::one_f_one_b) - row.one_f_one_b) < 0.001);
    CHECK(std::abs(rate(ScheduleKind::zb_1p) - row.zb_1p) < 0.001);
    CHECK(std::abs(rate(ScheduleKind::zb_2p) - row.zb_2p) < 0.001);
  }
}

TEST_CASE("on the paper's profiled times every Table 8 bubble rate but 1F1B-I's is plumb's, every setup") {
  // The profiled per-chunk T_F, T_B, T_W and T_comm (us) the Table 8 figures were computed from
  // (sail-sg/zero-bubble-pipeline-parallelism f68d3879, megatron/core/pipeline_parallel/efficiency.py,
  // arxiv_bubble_rates) and Table 8's ZB-V column; the limit 2p chunk activation sets, each deferred W
  // counted at 32h of 34h + 5as. The rate is the paper's: the longest rank's bubble after its first forward
  // over that plus the rank's work.
  // Its 1F1B, ZB-H1 and ZB-H2 columns too, from the same times doubled (a whole stage's, as the script runs
  // them).
  struct Row {
    std::int64_t p, m, h, a;
    double f, b, w, comm, zb_v, one_f_one_b, zb_h1, zb_h2;
  };
  const Row rows[] = {{16, 48, 4096, 32, 14407, 14380, 9676, 1610, 0.0697, 0.2668, 0.1536, 0.0823}, {16, 64, 4096, 32, 14412, 14393, 9688, 1621, 0.0533, 0.2206, 0.1198, 0.0630},
                      {16, 128, 4096, 32, 14316, 14306, 9639, 1619, 0.0274, 0.1390, 0.0637, 0.0325}, {24, 72, 5120, 40, 6763, 6969, 5251, 755, 0.0638, 0.2699, 0.1439, 0.0628},
                      {24, 96, 5120, 40, 6783, 6984, 5259, 758, 0.0483, 0.2229, 0.1121, 0.0480},   {24, 192, 5120, 40, 6785, 6990, 5260, 770, 0.0250, 0.1403, 0.0595, 0.0247},
                      {32, 96, 6144, 48, 9458, 9748, 7288, 879, 0.0593, 0.2676, 0.1429, 0.0629},   {32, 128, 6144, 48, 9469, 9744, 7306, 892, 0.0451, 0.2204, 0.1111, 0.0478},
                      {32, 256, 6144, 48, 9447, 9644, 7193, 887, 0.0236, 0.1362, 0.0593, 0.0251}};
  for (const Row& row : rows) {
    INFO("p " << row.p << " m " << row.m);
    OpCosts c;
    c.f = row.f;
    c.w = row.w;
    c.b = row.b + row.w;
    c.p2p = row.comm;
    OpTimes t = c.times();
    t.stash = 32.0 * row.h / (34.0 * row.h + 5.0 * row.a * 1024.0);
    const ScheduleRun run = run_schedule(schedule_for(ScheduleKind::zb_v, {.ranks = row.p, .microbatches = row.m}, t), c);
    const double work = 2.0 * static_cast<double>(row.m) * (row.f + row.b + row.w);
    const double bubble = run.longest_span_bubble();
    CHECK(std::abs(bubble / (work + bubble) - row.zb_v) < 0.0005);
    OpCosts stage;
    stage.f = 2 * row.f;
    stage.b = 2 * (row.b + row.w);
    stage.w = 2 * row.w;
    stage.p2p = row.comm;
    const ScheduleRun one = run_schedule(schedule_for(ScheduleKind::one_f_one_b, {.ranks = row.p, .microbatches = row.m}, stage.times()), stage);
    CHECK(std::abs(1.0 - work / one.makespan - row.one_f_one_b) < 0.0005);
    // ZB-H1 over the makespan, ZB-H2 over the longest rank's span, as the script times them.
    const ScheduleRun h1 = run_schedule(schedule_for(ScheduleKind::zb_h1, {.ranks = row.p, .microbatches = row.m}, stage.times()), stage);
    CHECK(std::abs(1.0 - work / h1.makespan - row.zb_h1) < 0.0005);
    const ScheduleRun h2 = run_schedule(schedule_for(ScheduleKind::zb_h2, {.ranks = row.p, .microbatches = row.m}, stage.times()), stage);
    CHECK(std::abs(h2.longest_span_bubble() / (work + h2.longest_span_bubble()) - row.zb_h2) < 0.0005);
  }
}

TEST_CASE("the memory model and the simulated step count the deferred W's stash") {
  // The paper's runs: ZB-2p holds more than ZB-1p, which holds more than 1F1B (59, 32, 30 GB measured).
  const MemoryPlan two = plan_memory(zero_bubble_case("zero-bubble-a100-1.5b-zb2p-m24"));
  const MemoryPlan one = plan_memory(zero_bubble_case("zero-bubble-a100-1.5b-zb1p-m24"));
  const MemoryPlan base = plan_memory(zero_bubble_case("zero-bubble-a100-1.5b-1f1b-m24"));
  CHECK(two.ranks[two.peak_rank].total_bytes() > one.ranks[one.peak_rank].total_bytes());
  CHECK(one.ranks[one.peak_rank].total_bytes() > base.ranks[base.peak_rank].total_bytes());
  // 1F1B defers nothing; the zero-bubble ranks never hold more than their limit's worth of activation sets.
  for (const RankMemory& r : base.ranks) CHECK(r.weight_stash_bytes == 0);
  const Job job = zero_bubble_case("zero-bubble-a100-1.5b-zb1p-m24");
  for (const RankMemory& r : one.ranks) {
    const double set = stage_activation_bytes(job, one.stages[static_cast<std::size_t>(r.pp_rank)]);
    CHECK(r.activations_bytes <= 8 * set * (1 + 1e-9));
  }
  // A walk by hand: one rank and stage, an activation set of 10 bytes whose W keeps 4; F0 b0 F1 F2 b1 W0
  // holds 10, 4, 14, 24, 18, 14 (peak 24), and 10, 0, 10, 20, 10, 10 without the stash (peak 20).
  PipelineSchedule s;
  s.ranks = 1;
  s.stages = 1;
  s.ops = {{{OpKind::forward, {0, 0}}, {OpKind::backward_input, {0, 0}}, {OpKind::forward, {1, 0}},
            {OpKind::forward, {2, 0}}, {OpKind::backward_input, {1, 0}}, {OpKind::weight, {0, 0}}}};
  CHECK(peak_held_bytes(s, 0, {10}, {4}) == doctest::Approx(24));
  CHECK(peak_held_bytes(s, 0, {10}, {0}) == doctest::Approx(20));
}

TEST_CASE("materialised attention holds a layer's scores twice beside what it saves: baddbmm's buffer and output") {
  // GPT 1.5B of the paper: micro-batch 6, 24 heads, sequence 1024 on TP1: 2 tensors x 2 bytes x b·a·s².
  Job job = zero_bubble_case("zero-bubble-a100-1.5b-1f1b-m24");
  REQUIRE(job.training.attention_kernel == AttentionKernel::unfused);
  const double scores = 6.0 * 24 * 1024 * 1024;
  MemoryPlan plan = plan_memory(job);
  for (const RankMemory& r : plan.ranks) {
    CHECK(r.attention_scores_bytes == doctest::Approx(4 * scores));
    // No recomputation, no ZeRO-3, a fused loss: the scores' moment is the rank's transient.
    CHECK(r.transient_bytes() == doctest::Approx(4 * scores));
  }
  // A rank without layers (here the embedding alone on the first stage) holds none; a fused kernel holds
  // none either.
  Job embedding_only = job;
  embedding_only.layout.stage_layers = {0, 3, 3, 3, 3, 3, 4, 3};
  const MemoryPlan split = plan_memory(embedding_only);
  CHECK(split.ranks[0].attention_scores_bytes == 0.0);
  CHECK(split.ranks[1].attention_scores_bytes == doctest::Approx(4 * scores));
  job.training.attention_kernel = AttentionKernel::flash;
  for (const RankMemory& r : plan_memory(job).ranks) CHECK(r.attention_scores_bytes == 0.0);
  job.training.attention_kernel = AttentionKernel::unfused;
  job.layout.tp = 2;
  CHECK(plan_memory(job).ranks[1].attention_scores_bytes == doctest::Approx(2 * scores));
}
