#include <cctype>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <iostream>

#include "cli/commands.hpp"
#include "models/input/diagnostics.hpp"
#include "cli/report/compare_report.hpp"
#include "cli/report/suite_report.hpp"
#include "cli/report/trace_report.hpp"
#include "validate/logs/training_log.hpp"

namespace plumb::cli {
namespace {

// plumb compare SCENARIO --trace FILE: the stage's forward and backward against a profiler trace of them.
int run_compare_trace(const Args& args) {
  if (args.positionals().size() != 1) throw UsageError("with --trace, give the scenario alone: plumb compare SCENARIO --trace FILE");
  Job job = load_scenario(args.positional(0), args.values("--set"));
  KernelClassifier classes = KernelClassifier::bundled();
  const GpuTrace gpu_trace = read_gpu_trace(args.value("--trace"));
  const TraceSummary trace = summarize_trace(gpu_trace, classes);
  const std::int64_t stage = args.integer("--stage", 0, 0, 100'000);
  const TraceComparison c = compare_trace(job, trace, stage);
  if (args.flag("--timeline")) write_file(args.value("--timeline"), side_by_side_timeline(job, gpu_trace, classes, stage).dump() + "\n");
  if (args.flag("--json")) std::cout << trace_comparison_json(c).dump(2) << "\n";
  else std::cout << trace_comparison_text(c);
  return kOk;
}

// Whether a file is JSON (a measured run) rather than text (a training log): its first non-blank byte.
bool looks_like_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c) && std::isspace(static_cast<unsigned char>(c))) {
  }
  return !in || c == '{';
}

// plumb compare SCENARIO train.log: the log's steady state as measurements beside the scenario's step.
int run_compare_log(const Args& args) {
  if (args.positionals().size() != 2) throw UsageError("a training log names no scenario: plumb compare SCENARIO train.log");
  PublishedCase c;
  c.job = load_scenario(args.positional(0), args.values("--set"));
  const TrainingLog log = read_training_log(args.positional(1));
  c.id = std::filesystem::path(log.file).filename().string();
  c.group = log.format + " log";
  c.source = fmt::format("{}: {} iterations logged, the median after the first", log.file, log.iterations);
  c.measured = log_measurements(log, c.memory_kind);
  const SuiteResult result = run_suite({c});
  if (args.flag("--json")) std::cout << suite_json(result).dump(2) << "\n";
  else std::cout << suite_text(result, 1);
  return result.cases.front().failure.empty() ? kOk : kInternal;
}

int run_compare(const Args& args) {
  if (args.flag("--trace")) return run_compare_trace(args);
  const std::string& measured_file = args.positional(args.positionals().size() - 1);
  if (!looks_like_json(measured_file)) return run_compare_log(args);
  if (args.flag("--stage") || args.flag("--set")) throw UsageError("--stage and --set go with --trace or a training log");
  // plumb compare [SCENARIO] MEASURED.json: the scenario, when given, replaces the one the file names
  // (a run measured on another machine names its path there).
  const bool scenario_given = args.positionals().size() == 2;
  MeasuredFile measured = read_measured_run(args.positional(scenario_given ? 1 : 0));
  std::optional<GpuSpec> gpu;
  if (args.flag("--profile")) {
    Diagnostics d;
    SourceFile src{"--profile", std::filesystem::current_path(), &d, {}};
    gpu = read_gpu(Json(args.value("--profile")), "", src);
    d.throw_if_any();
  }
  Comparison c = compare_measured_run(measured, gpu, scenario_given ? args.positional(0) : std::string());
  if (args.flag("--json")) std::cout << comparison_json(c).dump(2) << "\n";
  else std::cout << comparison_text(c);
  return kOk;
}

}  // namespace

const Command& compare_command() {
  static const Command command{
      {"compare",
       "plumb compare [SCENARIO] MEASURED.json [--profile P] [--json] | plumb compare SCENARIO train.log [--set ...] [--json] | "
       "plumb compare SCENARIO --trace TRACE [--stage K] [--timeline F] [--set ...] [--json]",
       "Predicts the single-GPU run that plumb-validate run measured (the file names its scenario, overrides,\n"
       "virtual stages and device) — the same shrunk job, simulated with the profile of the GPU it ran on, or\n"
       "with --profile (a calibrated profile from plumb calibrate) — and prints predicted against measured:\n"
       "step time, each rank's busy time and bubble, and each op's time per pass, with the error. The step's miss\n"
       "is split in two: how far the ops ran from the profile's prices, and the step plumb predicts at the ops'\n"
       "measured times (what the schedule, its waits and its communication make of them).\n"
       "SCENARIO, when given, is used instead of the path the file names (a run measured elsewhere); a\n"
       "relative path in the file is looked for from here, then under plumb's data folder. A run whose\n"
       "ranks or ops are not the scenario's is refused.\n"
       "With --trace, sets one pipeline stage of the scenario (--stage, default 0) beside a PyTorch profiler trace of\n"
       "its forward and backward (plain or gzip; DualPipe's F&B pair, for one): GPU time per op class plumb prices\n"
       "(GEMM, attention, memory-bound, communication; the trace's kernels sorted as plumb trace does) and the span,\n"
       "predicted against measured, worst first; then per stream role the busy and idle time and the communication\n"
       "under compute and exposed, against the simulated step's streams for the same ops.\n"
       "With a training log instead of MEASURED.json (Megatron-LM's iteration and memory lines, torchtitan's metric\n"
       "lines), its steady state — the median over the iterations after the first: step time, TFLOP/s or tokens/s\n"
       "per GPU, MFU, peak memory — is set beside the scenario's simulated step as plumb validate sets a case.",
       {"[SCENARIO]", "MEASURED.json"},
       {{"--profile", "P", "the GPU profile to predict with: a catalogue name or a calibrated profile's path"},
        {"--json", "", "print measured_step_s, predicted_step_s, error, op_time_ratio, error_at_measured_ops, ranks[], kinds[], ops[] as JSON (with --trace: classes[], streams[], span)"},
        {"--trace", "FILE", "a PyTorch profiler trace of one stage's forward and backward to set beside the scenario"},
        {"--stage", "K", "with --trace: the model stage the trace ran (0)"},
        {"--timeline", "FILE", "with --trace: write the measured kernels and plumb's run of the stage side by side as a Chrome trace (Perfetto)"},
        {"--set", "KEY=VALUE", "with --trace or a training log: override a scenario field (repeatable)", true}}},
      run_compare};
  return command;
}

}  // namespace plumb::cli
