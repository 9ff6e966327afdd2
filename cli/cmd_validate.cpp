#include <fmt/format.h>
#include <iostream>
#include <optional>
#include <set>
#include <string>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "cli/report/suite_report.hpp"
#include "models/input/diagnostics.hpp"

namespace plumb::cli {
namespace {

int run_validate(const Args& args) {
  std::vector<std::string> paths = args.positionals();
  if (paths.empty()) paths.push_back(published_dir().string());
  std::vector<PublishedCase> cases;
  std::vector<Diagnostic> problems;
  std::set<std::string> reported;
  for (const std::filesystem::path& f : case_files(paths)) {
    try {
      cases.push_back(read_case(f, args.values("--set")));
    } catch (const InputError& e) {
      // A shared file's problem (a framework or hardware profile every case reads) is reported once.
      for (const Diagnostic& d : e.diagnostics())
        if (reported.insert(d.to_string()).second) problems.push_back(d);
    }
  }
  if (!problems.empty()) throw InputError(problems);  // every bad case file reported together
  // A baseline is read before the run, so a bad file is reported at once.
  std::optional<std::vector<CaseResult>> baseline;
  const std::string baseline_file = args.flag("--baseline") ? args.value("--baseline") : "";
  if (!baseline_file.empty()) baseline = read_suite_csv(read_text(baseline_file), baseline_file);
  SuiteResult result = run_suite(cases, progress_bar("plumb validate", "cases"));
  if (args.flag("--csv")) write_file(args.value("--csv"), suite_csv(result));
  std::optional<BaselineComparison> comparison;
  if (baseline) comparison = compare_to_baseline(result, *baseline);
  if (args.flag("--json")) {
    Json doc = suite_json(result);
    if (comparison) doc["baseline"] = baseline_json(*comparison, baseline_file);
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << suite_text(result, static_cast<std::size_t>(args.integer("--worst", 5, 0, 1000)));
    if (comparison) std::cout << baseline_text(*comparison, baseline_file);
  }
  for (const CaseResult& c : result.cases)
    if (!c.failure.empty()) return kInternal;
  return kOk;
}

}  // namespace

const Command& validate_command() {
  static const Command command{
      {"validate",
       "plumb validate [CASES...] [--set KEY=VALUE ...] [--json] [--csv FILE] [--baseline FILE] [--worst N]",
       "Runs the published suite: each case is a scenario of a training job a paper or a repository measured\n"
       "(scenarios/published/, one file per measurement, with its source and the assumptions made), simulated\n"
       "as plumb run does. Prints predicted against measured for every metric the source gives (step time,\n"
       "tokens/s per GPU, TFLOP/s per GPU, MFU, peak memory as PyTorch's allocator reports it) with the error,\n"
       "worst case first; then the mean absolute percentage error (MAPE), median and largest error per\n"
       "publication and over all cases, time and memory apart; then where the step went in the worst cases\n"
       "(compute by op class, exposed communication by kind, bubble). CASES are case files, folders of them, or\n"
       "names of bundled cases (default: the whole bundled suite). --set overrides a field in every case, as plumb\n"
       "run's does: `--set cluster.gpu=/abs/b200-mine.json` prices the cases with a calibrated profile (a relative\n"
       "path resolves against each case's folder). --baseline compares the run with an earlier --csv file: the\n"
       "case metrics whose error moved, largest move first, and each publication's MAPE and largest error before\n"
       "and after. Exit code 70 when a case cannot be simulated.",
       {"[CASES...]"},
       {{"--set", "KEY=VALUE", "override a scenario field in every case (repeatable)", true},
        {"--json", "", "print cases[] (metrics with measured, predicted, error; breakdown) and summaries[] as JSON"},
        {"--csv", "FILE", "write one row per case and metric: case,group,metric,measured,predicted,error"},
        {"--baseline", "FILE", "an earlier --csv file: print what moved against it (with --json: a \"baseline\" object)"},
        {"--worst", "N", "how many of the worst cases get their step's breakdown (5)"}}},
      run_validate};
  return command;
}

}  // namespace plumb::cli
