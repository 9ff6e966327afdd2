// Pipeline schedules against the published closed forms, executed on the engine.
#include <doctest/doctest.h>

#include <algorithm>

#include "models/pipeline_run.hpp"

using namespace plumb;

namespace {

double max_bubble(const ScheduleRun& r) {
  double m = 0;
  for (const RankTiming& t : r.ranks) m = std::max(m, t.bubble);
  return m;
}

OpCosts costs(double f, double b, double w, double fb) {
  OpCosts c;
  c.f = f;
  c.b = b;
  c.w = w;
  c.fb = fb;
  return c;
}

}  // namespace

TEST_CASE("GPipe and 1F1B: every rank's bubble is (PP−1)(F+B), for unequal F and B") {
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b})
    for (auto [p, m] : {std::pair{4, 8}, std::pair{8, 20}, std::pair{6, 7}, std::pair{5, 3}}) {
      PipelineSchedule s = make_schedule(kind, p, m);
      CHECK(check_schedule(s).empty());
      ScheduleRun r = run_schedule(s, costs(1.25, 2.5, 0, 0));
      INFO(schedule_name(kind) << " p=" << p << " m=" << m);
      for (const RankTiming& t : r.ranks) CHECK(t.bubble == doctest::Approx((p - 1) * (1.25 + 2.5)));
      CHECK(r.makespan == doctest::Approx((m + p - 1) * (1.25 + 2.5)));
    }
}

TEST_CASE("interleaved 1F1B: bubble (PP−1)(F+B)/v, with F and B the cost of a whole rank's layers") {
  for (auto [p, m, v] : {std::tuple{4, 8, 2}, std::tuple{4, 12, 3}, std::tuple{8, 16, 2}, std::tuple{2, 6, 4}}) {
    PipelineSchedule s = make_schedule(ScheduleKind::interleaved, p, m, v);
    CHECK(check_schedule(s).empty());
    const double F = 3.0, B = 5.0;  // per rank; each of its v chunks costs 1/v of that
    ScheduleRun r = run_schedule(s, costs(F / v, B / v, 0, 0));
    INFO("p=" << p << " m=" << m << " v=" << v);
    CHECK(max_bubble(r) == doctest::Approx((p - 1) * (F + B) / v));
  }
}

TEST_CASE("DualPipe and DualPipeV: bubble (PP/2−1)(F&B+B−3W) when the input gradient costs as much as F") {
  // The published closed form takes the input-gradient half of B to cost as much as F (Qi et al.'s
  // T_B = T_F); F&B and W are free. With PP = ranks for DualPipe and 2·ranks stages for DualPipeV.
  struct Costs { double f, b, w, fb; };
  for (ScheduleKind kind : {ScheduleKind::dualpipe, ScheduleKind::dualpipe_v})
    for (auto [n, m] : {std::pair{4, 14}, std::pair{6, 20}, std::pair{8, 20}})
      for (Costs c : {Costs{1, 1.5, 0.5, 2.2}, Costs{2, 3, 1, 4.1}, Costs{1, 2, 1, 2.4}, Costs{1.5, 2.5, 1, 3.5}}) {
        PipelineSchedule s = make_schedule(kind, n, m);
        CHECK(check_schedule(s).empty());
        ScheduleRun r = run_schedule(s, costs(c.f, c.b, c.w, c.fb));
        double pp = kind == ScheduleKind::dualpipe ? n : 2.0 * n;
        INFO(schedule_name(kind) << " n=" << n << " m=" << m << " F=" << c.f << " B=" << c.b << " W=" << c.w << " F&B=" << c.fb);
        CHECK(max_bubble(r) == doctest::Approx((pp / 2 - 1) * (c.fb + c.b - 3 * c.w)));
      }
}

TEST_CASE("DualPipe: the closed form bounds the bubble when the input gradient costs more than F") {
  PipelineSchedule s = make_schedule(ScheduleKind::dualpipe, 8, 20);
  ScheduleRun r = run_schedule(s, costs(1, 2.5, 1, 3));
  CHECK(max_bubble(r) < (8 / 2 - 1) * (3 + 2.5 - 3 * 1));
}

TEST_CASE("peak activations: p on 1F1B's first rank, PP+1 on every DualPipe rank, 2·ranks+1 chunks for DualPipeV") {
  auto peaks = peak_activations(make_schedule(ScheduleKind::one_f_one_b, 8, 32));
  CHECK(peaks.front() == 8);
  CHECK(peaks.back() == 1);
  for (std::int64_t p : peak_activations(make_schedule(ScheduleKind::dualpipe, 8, 20))) CHECK(p == 9);
  for (std::int64_t p : peak_activations(make_schedule(ScheduleKind::dualpipe_v, 4, 10))) CHECK(p == 9);
  for (std::int64_t p : peak_activations(make_schedule(ScheduleKind::gpipe, 4, 10))) CHECK(p == 10);
}

TEST_CASE("DualPipe N=8, M=20 and DualPipeV N=4, M=10 run the reference implementation's step counts") {
  // shared/reference/published.md: warm-up F0 / (F0,F1) / (B1,W1,F1) / main / (B1,F1&B0) / (B1,B0) / (W,B0) / W.
  const std::vector<std::array<std::int64_t, 8>> rows{
      {6, 1, 3, 3, 3, 1, 3, 1}, {4, 2, 2, 4, 2, 2, 2, 2}, {2, 3, 1, 5, 1, 3, 1, 3}, {0, 4, 0, 6, 0, 4, 0, 4}};
  PipelineSchedule dp = make_schedule(ScheduleKind::dualpipe, 8, 20);
  for (int r = 0; r < 8; ++r) CHECK(dp.steps[static_cast<std::size_t>(r)] == rows[static_cast<std::size_t>(std::min(r, 7 - r))]);
  PipelineSchedule dv = make_schedule(ScheduleKind::dualpipe_v, 4, 10);
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
  CHECK_THROWS_WITH_AS(make_schedule(ScheduleKind::dualpipe, 7, 20), "dualpipe needs an even number of pipeline ranks, got pp 7",
                       ScheduleError);
  CHECK_THROWS_WITH_AS(make_schedule(ScheduleKind::dualpipe, 8, 14), "dualpipe needs an even number of micro-batches ≥ 2·pp = 16, got 14",
                       ScheduleError);
  CHECK_THROWS_WITH_AS(make_schedule(ScheduleKind::interleaved, 4, 6, 2),
                       "the interleaved schedule needs the 6 micro-batches to be a multiple of pp 4 (Megatron's micro-batch group rule)",
                       ScheduleError);
}

TEST_CASE("the checker finds wrong counts, wrong ranks and orders that deadlock") {
  PipelineSchedule s = make_schedule(ScheduleKind::one_f_one_b, 4, 8);
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
  CHECK(run_schedule(make_schedule(ScheduleKind::gpipe, 4, 8), c).makespan == doctest::Approx((8 + 3) * 3.0 + 2 * 3 * 0.5));
  // 1F1B also slows in its steady state (a micro-batch's F→B round trip through the pipe grows), so
  // it pays more than the 2(p−1)c of the hand-offs alone.
  CHECK(run_schedule(make_schedule(ScheduleKind::one_f_one_b, 4, 8), c).makespan > (8 + 3) * 3.0 + 2 * 3 * 0.5);
}
