// Pipeline schedules against the published closed forms, executed on the engine.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

#include "models/memory/memory.hpp"
#include "models/schedule_run/pipeline_run.hpp"
#include "models/schedules/zero_bubble.hpp"

using namespace plumb;

namespace {

OpCosts costs(double f, double b, double w, double fb) {
  OpCosts c;
  static_cast<StageCosts&>(c) = StageCosts{f, b, w, fb};
  return c;
}

}  // namespace

TEST_CASE("GPipe and 1F1B: every rank's bubble is (PP−1)(F+B), for unequal F and B") {
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b})
    for (auto [p, m] : {std::pair{4, 8}, std::pair{8, 20}, std::pair{6, 7}, std::pair{5, 3}}) {
      PipelineSchedule s = schedule_for(kind, {.ranks = p, .microbatches = m});
      CHECK(check_schedule(s).empty());
      ScheduleRun r = run_schedule(s, costs(1.25, 2.5, 0, 0));
      INFO(schedule_name(kind) << " p=" << p << " m=" << m);
      for (const RankTiming& t : r.ranks) CHECK(t.bubble == doctest::Approx((p - 1) * (1.25 + 2.5)));
      CHECK(r.makespan == doctest::Approx((m + p - 1) * (1.25 + 2.5)));
    }
}

TEST_CASE("interleaved 1F1B: bubble (PP−1)(F+B)/v, with F and B the cost of a whole rank's layers") {
  for (auto [p, m, v] : {std::tuple{4, 8, 2}, std::tuple{4, 12, 3}, std::tuple{8, 16, 2}, std::tuple{2, 6, 4}}) {
    PipelineSchedule s = schedule_for(ScheduleKind::interleaved, {.ranks = p, .microbatches = m, .vp = v});
    CHECK(check_schedule(s).empty());
    const double F = 3.0, B = 5.0;  // per rank; each of its v chunks costs 1/v of that
    ScheduleRun r = run_schedule(s, costs(F / v, B / v, 0, 0));
    INFO("p=" << p << " m=" << m << " v=" << v);
    CHECK(r.max_bubble() == doctest::Approx((p - 1) * (F + B) / v));
  }
}

TEST_CASE("DualPipe and DualPipeV: bubble (PP/2−1)(F&B+B−3W) when the input gradient costs as much as F") {
  // The published closed form takes the input-gradient half of B to cost as much as F (Qi et al.'s
  // T_B = T_F); F&B and W are free. With PP = ranks for DualPipe and 2·ranks stages for DualPipeV.
  struct Costs { double f, b, w, fb; };
  for (ScheduleKind kind : {ScheduleKind::dualpipe, ScheduleKind::dualpipe_v})
    for (auto [n, m] : {std::pair{4, 14}, std::pair{6, 20}, std::pair{8, 20}})
      for (Costs c : {Costs{1, 1.5, 0.5, 2.2}, Costs{2, 3, 1, 4.1}, Costs{1, 2, 1, 2.4}, Costs{1.5, 2.5, 1, 3.5}}) {
        PipelineSchedule s = schedule_for(kind, {.ranks = n, .microbatches = m});
        CHECK(check_schedule(s).empty());
        ScheduleRun r = run_schedule(s, costs(c.f, c.b, c.w, c.fb));
        double pp = kind == ScheduleKind::dualpipe ? n : 2.0 * n;
        INFO(schedule_name(kind) << " n=" << n << " m=" << m << " F=" << c.f << " B=" << c.b << " W=" << c.w << " F&B=" << c.fb);
        CHECK(r.max_bubble() == doctest::Approx((pp / 2 - 1) * (c.fb + c.b - 3 * c.w)));
      }
}

TEST_CASE("DualPipe: the closed form bounds the bubble when the input gradient costs more than F") {
  PipelineSchedule s = schedule_for(ScheduleKind::dualpipe, {.ranks = 8, .microbatches = 20});
  ScheduleRun r = run_schedule(s, costs(1, 2.5, 1, 3));
  CHECK(r.max_bubble() < (8 / 2 - 1) * (3 + 2.5 - 3 * 1));
}

