#include <fmt/format.h>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/report/schedule_report.hpp"
#include "cli/report/step_report.hpp"
#include "sim/outputs.hpp"

namespace plumb::cli {
namespace {

int run_run(const Args& args) {
  Job job = load_scenario(args.positional(0), args.values("--set"));
  for (const char* kind : {"slow-gpu", "slow-link", "fail-node"})
    for (const std::string& value : args.values(fmt::format("--{}", kind))) {
      if (!args.flag("--full")) throw UsageError(fmt::format("--{} acts on single GPUs, which only the full-rank step simulates: add --full", kind));
      try {
        job.perturbations.push_back(perturbation_from_flag(kind, value, job.layout.gpus(), job.cluster.fabric.gpus_per_node));
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
    }
  StepCosts costs = step_costs(job);
  if (!args.flag("--full") && !job.perturbations.empty())
    std::cerr << fmt::format("plumb: note: {}: the scenario's {} perturbation(s) act on single GPUs, which only the full-rank step "
                             "simulates: add --full (this step ignores them)\n",
                             job.file, job.perturbations.size());
  if (args.flag("--every-gpu") && !args.flag("--full")) throw UsageError("--every-gpu goes with --full");
  StepSimulation sim = simulate_step(job, costs, args.flag("--every-gpu") ? StepMode::every_gpu : args.flag("--full") ? StepMode::full : StepMode::symmetric);
  StepReport report = make_step_report(job, sim, costs);
  if (job.training.optimizer_kind == OptimizerKind::muon) compare_with_adamw(job, report.optimizer, true);
  if (sim.full && !job.perturbations.empty()) {  // what the perturbations cost: the same job without them
    Job plain = job;
    plain.perturbations.clear();
    report.full_rank.unperturbed_step_time = simulate_step(plain, costs, StepMode::full).step_time;
  }
  if (args.flag("--trace")) write_file(args.value("--trace"), sim::chrome_trace(sim.graph, sim.machine, sim.result));
  if (args.flag("--svg")) {
    const PipelineSchedule& s = sim.schedule;
    write_file(args.value("--svg"),
               schedule_svg(s, placed_step_ops(sim), sim.step_time,
                            fmt::format("{} · {} · {} micro-batches · step {:.3f} s (ops with their communication)", job.name,
                                        schedule_name(s.kind), s.microbatches, sim.step_time)));
  }
  if (args.flag("--json")) std::cout << step_report_json(job, report).dump(2) << "\n";
  else std::cout << step_report_table(job, report);
  return report.fits ? kOk : kInfeasible;
}

}  // namespace

const Command& run_command() {
  static const Command command{
      {"run",
       "plumb run SCENARIO [--json] [--trace t.json] [--svg t.svg] [--full [--every-gpu] [--slow-gpu R=F] [--slow-link N=F] [--fail-node N@T]] [--set key=value ...]",
       "Simulates one optimizer step on the discrete-event engine: the pipeline schedule with every op's\n"
       "compute and communication (TP, EP, CP, PP, DP), gradient reduction, ZeRO gathers and the\n"
       "optimizer. Prints step time, tokens/s, MFU, bubbles, exposed communication, memory per stage,\n"
       "each rank's step split by the ops it ran (F, B, b, W, F&B, waiting), and the days, GPU-hours\n"
       "and cost to train the scenario's tokens. Exit code 3 when it does not fit.",
       {"SCENARIO"},
       {{"--json", "", "print the report as JSON"},
        {"--trace", "FILE", "write the step's timeline as a Chrome trace (open in Perfetto)"},
        {"--svg", "FILE", "draw the pipeline schedule as it ran, op by op per rank, as an SVG"},
        {"--full", "", "simulate every GPU, each collective a barrier over its group, with the scenario's perturbations; GPUs that run alike are simulated once (default: one GPU per pipeline rank)"},
        {"--every-gpu", "", "with --full: build every GPU's tasks even where GPUs run alike (slower; checks the classes)"},
        {"--slow-gpu", "GPU=FACTOR", "with --full: GPU (global rank) computes at FACTOR of its profile's speed, e.g. 17=0.8 (repeatable; adds to the scenario's perturbations)", true},
        {"--slow-link", "NODE=FACTOR", "with --full: NODE's network links run at FACTOR of the fabric's bandwidth, e.g. 2=0.5 (repeatable)", true},
        {"--fail-node", "NODE@TIME", "with --full: NODE stops TIME into the step, e.g. 5@2s; plumb shows where the step stalls (repeatable)", true},
        {"--set", "KEY=VALUE", "override a scenario field, e.g. --set parallel.micro_batch=2 (repeatable)", true}}},
      run_run};
  return command;
}

}  // namespace plumb::cli
