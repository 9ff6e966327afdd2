// plumb validate --baseline: an earlier --csv read back, and what moved against it.
#include <doctest/doctest.h>

#include "models/input/diagnostics.hpp"
#include "validate/published/baseline.hpp"

using namespace plumb;

namespace {
CaseResult case_of(std::string id, std::string group, std::vector<MetricResult> metrics) {
  return CaseResult{std::move(id), std::move(group), "", std::move(metrics), std::nullopt, true, ""};
}
}  // namespace

TEST_CASE("a --csv file reads back as the cases it was written from") {
  const std::string text =
      "case,group,metric,measured,predicted,error\r\n"
      "a,g,step_time,2,2.2,0.100000\n"
      "a,g,peak_memory,100,90,-0.100000\n"
      "b,h,tokens_per_s_per_gpu,1000,1500,0.5\n";
  const std::vector<CaseResult> cases = read_suite_csv(text, "old.csv");
  REQUIRE(cases.size() == 2);
  CHECK(cases[0].id == "a");
  CHECK(cases[0].group == "g");
  REQUIRE(cases[0].metrics.size() == 2);
  CHECK(cases[0].metrics[0].error() == doctest::Approx(0.1));  // from measured and predicted, not the rounded column
  CHECK(cases[0].metrics[1].metric == Metric::peak_memory);
  CHECK(cases[1].metrics[0].error() == doctest::Approx(0.5));
  // Bad files name the file and the line.
  CHECK_THROWS_WITH_AS(read_suite_csv("case,metric\n", "x.csv"), doctest::Contains("x.csv: line 1: not a plumb validate --csv file"), InputError);
  CHECK_THROWS_WITH_AS(read_suite_csv("", "x.csv"), doctest::Contains("x.csv: line 1: the file is empty"), InputError);
  const std::string head = "case,group,metric,measured,predicted,error\n";
  CHECK_THROWS_WITH_AS(read_suite_csv(head + "a,g,speed,1,2,1\n", "x.csv"), doctest::Contains("line 2: unknown metric \"speed\""), InputError);
  CHECK_THROWS_WITH_AS(read_suite_csv(head + "a,g,step_time,0,2,1\n", "x.csv"), doctest::Contains("line 2: measured and predicted"), InputError);
  CHECK_THROWS_WITH_AS(read_suite_csv(head + "a,g,step_time,1,2x,1\n", "x.csv"), doctest::Contains("line 2"), InputError);
  CHECK_THROWS_WITH_AS(read_suite_csv(head + "a,g,step_time,1,2,1\na,g,step_time,1,3,2\n", "x.csv"),
                       doctest::Contains("line 3: case a has a second step_time row"), InputError);
}

TEST_CASE("against a baseline: the metrics that moved, largest first, and each group's errors before and after") {
  // Before: a's time +10%, memory -10%; b's time +50%. After: a's time +10% (unchanged), its memory -4%;
  // b's time +20%; c new at -30%.
  const std::vector<CaseResult> before = {case_of("a", "g", {{Metric::step_time, 2, 2.2}, {Metric::peak_memory, 100, 90}}),
                                          case_of("b", "h", {{Metric::tokens_per_s_per_gpu, 1000, 1500}})};
  SuiteResult now;
  now.cases = {case_of("a", "g", {{Metric::step_time, 2, 2.2}, {Metric::peak_memory, 100, 96}}),
               case_of("b", "h", {{Metric::tokens_per_s_per_gpu, 1000, 1200}}), case_of("c", "h", {{Metric::step_time, 1, 0.7}})};
  now.summaries = summarize_suite(now.cases);
  const BaselineComparison c = compare_to_baseline(now, before);
  REQUIRE(c.moved.size() == 3);
  CHECK(c.moved[0].case_id == "c");  // only in one run: first
  CHECK_FALSE(c.moved[0].before);
  CHECK(c.moved[1].case_id == "b");  // moved 30 points
  CHECK(*c.moved[1].before == doctest::Approx(0.5));
  CHECK(*c.moved[1].after == doctest::Approx(0.2));
  CHECK(c.moved[2].metric == Metric::peak_memory);  // moved 6 points; a's unchanged time is not listed
  auto summary = [&](const std::string& group, bool memory) {
    for (const SummaryChange& s : c.summaries)
      if (s.group == group && s.memory == memory) return s;
    FAIL("no summary");
    return SummaryChange{};
  };
  // Group h's time: before one metric at 50%, after two (20% and 30%): MAPE 50% → 25%, count 1 → 2.
  const SummaryChange h = summary("h", false);
  CHECK(h.before->count == 1);
  CHECK(h.after->count == 2);
  CHECK(h.before->mape == doctest::Approx(0.5));
  CHECK(h.after->mape == doctest::Approx(0.25));
  CHECK(h.after->max == doctest::Approx(0.3));
  // Over all time metrics: (10 + 50) / 2 = 30% before, (10 + 20 + 30) / 3 = 20% after.
  const SummaryChange all = summary("all", false);
  CHECK(all.before->mape == doctest::Approx(0.3));
  CHECK(all.after->mape == doctest::Approx(0.2));
  CHECK(summary("g", true).after->mape == doctest::Approx(0.04));
}