TEST_CASE("peak activations: p on 1F1B's first rank, PP+1 on every DualPipe rank, 2·ranks+1 chunks for DualPipeV") {
  auto peaks = peak_activations(schedule_for(ScheduleKind::one_f_one_b, {.ranks = 8, .microbatches = 32}));
  CHECK(peaks.front() == 8);
  CHECK(peaks.back() == 1);
  for (std::int64_t p : peak_activations(schedule_for(ScheduleKind::dualpipe, {.ranks = 8, .microbatches = 20}))) CHECK(p == 9);
  for (std::int64_t p : peak_activations(schedule_for(ScheduleKind::dualpipe_v, {.ranks = 4, .microbatches = 10}))) CHECK(p == 9);
  for (std::int64_t p : peak_activations(schedule_for(ScheduleKind::gpipe, {.ranks = 4, .microbatches = 10}))) CHECK(p == 10);
}

TEST_CASE("DualPipe N=8, M=20 and DualPipeV N=4, M=10 run the reference implementation's step counts") {
  // shared/reference/published.md: warm-up F0 / (F0,F1) / (B1,W1,F1) / main / (B1,F1&B0) / (B1,B0) / (W,B0) / W.
  const std::vector<std::array<std::int64_t, 8>> rows{
      {6, 1, 3, 3, 3, 1, 3, 1}, {4, 2, 2, 4, 2, 2, 2, 2}, {2, 3, 1, 5, 1, 3, 1, 3}, {0, 4, 0, 6, 0, 4, 0, 4}};
  PipelineSchedule dp = schedule_for(ScheduleKind::dualpipe, {.ranks = 8, .microbatches = 20});
  for (int r = 0; r < 8; ++r) CHECK(dp.steps[static_cast<std::size_t>(r)] == rows[static_cast<std::size_t>(std::min(r, 7 - r))]);
  PipelineSchedule dv = schedule_for(ScheduleKind::dualpipe_v, {.ranks = 4, .microbatches = 10});
  for (int r = 0; r < 4; ++r) CHECK(dv.steps[static_cast<std::size_t>(r)] == rows[static_cast<std::size_t>(r)]);
  // The ops each step emitted agree with its count (ops per iteration: 1, 2, 3, 2, 2, 2, 2, 1).
  const std::array<std::int64_t, 8> per_iteration{1, 2, 3, 2, 2, 2, 2, 1};
  for (int r = 0; r < 8; ++r) {
    std::array<std::int64_t, 8> emitted{};
    for (const PipeOp& o : dp.ops[static_cast<std::size_t>(r)]) ++emitted[static_cast<std::size_t>(o.phase - 1)];
    for (std::size_t k = 0; k < 8; ++k) {
      // Step 4's first iteration on the middle ranks runs F0 and B1 apart: one op more.
      std::int64_t extra = (k == 3 && (r == 3 || r == 4)) ? 1 : 0;
      CHECK(emitted[k] == dp.steps[static_cast<std::size_t>(r)][k] * per_iteration[k] + extra);
    }
  }
  // Every rank runs the same number of forwards and backwards per chunk: M/2 for DualPipe, M for DualPipeV.
  for (const auto& ops : dv.ops) {
    std::int64_t forwards = 0;
    for (const PipeOp& o : ops) forwards += (o.kind == OpKind::forward || o.kind == OpKind::forward_backward) ? 1 : 0;
    CHECK(forwards == 2 * 10);
  }
}

TEST_CASE("constraints are refused up front with the numbers") {
  CHECK_THROWS_WITH_AS(schedule_for(ScheduleKind::dualpipe, {.ranks = 7, .microbatches = 20}), "dualpipe needs an even number of pipeline ranks, got pp 7",
                       ScheduleError);
  CHECK_THROWS_WITH_AS(schedule_for(ScheduleKind::dualpipe, {.ranks = 8, .microbatches = 14}), "dualpipe needs an even number of micro-batches ≥ 2·pp = 16, got 14",
                       ScheduleError);
  CHECK_THROWS_WITH_AS(schedule_for(ScheduleKind::interleaved, {.ranks = 4, .microbatches = 6, .vp = 2}),
                       "the interleaved schedule needs the 6 micro-batches to be a multiple of pp 4 (Megatron's micro-batch group rule)",
                       ScheduleError);
}

