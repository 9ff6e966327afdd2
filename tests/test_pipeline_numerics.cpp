// Every pipeline schedule computes what a serial run computes: the same loss and the same weight
// gradients for a small float64 model, run through the schedule's ops in the executor's order.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "models/schedules/registry.hpp"
#include "validate/run/pipeline_numerics.hpp"

using namespace plumb;

TEST_CASE("every schedule reproduces the serial loss and gradients") {
  struct Case {
    std::int64_t pp, m;
  };
  for (const auto& [name, kind] : schedule_names())
    for (Case c : {Case{2, 4}, Case{4, 8}, Case{4, 12}, Case{8, 16}, Case{8, 24}})
      for (std::int64_t vp : {std::int64_t{1}, std::int64_t{2}, std::int64_t{3}}) {
        if (vp > 1 && kind != ScheduleKind::interleaved) continue;
        PipelineSchedule s;
        try {
          s = schedule_for(kind, {.ranks = c.pp, .microbatches = c.m, .vp = vp});
        } catch (const ScheduleError&) {
          continue;  // a combination the schedule does not take (checked in test_schedules)
        }
        INFO(fmt::format("{} pp {} m {} vp {}", name, c.pp, c.m, vp));
        NumericCheck check = check_schedule_numerics(s, static_cast<std::uint64_t>(c.pp * 100 + c.m));
        CHECK(check.ops > 0);
        CHECK(check.loss_serial > 0);
        CHECK(check.matches());
        CHECK(check.max_gradient_difference < 1e-12);
      }
}

TEST_CASE("a schedule that runs a backward before its forward, or drops an op, is caught") {
  PipelineSchedule s = schedule_for(ScheduleKind::one_f_one_b, {.ranks = 4, .microbatches = 8});
  PipelineSchedule swapped = s;
  auto& last = swapped.ops.back();  // the last rank alternates F and B from its first op on
  std::swap(last[0], last[1]);
  CHECK_THROWS_WITH_AS(check_schedule_numerics(swapped), doctest::Contains("ran before its own forward"), ScheduleDataflowError);
  PipelineSchedule dropped = s;
  dropped.ops[1].pop_back();  // rank 1's last backward
  CHECK_THROWS_AS(check_schedule_numerics(dropped), std::logic_error);
  PipelineSchedule doubled = schedule_for(ScheduleKind::zb_h1, {.ranks = 4, .microbatches = 8});
  for (auto& ops : doubled.ops)
    for (PipeOp& op : ops)
      if (op.kind == OpKind::backward_input) op.kind = OpKind::backward;  // W would run twice
  CHECK_THROWS_WITH_AS(check_schedule_numerics(doubled), doctest::Contains("ran twice"), ScheduleDataflowError);
}