TEST_CASE("the checker finds wrong counts, wrong ranks and orders that deadlock") {
  PipelineSchedule s = schedule_for(ScheduleKind::one_f_one_b, {.ranks = 4, .microbatches = 8});
  PipelineSchedule swapped = s;
  std::swap(swapped.ops[1][0], swapped.ops[1].back());  // rank 1 runs a backward before any forward
  auto problems = check_schedule(swapped);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("cannot run: deadlock") != std::string::npos);
  PipelineSchedule missing = s;
  missing.ops[2].pop_back();
  CHECK(check_schedule(missing) == std::vector<std::string>{"no B of micro-batch 7 on stage 2", "no W of micro-batch 7 on stage 2"});
  PipelineSchedule misplaced = s;
  misplaced.ops[0][0].work.stage = 1;
  CHECK(check_schedule(misplaced).front() == "rank 0 runs F of micro-batch 0 on stage 1, which belongs to rank 1");
}

TEST_CASE("p2p time between ranks adds to each stage hand-off") {
  // GPipe with p2p c: the forward wave and the backward wave each cross p−1 hand-offs, and sends
  // overlap compute: (m+p−1)(F+B) + 2(p−1)c.
  OpCosts c = costs(1, 2, 0, 0);
  c.p2p = 0.5;
  CHECK(run_schedule(schedule_for(ScheduleKind::gpipe, {.ranks = 4, .microbatches = 8}), c).makespan == doctest::Approx((8 + 3) * 3.0 + 2 * 3 * 0.5));
  // 1F1B also slows in its steady state (a micro-batch's F→B round trip through the pipe grows), so
  // it pays more than the 2(p−1)c of the hand-offs alone.
  CHECK(run_schedule(schedule_for(ScheduleKind::one_f_one_b, {.ranks = 4, .microbatches = 8}), c).makespan > (8 + 3) * 3.0 + 2 * 3 * 0.5);
}

TEST_CASE("ZB-H1: bubble (PP−1)(F+B−2W) in DualPipe's notation, on every rank, with 1F1B's memory") {
  for (auto [p, m] : {std::pair{4, 12}, std::pair{6, 18}, std::pair{8, 10}})
    for (auto [f, b, w] : {std::tuple{1.0, 2.0, 1.0}, std::tuple{1.0, 3.0, 1.0}, std::tuple{2.0, 3.0, 1.0}, std::tuple{1.0, 2.5, 0.5}}) {
      PipelineSchedule s = schedule_for(ScheduleKind::zb_h1, {.ranks = p, .microbatches = m});
      CHECK(check_schedule(s).empty());
      ScheduleRun r = run_schedule(s, costs(f, b, w, 0));
      INFO("p=" << p << " m=" << m << " F=" << f << " B=" << b << " W=" << w);
      for (const RankTiming& t : r.ranks) CHECK(t.bubble == doctest::Approx((p - 1) * (f + b - 2 * w)));
      CHECK(r.longest_span_bubble() == doctest::Approx((p - 1) * (f + b - 2 * w)));
      auto peaks = peak_activations(s);
      for (int i = 0; i < p; ++i) CHECK(peaks[static_cast<std::size_t>(i)] == p - i);
    }
}

TEST_CASE("ZB-H2: the longest stage's bubble is (p−1)(T_F+T_B−2T_W), zero when they are equal; peak 2p−1") {
  // Qi et al. quote bubbles over each stage's own span (their §5.3 "cost = the longest stage's time").
  for (auto [p, m] : {std::pair{4, 12}, std::pair{6, 18}, std::pair{8, 24}})
    for (auto [tf, tb, tw] : {std::tuple{1.0, 1.0, 1.0}, std::tuple{1.0, 2.0, 1.0}, std::tuple{2.0, 2.0, 1.0}, std::tuple{1.5, 2.0, 0.5}}) {
      PipelineSchedule s = schedule_for(ScheduleKind::zb_h2, {.ranks = p, .microbatches = m});
      CHECK(check_schedule(s).empty());
      ScheduleRun r = run_schedule(s, costs(tf, tb + tw, tw, 0));
      INFO("p=" << p << " m=" << m << " T_F=" << tf << " T_B=" << tb << " T_W=" << tw);
      CHECK(r.longest_span_bubble() == doctest::Approx((p - 1) * (tf + tb - 2 * tw)).epsilon(1e-9));
      CHECK(peak_activations(s).front() == 2 * p - 1);
    }
}

TEST_CASE("ZB-V: zero bubble when T_F = T_B = T_W, p·M_B memory, and the published warm-up") {
  for (auto [p, m] : {std::pair{4, 12}, std::pair{6, 18}, std::pair{8, 16}}) {
    PipelineSchedule s = schedule_for(ScheduleKind::zb_v, {.ranks = p, .microbatches = m});
    CHECK(check_schedule(s).empty());
    ScheduleRun r = run_schedule(s, costs(1, 2, 1, 0));
    CHECK(r.longest_span_bubble() == doctest::Approx(0.0));
    for (std::int64_t peak : peak_activations(s)) CHECK(peak == 2 * p);  // 2p half-size chunks = p·M_B
    // Worker i (1-indexed) warms up with 2p−1 forwards: 2p−i of its first chunk, i−1 of its second.
    for (int i = 1; i <= p; ++i) {
      int first = 0, second = 0;
      for (int k = 0; k < 2 * p - 1; ++k) {
        const PipeOp& o = s.ops[static_cast<std::size_t>(i - 1)][static_cast<std::size_t>(k)];
        REQUIRE(o.kind == OpKind::forward);
        (o.work.stage < p ? first : second)++;
      }
      CHECK(first == 2 * p - i);
      CHECK(second == i - 1);
    }
  }
}

TEST_CASE("the automatic zero-bubble scheduler honours memory limits and communication time") {
  ZeroBubbleSettings z;
  z.times = {1, 1, 1, 0.25};
  z.memory_limit = {3, 3, 3, 3};
  PipelineSchedule s = automatic_zero_bubble(ScheduleKind::zb_h1, 4, 12, z);
  CHECK(check_schedule(s).empty());
  for (std::int64_t peak : peak_activations(s)) CHECK(peak <= 3);
  // With T_comm it still beats 1F1B with the same memory and communication.
  OpCosts c = costs(1, 2, 1, 0);
  c.p2p = 0.25;
  CHECK(run_schedule(s, c).makespan < run_schedule(schedule_for(ScheduleKind::one_f_one_b, {.ranks = 4, .microbatches = 12}), c).makespan);
  z.memory_limit = {2, 2};
  CHECK_THROWS_WITH_AS(automatic_zero_bubble(ScheduleKind::zb_h1, 4, 12, z), "2 memory limits given for 4 ranks", ScheduleError);
}

TEST_CASE("the memory planner's in-flight counts equal the generated schedules' peaks, for every schedule") {
  for (const auto& [name, kind] : schedule_names())
    for (auto [p, m] : {std::pair{4, 16}, std::pair{8, 32}, std::pair{6, 24}}) {
      std::int64_t vp = kind == ScheduleKind::interleaved ? 2 : 1;
      auto peaks = peak_activations(schedule_for(kind, {.ranks = p, .microbatches = m, .vp = vp}));
      for (std::int64_t r = 0; r < p; ++r) {
        auto per_stage = inflight_per_stage(kind, r, {.ranks = p, .microbatches = m, .vp = vp});
        double planned = std::accumulate(per_stage.begin(), per_stage.end(), 0.0);
        INFO(name << " p=" << p << " m=" << m << " rank " << r);
        CHECK(planned == static_cast<double>(peaks[static_cast<std::size_t>(r)]));
      }
    }
}

TEST_CASE("per-stage costs: GPipe is a flow shop, Σ(F_s+B_s) + (m−1)(max F + max B)") {
  PipelineSchedule s = schedule_for(ScheduleKind::gpipe, {.ranks = 4, .microbatches = 6});
  OpCosts c;
  c.per_stage = {{1, 2, 0, 0}, {1.5, 2, 0, 0}, {1, 3.5, 0, 0}, {0.5, 1, 0, 0}};
  double sum = (1 + 2) + (1.5 + 2) + (1 + 3.5) + (0.5 + 1);
  CHECK(run_schedule(s, c).makespan == doctest::Approx(sum + 5 * (1.5 + 3.5)));
  c.per_stage.pop_back();
  CHECK_THROWS_WITH_AS(run_schedule(s, c), "costs given for 3 stages, but the schedule has 4", ScheduleError);
}
